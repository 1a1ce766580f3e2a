"""graphmill.bench's drop-in comparison where PyG cannot sample (no pyg-lib
or torch-sparse, as on a GPU machine with only torch_geometric): our
loader is still timed, and the report says why PyG's is not."""

import pytest

pytest.importorskip("torch_geometric")


def test_dropin_without_pyg_sampler(gm, cora_dir, monkeypatch):
    import torch_geometric.loader

    import graphmill.bench as gb

    class NoSampler:
        def __init__(self, *a, **k):
            raise ImportError("'NeighborSampler' requires either 'pyg-lib' or 'torch-sparse'")

    monkeypatch.setattr(torch_geometric.loader, "NeighborLoader", NoSampler)
    out = gb.run_dropin(cora_dir, [5, 5], 32, 4, rounds=2, epoch_batches=2, hidden=16)
    assert "pyg-lib" in out["pyg"]["skipped"]
    assert len(out["rounds"]) == 2 and out["graphmill_batches_per_s"] > 0 and out["graphmill_step_s"] > 0
    assert "vs_pyg_loader" not in out
    dev = gb.run_dropin_device(cora_dir, [5, 5], 32, 4, "cpu", caches=["20%"], rounds=1, epoch_batches=2, hidden=16)
    assert "pyg-lib" in dev["pyg"]["skipped"]
    assert [r["feature_cache"] for r in dev["loaders"]] == ["none", "20%"]
    assert 0 < dev["loaders"][1]["hit_rate"] < 1 and dev["compute_step_s"] > 0

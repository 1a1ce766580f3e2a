"""GNNAutoScale for PyTorch models: graphmill.gas.Loader's batches of parts
and graphmill.torch.History / push_and_pull."""

import numpy as np
import pytest

import graphmill

torch = pytest.importorskip("torch")
import graphmill.gas  # noqa: E402
from graphmill.torch import History, push_and_pull  # noqa: E402


def test_batches_of_parts(gm, cora_dir):
    ds = graphmill.open_dataset(cora_dir)
    ei = ds.edge_index()
    ld = graphmill.gas.Loader(cora_dir, num_parts=12, batch_size=5, shuffle=True, seed=3)
    assert len(ld) == 3 and np.bincount(ld.parts, minlength=12).min() > 0
    # graphmill's partitioner: far fewer cut edges than a random split
    cut = np.mean(ld.parts[ei[0]] != ld.parts[ei[1]])
    assert cut < 0.3, cut
    seen = []
    for b in ld:
        n_id = b.n_id.numpy()
        inner, halo = n_id[:b.batch_size], n_id[b.batch_size:]
        assert set(np.flatnonzero(np.isin(ld.parts, b.parts))) == set(inner.tolist())
        e = b.edge_index.numpy()
        # every in-edge of the batch's nodes, and nothing else
        want = sorted(zip(ei[0][np.isin(ei[1], inner)].tolist(), ei[1][np.isin(ei[1], inner)].tolist()))
        assert sorted(zip(n_id[e[0]].tolist(), n_id[e[1]].tolist())) == want
        # the halo: exactly the in-neighbours outside the batch
        assert set(halo.tolist()) == set(n_id[e[0]].tolist()) - set(inner.tolist())
        assert torch.equal(b.x, torch.from_numpy(np.asarray(ds.features)[n_id]))
        assert torch.equal(b.y, torch.from_numpy(np.asarray(ds.labels)[n_id]))
        seen.extend(inner.tolist())
    assert sorted(seen) == list(range(ds.num_nodes))
    first = [b.parts for b in ld]
    assert first != [b.parts for b in ld], "shuffle draws a new order each epoch"


def test_history_push_and_pull():
    h = History(10, 3)
    x = torch.arange(12, dtype=torch.float32).reshape(4, 3).requires_grad_()
    n_id = torch.tensor([7, 2, 5, 9])
    h.push(torch.full((2, 3), -1.0), torch.tensor([5, 9]))
    out = push_and_pull(h, x, 2, n_id)
    # the batch's rows are x's (with their gradient), the halo's the history's
    assert torch.equal(out[:2], x[:2]) and torch.equal(out[2:], torch.full((2, 3), -1.0))
    assert torch.equal(h.pull(torch.tensor([7, 2])), x[:2].detach())
    out.sum().backward()
    assert torch.equal(x.grad, torch.tensor([[1.0] * 3, [1.0] * 3, [0.0] * 3, [0.0] * 3]))
    assert h.pull().shape == (10, 3) and float(h.pull()[0].abs().sum()) == 0
    with pytest.raises(ValueError):
        h.push(torch.zeros(3, 3), torch.tensor([1, 2]))
    # n_id as a numpy array or a list, as a gas.Loader batch without torch has it
    assert torch.equal(push_and_pull(h, x, 2, n_id.numpy()), out) and torch.equal(h.pull([7, 2]), x[:2].detach())


def test_gas_example_cora(gm):
    """python/examples/gas_gcn.py: GAS loses at most 1.5 points against
    full-graph GCN.

    One-sided, as train's TestGASMatchesFullGCN: GAS approximates
    full-graph training, and what its stale halo rows can cost is
    accuracy. Above the full-graph run is seed noise: with 2 seeds and the
    partitioner's V-cycles (fewer cut edges in the 40 parts) GAS reached
    82.6 against the full graph's 80.9; over 5 seeds 81.8 against 81.2. A
    ceiling of 86, above any published GCN figure on this split, still
    catches a leak of test labels."""
    import os
    import subprocess
    import sys

    ex = os.path.join(os.path.dirname(__file__), "..", "examples", "gas_gcn.py")
    out = subprocess.run([sys.executable, ex, "--seeds", "2", "--epochs", "100"], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    acc = {l.split(":")[0]: float(l.split(":")[1]) for l in out.stdout.splitlines() if "test accuracy:" in l}
    gas, full = acc["test accuracy"], acc["full-graph test accuracy"]
    assert 79 <= gas <= 86 and gas >= full - 1.5, out.stdout

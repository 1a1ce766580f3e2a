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


def test_gcn_norm_matches_full_graph_gcnconv():
    """gcn_norm=True: PyG's GCNConv(normalize=False) on a batch's
    edge_index and edge_weight gives the batch rows of GCNConv on the whole
    graph (degrees of the whole graph, self-loops as gcn_norm adds them),
    on a graph with self-loops and repeated edges; the second layer too
    when the halo's rows are exact (as histories converge to)."""
    nn = pytest.importorskip("torch_geometric.nn")
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    n = 300
    ei = rng.integers(0, n, (2, 2000))
    loops = rng.integers(0, n, 40)
    ei = np.concatenate([ei, ei[:, :100], np.stack([loops, loops])], axis=1)  # repeats, self-loops (some twice)
    ei = torch.from_numpy(ei)
    x = torch.randn(n, 8)
    parts = rng.permutation(np.arange(n) % 6)
    convs = [nn.GCNConv(8, 5), nn.GCNConv(5, 4)]
    mine = [nn.GCNConv(8, 5, normalize=False), nn.GCNConv(5, 4, normalize=False)]
    for c, m in zip(convs, mine):
        m.load_state_dict(c.state_dict())
    with torch.no_grad():
        h1 = convs[0](x, ei).relu()
        h2 = convs[1](h1, ei)
        ld = graphmill.gas.Loader((ei, x), num_parts=6, batch_size=2, parts=parts, gcn_norm=True)
        seen = 0
        for b in ld:
            bs = b.batch_size
            assert b.edge_weight.shape == (b.edge_index.shape[1],) and b.edge_weight.dtype == torch.float32
            out1 = mine[0](b.x, b.edge_index, b.edge_weight).relu()
            assert torch.allclose(out1[:bs], h1[b.n_id[:bs]], atol=1e-5)
            h = torch.cat([out1[:bs], h1[b.n_id[bs:]]])  # exact halo rows
            out2 = mine[1](h, b.edge_index, b.edge_weight)
            assert torch.allclose(out2[:bs], h2[b.n_id[:bs]], atol=1e-5)
            seen += bs
        assert seen == n
        # without it: the batch's own degrees, and GCNConv's rows are off
        b = next(iter(graphmill.gas.Loader((ei, x), num_parts=6, batch_size=2, parts=parts)))
        assert b.edge_weight is None
        assert not torch.allclose(convs[0](b.x, b.edge_index).relu()[:b.batch_size], h1[b.n_id[:b.batch_size]], atol=1e-3)


def test_push_and_pull_moves_halo_to_x_device():
    """The pulled halo rows are moved to x's device (and dtype), whatever
    the history's. Without a GPU the move is seen on a history whose rows
    record what they are asked to become; on a GPU machine also x on CUDA
    with a CPU history."""
    asked = []

    class Rows:
        device = torch.device("cpu")

        def __init__(self, n):
            self.n = n

        def is_pinned(self):
            return False

        def to(self, *args, **kw):
            asked.append((args, kw))
            return torch.ones(self.n, 3, dtype=torch.float16)

    class ElsewhereHistory:
        def push(self, x, n_id, offset=None, count=None):
            pass

        def pull(self, n_id):
            return Rows(len(n_id))

    x = torch.zeros(5, 3, dtype=torch.float16)
    out = push_and_pull(ElsewhereHistory(), x, 2, torch.arange(5))
    assert out.shape == (5, 3) and float(out[2:].sum()) == 9
    assert len(asked) == 1 and asked[0][1].get("device") == x.device and asked[0][1].get("dtype") == x.dtype, asked
    if torch.cuda.is_available():
        h = History(10, 3)  # on the CPU
        h.push(torch.full((3, 3), 2.0), torch.tensor([5, 6, 7]))
        xc = torch.zeros(5, 3, device="cuda", dtype=torch.float16)
        out = push_and_pull(h, xc, 2, torch.tensor([1, 2, 5, 6, 7]))
        assert out.device == xc.device and out.dtype == torch.float16 and float(out[2:].sum()) == 18

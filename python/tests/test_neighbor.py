"""graphmill.NeighborLoader on the user's own data, against PyG's layout and
graphmill's own sampler."""

import os
import warnings

import numpy as np
import pytest

import graphmill

torch = pytest.importorskip("torch")


def random_graph(n=3000, m=40000, dim=8, seed=0):
    r = np.random.default_rng(seed)
    ei = np.stack([r.integers(0, n, m), r.integers(0, n, m)]).astype(np.int64)
    x = r.standard_normal((n, dim)).astype(np.float32)
    y = r.integers(0, 5, n).astype(np.int64)
    return ei, x, y


def check_batch(b, ei_global, fanouts, x, y, batch_size):
    """PyG's invariants, and every edge an edge of the graph drawn at most
    fanout times per destination."""
    n_id = np.asarray(b.n_id)
    bs = int(b.batch_size)
    assert bs <= batch_size and len(n_id) == len(set(n_id.tolist()))
    assert sum(b.num_sampled_nodes) == len(n_id) and b.num_sampled_nodes[0] == bs
    ei = np.asarray(b.edge_index)
    assert ei.dtype == np.int64 and ei.shape == (2, sum(b.num_sampled_edges))
    assert len(b.num_sampled_edges) == len(fanouts)
    edges = set(zip(ei_global[0].tolist(), ei_global[1].tolist()))
    ends = np.cumsum([0] + list(b.num_sampled_nodes))
    e0 = 0
    for h, (k, ne) in enumerate(zip(fanouts, b.num_sampled_edges)):
        hop = ei[:, e0:e0 + ne]
        e0 += ne
        # hop h's edges end at the nodes first reached at hop h, and start
        # at nodes reached by hop h+1
        assert np.all((hop[1] >= ends[h]) & (hop[1] < ends[h + 1]))
        assert np.all(hop[0] < ends[h + 2])
        if ne:
            assert np.bincount(hop[1]).max() <= k
        for s, d in zip(n_id[hop[0]].tolist()[:500], n_id[hop[1]].tolist()[:500]):
            assert (s, d) in edges
    assert np.array_equal(np.asarray(b.x), x[n_id])
    assert np.array_equal(np.asarray(b.y), y[n_id])
    # the old NeighborSampler form: input layer first, each a prefix
    for l, (aei, _, (ns, nd)) in enumerate(b.adjs):
        hops = len(fanouts) - l
        assert aei.shape[1] == sum(b.num_sampled_edges[:hops])
        assert ns == sum(b.num_sampled_nodes[:hops + 1]) and nd == sum(b.num_sampled_nodes[:hops])


def test_tuple_any_seeds(gm):
    ei, x, y = random_graph()
    seeds = np.random.default_rng(1).choice(len(x), 900, replace=False)
    with graphmill.NeighborLoader((ei, x, y), num_neighbors=[6, 4], batch_size=128, input_nodes=seeds, shuffle=True) as ld:
        assert len(ld) == 8
        got, ids = [], []
        for b in ld:
            check_batch(b, ei, [6, 4], x, y, 128)
            got.extend(np.asarray(b.n_id)[:b.batch_size].tolist())
            ids.extend(np.asarray(b.input_id).tolist())
            assert ld.stats()["transport"] == "shm"
        assert sorted(got) == sorted(seeds.tolist())
        assert np.array_equal(seeds[ids], got), "input_id is the seeds' positions in input_nodes"
        assert got != sorted(got), "shuffle=True shuffles"


def test_deterministic_per_seed(gm):
    ei, x, y = random_graph(seed=2)
    mask = np.zeros(len(x), dtype=bool)
    mask[::7] = True

    def epochs(seed):
        """Two epochs (two for loops): every batch's n_id and edge_index."""
        with graphmill.NeighborLoader((torch.from_numpy(ei), torch.from_numpy(x)), num_neighbors=[5, 5],
                                      batch_size=100, input_nodes=torch.from_numpy(mask), shuffle=True, seed=seed) as ld:
            return [[(np.asarray(b.n_id).tolist(), np.asarray(b.edge_index).tolist()) for b in ld] for _ in range(2)]

    a, b, c = epochs(3), epochs(3), epochs(4)
    assert a == b
    assert a[0] != c[0]
    assert a[1] != a[0], "the second for loop is the next epoch"


def test_scipy_and_dataset_dir_match_go_sampler(gm, cora_dir):
    """The same graph given as a dataset directory, as an edge_index and as
    a scipy matrix gives the same batches, whose node sets are those of
    graphmill's own sampler service (Loader, frontier=True) on the same
    seeds."""
    sp = pytest.importorskip("scipy.sparse")
    ds = graphmill.open_dataset(cora_dir)
    ei = ds.edge_index()
    seeds = ds.val_idx
    common = dict(num_neighbors=[10, 5], batch_size=64, input_nodes=seeds, seed=5)
    runs = {}
    with graphmill.NeighborLoader(cora_dir, **common) as ld:
        runs["dir"] = [np.asarray(b.n_id).tolist() for b in ld]
    with graphmill.NeighborLoader((ei, ds.features, ds.labels), **common) as ld:
        runs["edge_index"] = [np.asarray(b.n_id).tolist() for b in ld]
    adj = sp.csr_matrix((np.ones(ds.num_edges, np.float32), (ei[0], ei[1])), shape=(ds.num_nodes, ds.num_nodes))
    with graphmill.NeighborLoader(adj, x=ds.features, **common) as ld:
        runs["scipy"] = [sorted(np.asarray(b.n_id).tolist()) for b in ld]
    with graphmill.Loader(dataset=cora_dir, split="val", fanouts=[10, 5], batch_size=64, shuffle=False, seed=5,
                          features=False, labels=False, frontier=True) as go:
        want = [b.n_id.tolist() for b in go]
    assert runs["dir"] == want and runs["edge_index"] == want
    assert runs["scipy"] == [sorted(w) for w in want]  # Cora's CSC lists are sorted: the same draws


def test_bad_input(gm):
    ei, x, y = random_graph(n=100, m=500)
    with pytest.raises(ValueError, match="more than once"):
        graphmill.NeighborLoader((ei, x), [3], batch_size=4, input_nodes=[1, 2, 2])
    with pytest.raises(ValueError, match="outside"):
        graphmill.NeighborLoader((ei, x), [3], batch_size=4, input_nodes=[1, 100])
    with pytest.raises(ValueError, match="outside"):
        bad = ei.copy()
        bad[0, 0] = 100
        graphmill.NeighborLoader((bad, x), [3], batch_size=4)
    with pytest.raises(ValueError, match="num_neighbors"):
        graphmill.NeighborLoader((ei, x), [0], batch_size=4)
    with pytest.raises(TypeError, match="unsupported arguments"):
        graphmill.NeighborLoader((ei, x), [3], batch_size=4, time_attr="t")
    with pytest.raises(TypeError, match="one per hop"):
        graphmill.NeighborLoader((ei, x), 5, batch_size=4)
    with pytest.raises(ValueError, match="input_nodes is empty"):
        graphmill.NeighborLoader((ei, x), [3], batch_size=4, input_nodes=[])
    ld = graphmill.NeighborLoader((ei, x), [3], batch_size=4)
    ld.close()
    with pytest.raises(graphmill.GraphmillError, match="closed"):
        next(iter(ld))
    assert not [f for f in os.listdir("/dev/shm") if f.startswith("graphmill-neighbors-")], "scratch left behind"


def test_pyg_model_on_both_loaders(gm):
    """One PyG model (SAGEConv with trim_to_layer) trains on PyG's
    NeighborLoader and on ours, with our batches valid throughout."""
    pytest.importorskip("torch_geometric")
    pytest.importorskip("pyg_lib")
    from torch_geometric.data import Data
    from torch_geometric.loader import NeighborLoader as PygLoader
    from torch_geometric.nn import SAGEConv
    from torch_geometric.utils import trim_to_layer

    ei, x, y = random_graph(n=2000, m=30000, dim=16, seed=7)
    y = (x[:, 0] > 0).astype(np.int64)  # learnable from the node's own row
    data = Data(x=torch.from_numpy(x), y=torch.from_numpy(y), edge_index=torch.from_numpy(ei))
    seeds = torch.arange(0, 2000, 2)

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.convs = torch.nn.ModuleList([SAGEConv(16, 32), SAGEConv(32, 2)])

        def forward(self, x, edge_index, nsn, nse):
            for i, conv in enumerate(self.convs):
                x, edge_index, _ = trim_to_layer(i, nsn, nse, x, edge_index)
                x = conv(x, edge_index)
                if i == 0:
                    x = x.relu()
            return x

    accs = {}
    for name, mk in (("pyg", lambda: PygLoader(data, num_neighbors=[8, 4], batch_size=100, input_nodes=seeds, shuffle=True)),
                     ("graphmill", lambda: graphmill.NeighborLoader(data, num_neighbors=[8, 4], batch_size=100, input_nodes=seeds, shuffle=True))):
        torch.manual_seed(0)
        net = Net()
        opt = torch.optim.Adam(net.parameters(), lr=0.01)
        loader = mk()
        for _ in range(3):
            correct = total = 0
            for b in loader:
                if name == "graphmill":
                    assert isinstance(b, Data)
                    check_batch(b, ei, [8, 4], x, y, 100)
                opt.zero_grad()
                out = net(b.x, b.edge_index, b.num_sampled_nodes, b.num_sampled_edges)[:b.batch_size]
                loss = torch.nn.functional.cross_entropy(out, b.y[:b.batch_size])
                loss.backward()
                opt.step()
                correct += int((out.argmax(1) == b.y[:b.batch_size]).sum())
                total += b.batch_size
        accs[name] = correct / total
        if name == "graphmill":
            loader.close()
    assert accs["graphmill"] > 0.9 and abs(accs["graphmill"] - accs["pyg"]) < 0.05, accs


def test_other_feature_shapes_and_dtypes(gm):
    """1-D features, bfloat16 features (which numpy cannot hold) and a
    transform: gathered right all the same."""
    ei, x, y = random_graph(n=500, m=4000, seed=9)
    for feats in (torch.from_numpy(x[:, 0].copy()), torch.from_numpy(x).to(torch.bfloat16)):
        with graphmill.NeighborLoader((ei, feats, y), num_neighbors=[3, 2], batch_size=64,
                                      transform=lambda b: setattr(b, "seen", True) or b) as ld:
            for b in ld:
                assert b.seen and torch.equal(b.x, feats[b.n_id])


def test_replace_draws_exactly_fanout(gm):
    """replace=True: every node first reached at a hop draws exactly its
    fanout (repeats allowed) when it has any in-neighbour."""
    ei, x, y = random_graph(n=400, m=3000, seed=11)
    indeg = np.bincount(ei[1], minlength=400)
    with graphmill.NeighborLoader((ei, x, y), num_neighbors=[7, 3], batch_size=50, replace=True) as ld:
        for b in ld:
            n_id, e = np.asarray(b.n_id), np.asarray(b.edge_index)
            ends = np.cumsum([0] + list(b.num_sampled_nodes))
            e0 = 0
            for h, k in enumerate([7, 3]):
                hop = e[:, e0:e0 + b.num_sampled_edges[h]]
                e0 += b.num_sampled_edges[h]
                counts = np.bincount(hop[1] - ends[h], minlength=ends[h + 1] - ends[h])
                want = np.where(indeg[n_id[ends[h]:ends[h + 1]]] > 0, k, 0)
                assert np.array_equal(counts, want), (h, counts[:10], want[:10])


def test_packed_dataset_keeps_original_ids(gm, cora_dir, tmp_path):
    """A dataset renumbered by 'graphmill data pack' is invisible: seeds go
    in and n_id comes out as original ids, and x, y and every edge are the
    original dataset's for those ids (NeighborLoader and gas.Loader)."""
    import subprocess

    import graphmill.gas

    packed = str(tmp_path / "cora-packed")
    subprocess.run([gm, "data", "pack", cora_dir, "--out", packed, "--quiet"], check=True, capture_output=True)
    ds, pk = graphmill.open_dataset(cora_dir), graphmill.open_dataset(packed)
    assert pk.packed["method"] == "sample" and not np.array_equal(pk.orig_ids, np.arange(pk.num_nodes))
    ei, x, y = ds.edge_index(), np.asarray(ds.features), np.asarray(ds.labels)
    seeds = np.asarray(ds.val_idx)[::-1].copy()  # original ids, any order
    seen = []
    with graphmill.NeighborLoader(packed, num_neighbors=[10, 5], batch_size=64, input_nodes=seeds, seed=5) as ld:
        for b in ld:
            check_batch(b, ei, [10, 5], x, y, 64)
            seen.extend(np.asarray(b.n_id)[:b.batch_size].tolist())
            assert np.array_equal(seeds[np.asarray(b.input_id)], np.asarray(b.n_id)[:b.batch_size])
    assert sorted(seen) == sorted(seeds.tolist())
    edges = set(zip(ei[0].tolist(), ei[1].tolist()))
    for b in graphmill.gas.Loader(packed, num_parts=4, batch_size=2):
        n_id, e = np.asarray(b.n_id), np.asarray(b.edge_index)
        assert np.array_equal(np.asarray(b.x), x[n_id]) and np.array_equal(np.asarray(b.y), y[n_id])
        assert all((s, d) in edges for s, d in zip(n_id[e[0]].tolist(), n_id[e[1]].tolist()))


def test_x_gathered_by_the_service(gm, tmp_path):
    """x over a memory map of an .npy file (np.load(mmap_mode="r"), a
    dataset's features), or a float32 tensor (moved into shared memory), is
    gathered by the service into the shared payloads; the batches are those
    of x gathered here (a numpy array, or service_gather=False)."""
    from graphmill.neighbor import _npy_backing

    ei, x, y = random_graph(n=2000, m=30000, dim=16, seed=4)
    f = str(tmp_path / "x.npy")
    np.save(f, x)
    xm = np.load(f, mmap_mode="r")
    assert _npy_backing(xm) == f and _npy_backing(torch.from_numpy(np.load(f, mmap_mode="r+"))) == f
    # not the file's rows as a whole, or rows that may differ from the file's
    assert _npy_backing(x) is None and _npy_backing(xm[:1000]) is None and _npy_backing(xm[:, :8]) is None
    assert _npy_backing(np.load(f, mmap_mode="c")) is None and _npy_backing(xm.astype(np.float64)) is None
    runs = {}
    xt = torch.from_numpy(x.copy())
    view = xt[5:]
    for name, feats, how in (("numpy", x, None), ("file", xm, False), ("tensor", xt, True), ("here", xt, None)):
        with graphmill.NeighborLoader((ei, feats, y), num_neighbors=[5, 3], batch_size=200, seed=2, shuffle=True,
                                      service_gather=name != "here") as ld:
            assert (ld._x_file and ld._x_file[2]) == how, (name, ld._x_file)
            runs[name] = []
            for b in ld:
                check_batch(b, ei, [5, 3], x, y, 200)
                assert b.x.dtype == torch.float32
                runs[name].append((np.asarray(b.n_id).tolist(), np.asarray(b.x).tolist()))
    assert runs["file"] == runs["numpy"] == runs["tensor"] == runs["here"]
    # the user's tensor moved into shared memory in place: its views follow it
    assert xt.is_shared() and view.is_shared() and torch.equal(xt, torch.from_numpy(x))
    xt[6, 0] = 42.0
    assert view[1, 0] == 42.0


def test_tensor_not_moved_without_room(gm, monkeypatch):
    """Without room in /dev/shm (where writes past a full tmpfs fault with
    SIGBUS) the tensor stays where it is and x is gathered here."""
    import collections

    import graphmill.neighbor as nb

    ei, x, y = random_graph(n=500, m=4000, seed=3)
    xt = torch.from_numpy(x.copy())
    Stat = collections.namedtuple("Stat", "f_bavail f_frsize")
    real = os.statvfs
    monkeypatch.setattr(nb.os, "statvfs", lambda p: Stat(1000, 4096) if p == "/dev/shm" else real(p))
    assert nb._shared_storage(xt) is None and not xt.is_shared()
    with graphmill.NeighborLoader((ei, xt, y), num_neighbors=[3, 2], batch_size=64) as ld:
        assert ld._x_file is None and not xt.is_shared()
        for b in ld:
            check_batch(b, ei, [3, 2], x, y, 64)


def test_learnt_x_keeps_its_gradient(gm):
    """x that requires grad (node embeddings learnt with the model) is
    gathered here with autograd, as PyG's loader gathers it: the batch's x
    carries the gradient back to x (the service's copy would cut it)."""
    ei, x, y = random_graph(n=600, m=5000, seed=8)
    emb = torch.nn.Parameter(torch.from_numpy(x.copy()))
    with graphmill.NeighborLoader((ei, emb, y), num_neighbors=[4, 2], batch_size=50) as ld:
        assert ld._x_file is None and not emb.is_shared()
        b = next(iter(ld))
        assert b.x.requires_grad
        b.x[:b.batch_size].sum().backward()
        seeds = np.asarray(b.n_id)[:b.batch_size]
        want = np.zeros_like(x)
        want[seeds] = 1
        assert np.array_equal(emb.grad.numpy(), want)


def test_service_that_cannot_map_x_falls_back(gm, monkeypatch):
    """A service that cannot map x (here a descriptor path that does not
    exist) is restarted without it, with a warning, and x is gathered in
    this process: the batches are still right."""
    import graphmill.neighbor as nb

    ei, x, y = random_graph(n=500, m=4000, seed=5)
    monkeypatch.setattr(nb, "_shared_storage", lambda t: ("/proc/self/fd/999999", 0, True))
    with pytest.warns(RuntimeWarning, match="could not map x"):
        ld = graphmill.NeighborLoader((ei, torch.from_numpy(x.copy()), y), num_neighbors=[3, 2], batch_size=64)
    with ld:
        assert ld._x_file is None
        for b in ld:
            check_batch(b, ei, [3, 2], x, y, 64)


CUDA = torch.cuda.is_available()


@pytest.mark.parametrize("device", ["cpu"] + (["cuda"] if CUDA else []))
@pytest.mark.parametrize("cache", [None, "10%", "30%", "instance"])
def test_device_and_feature_cache(gm, device, cache):
    """Batches on a device and x through a FeatureCache (built from a budget
    over x, or given) are the batches of the plain loader: the same n_id
    and edges, x and y the graph's rows; the cache's totals count every
    lookup, and on CUDA only the misses cross to the device."""
    import graphmill.torch as gt

    ei, x, y = random_graph(n=2500, m=30000, dim=12, seed=9)
    xt = torch.from_numpy(x)
    if cache == "instance":
        deg = np.bincount(ei[0], minlength=len(x))
        cache = gt.FeatureCache(xt, budget="20%", devices=[device], out_degrees=deg)
        assert deg[cache.cached_ids].min() >= np.sort(deg)[::-1][cache.capacity - 1]
    plain = []
    with graphmill.NeighborLoader((ei, x, y), num_neighbors=[5, 3], batch_size=300, seed=7, shuffle=True) as ld:
        for b in ld:
            plain.append((np.asarray(b.n_id).tolist(), np.asarray(b.edge_index).tolist()))
    if device == "cpu" and cache is None:
        return  # the plain loader itself
    with graphmill.NeighborLoader((ei, xt, y), num_neighbors=[5, 3], batch_size=300, seed=7, shuffle=True,
                                  device=device, feature_cache=cache) as ld:
        assert ld._x_file is None, "x is gathered here, not by the service"
        got, looked = [], 0
        for b in ld:
            for k in ("x", "y", "edge_index", "n_id", "input_id"):
                assert getattr(b, k).device.type == device, k
            assert all(a.device.type == device for a, _, _ in b.adjs)
            b = b.to("cpu")
            check_batch(b, ei, [5, 3], x, y, 300)
            got.append((np.asarray(b.n_id).tolist(), np.asarray(b.edge_index).tolist()))
            looked += len(b.n_id)
        assert got == plain
        st = ld.stats()
    if cache is None:
        assert "feature_cache" not in st
        return
    fc = st["feature_cache"]
    assert fc["lookups"] == looked and 0 < fc["hits"] < looked
    assert fc["bytes_to_device"] == ((looked - fc["hits"]) * 12 * 4 if device == "cuda" else 0)


def test_device_and_cache_bad_input(gm):
    import graphmill.torch as gt

    ei, x, y = random_graph(n=300, m=2000, seed=10)
    with pytest.raises(ValueError, match="no x"):
        graphmill.NeighborLoader((ei, None, y), num_neighbors=[2], batch_size=10, feature_cache="10%")
    small = gt.FeatureCache(torch.from_numpy(x[:100]), budget="10%", out_degrees=np.ones(100))
    with pytest.raises(ValueError, match="100 nodes"):
        graphmill.NeighborLoader((ei, x, y), num_neighbors=[2], batch_size=10, feature_cache=small)
    if not CUDA:
        with pytest.raises(graphmill.GraphmillError, match="CUDA"):
            graphmill.NeighborLoader((ei, x, y), num_neighbors=[2], batch_size=10, device="cuda")


def test_labels_and_edge_index_from_the_service(gm, monkeypatch):
    """Class labels (1-D integers, -1 for none) come gathered by the service
    with PyG's edge_index, in y's own dtype; other y (floats, 2-D, values
    past int32) and service_gather=False are gathered here, equal all the
    same."""
    built_here = []
    orig = graphmill.NeighborLoader._edge_index
    monkeypatch.setattr(graphmill.NeighborLoader, "_edge_index",
                        staticmethod(lambda *a: built_here.append(1) or orig(*a)))
    ei, x, y = random_graph(n=800, m=9000, seed=11)
    y = y.copy()
    y[::7] = -1
    r = np.random.default_rng(2)
    ys = {"int64": (y, True), "int32 tensor": (torch.from_numpy(y.astype(np.int32)), True),
          "float": (r.standard_normal(800).astype(np.float32), False),
          "2-D": (r.integers(0, 3, (800, 2)), False), "past int32": (y * (1 << 40), False)}
    for name, (yy, by_service) in ys.items():
        for sg in (True, False):
            with graphmill.NeighborLoader((ei, x, yy), num_neighbors=[4, 3], batch_size=100, shuffle=True,
                                          service_gather=sg) as ld:
                assert ld._y_service == (by_service and sg), name
                n = 0
                for b in ld:
                    want = torch.as_tensor(yy)[b.n_id]
                    assert b.y.dtype == want.dtype and torch.equal(b.y, want), name
                    check_batch(b, ei, [4, 3], x, np.asarray(yy), 100)
                    n += 1
                assert n == 8
    assert not built_here, "the service lays out edge_index"


def test_dataset_dir_labels_are_int64(gm, cora_dir):
    """A dataset stores int32 labels; batches carry int64 ones, which torch's
    losses want (the README's cross_entropy line), from either loader. A
    built-in dataset's name works as open_dataset's does."""
    ds = graphmill.open_dataset(cora_dir)
    with graphmill.NeighborLoader("cora", num_neighbors=[5, 3], batch_size=32, input_nodes=ds.train_idx) as ld:
        b = next(iter(ld))
    assert b.y.dtype == torch.int64 and torch.equal(b.y, torch.from_numpy(np.asarray(ds.labels, dtype=np.int64))[b.n_id])
    torch.nn.functional.cross_entropy(torch.zeros(b.batch_size, 7), b.y[:b.batch_size])
    gb = next(iter(graphmill.gas.Loader(cora_dir, num_parts=4, batch_size=2)))
    assert gb.y.dtype == torch.int64


def test_lengths_checked_up_front(gm):
    """x and y of another length than the graph's node count are refused when
    the loader is made, by both loaders, naming the mismatch."""
    ei, x, y = random_graph(n=500, m=3000)
    for make in (lambda d, **k: graphmill.NeighborLoader(d, num_neighbors=[3], batch_size=8, **k),
                 lambda d, **k: graphmill.gas.Loader(d, num_parts=4, parts=np.arange(500) % 4, **k)):
        with pytest.raises(ValueError, match="x has 500 rows but y has 497 entries"):
            make((ei, x, y[:-3]))
        with pytest.raises(ValueError, match="y has 497 rows for 500 nodes"):
            make((ei, x, y), y=y[:-3], num_nodes=500)


def test_service_stops_when_its_parent_is_killed(gm):
    """The sampler service a loader starts stops when the process that made
    the loader dies, kill -9 included (its stdin pipe closes)."""
    import signal
    import subprocess
    import sys
    import time

    code = ("import graphmill, numpy as np, os, signal, sys\n"
            "ei = np.random.default_rng(0).integers(0, 300, (2, 2000))\n"
            "ld = graphmill.NeighborLoader((ei, np.zeros((300, 4), np.float32)), num_neighbors=[3], batch_size=16)\n"
            "next(iter(ld))\n"
            "print(ld.loader.server.proc.pid, flush=True)\n"
            "os.kill(os.getpid(), signal.SIGKILL)\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == -signal.SIGKILL, p.stderr
    pid = int(p.stdout.split()[-1])
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    os.kill(pid, signal.SIGKILL)
    pytest.fail(f"the sampler service (pid {pid}) outlived its killed parent by 15 s")


def test_pyg_data_node_and_edge_attributes(gm):
    """A PyG Data's per-node tensors (train_mask) come sliced by n_id, and its
    per-edge ones (edge_attr) by e_id, the edges' columns in the Data's
    edge_index, as from PyG's loader: every batch edge is the Data's edge
    e_id names, and carries that edge's attributes."""
    pytest.importorskip("torch_geometric")
    from torch_geometric.data import Data

    ei, x, y = random_graph(n=400, m=3000)
    ei[:, 5] = ei[:, 4]  # a repeated edge: its two columns are told apart by e_id
    mask = torch.from_numpy(np.random.default_rng(3).random(400) < 0.3)
    attr = torch.from_numpy(np.random.default_rng(4).standard_normal((ei.shape[1], 3)).astype(np.float32))
    w = torch.arange(ei.shape[1], dtype=torch.float32)
    data = Data(x=torch.from_numpy(x), y=torch.from_numpy(y), edge_index=torch.from_numpy(ei), train_mask=mask,
                edge_attr=attr, edge_weight=w)
    seen = set()
    with graphmill.NeighborLoader(data, num_neighbors=[4, 2], batch_size=32, shuffle=True) as ld:
        for b in ld:
            assert torch.equal(b.train_mask, mask[b.n_id])
            check_batch(b, ei, [4, 2], x, y, 32)
            e_id = b.e_id
            assert e_id.dtype == torch.int64 and len(e_id) == b.edge_index.shape[1]
            assert len(set(e_id.tolist())) == len(e_id), "an edge drawn twice"
            assert torch.equal(torch.from_numpy(ei)[:, e_id], b.n_id[b.edge_index])
            assert torch.equal(b.edge_attr, attr[e_id]) and torch.equal(b.edge_weight, w[e_id])
            for l, (aei, ae, _) in enumerate(b.adjs):  # the older form's e_id: a prefix, as its edges
                assert torch.equal(ae, e_id[:aei.shape[1]])
            seen.update(e_id.tolist())
    assert len(seen) > 1000


def test_zero_hop_draws_nothing(gm):
    """num_neighbors 0 at a hop draws nothing there nor after (PyG's meaning):
    the batches are those of the hops before, with the later hops listed
    empty, for a model of as many layers."""
    ei, x, y = random_graph(n=500, m=4000)
    kw = dict(batch_size=16, shuffle=True, seed=5)
    with graphmill.NeighborLoader((ei, x, y), [4, 0, 3], **kw) as ld, \
            graphmill.NeighborLoader((ei, x, y), [4], **kw) as ref:
        for b, r in zip(ld, ref):
            assert list(b.num_sampled_edges) == list(r.num_sampled_edges) + [0, 0]
            assert list(b.num_sampled_nodes) == list(r.num_sampled_nodes) + [0, 0]
            assert torch.equal(b.n_id, r.n_id) and torch.equal(b.edge_index, r.edge_index)
            assert len(b.adjs) == 3 and b.adjs[-1][2] == (len(r.n_id), b.batch_size)
    with pytest.raises(ValueError, match="the first not 0"):
        graphmill.NeighborLoader((ei, x), [0, 3], batch_size=4)


@pytest.mark.parametrize("service_gather", [True, False])
def test_one_iteration_at_a_time(gm, service_gather):
    """A second iteration while one is open (zip(ld, ld)) is refused with a
    clear error, and the first goes on unharmed (both shared the loader's
    shared memory: rows were mixed up or wrong, silently); once the first
    is finished or closed a new one runs."""
    ei, x, y = random_graph(n=2000, m=20000)
    xt, yt = torch.from_numpy(x.copy()), torch.from_numpy(y)
    with graphmill.NeighborLoader((ei, xt, yt), [10, 5], batch_size=64, shuffle=True,
                                  service_gather=service_gather) as ld:
        with pytest.raises(graphmill.GraphmillError, match="already iterating; finish or close that iteration first"):
            for b1, b2 in zip(ld, ld):
                pass
        first = iter(ld)
        n = 0
        for b in first:
            if n == 0:
                with pytest.raises(graphmill.GraphmillError, match="already iterating"):
                    next(iter(ld))
            assert torch.equal(b.x, xt[b.n_id]) and torch.equal(b.y, yt[b.n_id])
            n += 1
        assert n == len(ld)
        it = iter(ld)
        next(it)
        it.close()  # closed early: a new iteration may start
        assert sum(1 for b in ld if torch.equal(b.x, xt[b.n_id])) == len(ld)


SMALL_SHM_SCRIPT = r"""
import os, sys, numpy as np, torch, graphmill
n, m = 200_000, 3_000_000  # indices alone: 12 MB, more than this /dev/shm holds
r = np.random.default_rng(0)
ei = torch.from_numpy(r.integers(0, n, (2, m)))
x = torch.randn(n, 4)
with graphmill.NeighborLoader((ei, x), [5, 3], batch_size=256) as ld:
    b = next(iter(ld))
    assert torch.equal(b.x, x[b.n_id])
print("ok", os.listdir("/dev/shm"))
"""


def test_small_dev_shm_falls_back_to_tmpdir(gm, tmp_path):
    """With a /dev/shm too small for the graph (Docker's 64 MB; here 8 MB,
    a private mount) the dataset for the service is written under $TMPDIR
    instead, and nothing is left in either place."""
    import shutil
    import subprocess
    import sys

    if shutil.which("unshare") is None or os.geteuid() != 0:
        pytest.skip("needs root and unshare for a private /dev/shm")
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    cmd = ["unshare", "-m", "sh", "-c", 'mount -t tmpfs -o size=8m tmpfs /dev/shm && exec "$@"', "sh",
           sys.executable, "-c", SMALL_SHM_SCRIPT]
    env = dict(os.environ, TMPDIR=str(tmp), PYTHONPATH=os.path.dirname(os.path.dirname(graphmill.__file__)))
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
    if r.returncode != 0 and "mount" in r.stderr and "graphmill" not in r.stderr:
        pytest.skip(f"no private /dev/shm here: {r.stderr.strip()[-200:]}")
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.strip() == "ok []", r.stdout
    assert not [f for f in os.listdir(tmp) if f.startswith("graphmill-neighbors-")]


def test_stale_scratch_of_dead_processes_removed(gm):
    """A loader killed while being made (kill -9 before its cleanup) leaves
    its scratch directory, named after its PID: the next loader made
    removes it, and leaves those of live processes and of other PID
    namespaces alone."""
    import subprocess
    import sys
    import tempfile

    from graphmill.neighbor import _pid_namespace, _scratch_dir

    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    dead = p.pid
    ns = _pid_namespace()
    base = "/dev/shm" if os.access("/dev/shm", os.W_OK) else tempfile.gettempdir()
    stale = tempfile.mkdtemp(prefix=f"graphmill-neighbors-{ns}-{dead}-", dir=base)
    with open(os.path.join(stale, "indices.npy"), "wb") as f:
        f.write(b"\0" * 4096)
    live = tempfile.mkdtemp(prefix=f"graphmill-neighbors-{ns}-{os.getppid()}-", dir=base)
    other = tempfile.mkdtemp(prefix=f"graphmill-neighbors-{ns + 1}-{dead}-", dir=base)
    try:
        ei, x, y = random_graph(n=100, m=500)
        with graphmill.NeighborLoader((ei, x), [3], batch_size=16) as ld:
            next(iter(ld))
        assert not os.path.exists(stale)
        assert os.path.isdir(live) and os.path.isdir(other)
        d = _scratch_dir()  # named after this process
        assert os.path.basename(d).startswith(f"graphmill-neighbors-{ns}-{os.getpid()}-")
        os.rmdir(d)
    finally:
        import shutil

        for d in (stale, live, other):
            shutil.rmtree(d, ignore_errors=True)


def test_adj_t_hetero_and_num_neighbors_checked(gm):
    """A PyG Data with adj_t instead of edge_index (torch sparse, COO or
    CSR) gives the batches of the same graph as an edge_index; a Data with
    neither, a HeteroData, a dict or non-integer num_neighbors get clear
    errors."""
    pyg_data = pytest.importorskip("torch_geometric.data")
    ei, x, y = random_graph(n=500, m=4000)
    ei = np.unique(ei[[1, 0]], axis=1)[[1, 0]]  # sorted by destination, then source: adj_t's order
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)
    adj_t = torch.sparse_coo_tensor(torch.from_numpy(ei[[1, 0]]), torch.ones(ei.shape[1]), (500, 500))
    common = dict(num_neighbors=[5, 3], batch_size=64, shuffle=True, seed=2, e_id=True)

    def run(data):
        with graphmill.NeighborLoader(data, **common) as ld:
            return [(b.n_id.tolist(), b.edge_index.tolist(), b.e_id.tolist()) for b in ld]

    want = run(pyg_data.Data(x=xt, y=yt, edge_index=torch.from_numpy(ei)))
    assert run(pyg_data.Data(x=xt, y=yt, adj_t=adj_t)) == want
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "Sparse CSR tensor support is in beta state"
        csr = adj_t.to_sparse_csr()
    assert run(pyg_data.Data(x=xt, y=yt, adj_t=csr)) == want
    with pytest.raises(ValueError, match="neither edge_index nor adj_t"):
        graphmill.NeighborLoader(pyg_data.Data(x=xt), [5], batch_size=4)
    with pytest.raises(ValueError, match=r"adj_t has shape \[500, 500\] for 600 nodes"):
        graphmill.NeighborLoader(pyg_data.Data(x=torch.zeros(600, 2), adj_t=adj_t), [5], batch_size=4)
    h = pyg_data.HeteroData()
    h["paper"].x = xt
    h["paper", "cites", "paper"].edge_index = torch.from_numpy(ei)
    with pytest.raises(ValueError, match="heterogeneous graphs"):
        graphmill.NeighborLoader(h, [5], batch_size=4)
    with pytest.raises(ValueError, match="heterogeneous graphs are not supported"):
        graphmill.NeighborLoader((ei, x), {("paper", "cites", "paper"): [5]}, batch_size=4)
    with pytest.raises(TypeError, match=r"whole numbers .* got 2.7"):
        graphmill.NeighborLoader((ei, x), [2.7], batch_size=4)
    with pytest.raises(TypeError, match="one per hop"):
        graphmill.NeighborLoader((ei, x), "25,10", batch_size=4)
    with graphmill.NeighborLoader((ei, x), [np.int64(3), torch.tensor(2)], batch_size=4) as ld:
        assert ld.num_neighbors == [3, 2]


def test_e_id_always_and_edge_attributes_of_any_input(gm, cora_dir):
    """Batches carry e_id with per-edge attributes, or asked (e_id=True; a
    Data without edge attributes, a tuple, a scipy matrix, a dataset
    directory), and not otherwise (it costs time per batch): the columns of the
    input's edges (edge_index; scipy's tocoo() order; the dataset's
    edge_index()); edge_attr= and edge_weight= give per-edge tensors to
    tuple and scipy inputs, sliced by it."""
    sp = pytest.importorskip("scipy.sparse")
    ei, x, y = random_graph(n=400, m=3000)
    attr = np.random.default_rng(4).standard_normal((ei.shape[1], 3)).astype(np.float32)
    w = np.arange(ei.shape[1], dtype=np.float32)
    xt = torch.from_numpy(x)

    def check(ld, edges, attrs=True):
        for b in ld:
            assert b.e_id.dtype == torch.int64 and len(b.e_id) == b.edge_index.shape[1]
            assert torch.equal(torch.from_numpy(edges)[:, b.e_id], b.n_id[b.edge_index])
            if attrs:
                assert torch.equal(b.edge_attr, torch.from_numpy(attr)[b.e_id])
                assert torch.equal(b.edge_weight, torch.from_numpy(w)[b.e_id])
            for aei, ae, _ in b.adjs:
                assert torch.equal(ae, b.e_id[:aei.shape[1]])

    with graphmill.NeighborLoader((ei, xt), [4, 2], batch_size=64, edge_attr=attr, edge_weight=torch.from_numpy(w)) as ld:
        check(ld, ei)
    # already in CSC order (sorted by destination): e_id are CSC positions
    order = np.argsort(ei[1], kind="stable")
    with graphmill.NeighborLoader((ei[:, order], xt), [4, 2], batch_size=64, edge_attr=attr, edge_weight=w) as ld:
        check(ld, ei[:, order])
    coo = sp.coo_matrix((np.ones(ei.shape[1]), (ei[0], ei[1])), shape=(400, 400))  # repeats kept, as tocoo()
    with graphmill.NeighborLoader(coo, [4, 2], batch_size=64, x=xt, edge_attr=attr, edge_weight=w) as ld:
        check(ld, np.stack([coo.row, coo.col]))
    with pytest.raises(ValueError, match="edge_weight has 5 rows for 3000 edges"):
        graphmill.NeighborLoader((ei, xt), [4], batch_size=64, edge_weight=w[:5])
    ds = graphmill.open_dataset(cora_dir)
    with graphmill.NeighborLoader(cora_dir, [4, 2], batch_size=512, e_id=True) as ld:
        check(ld, ds.edge_index(), attrs=False)
    with graphmill.NeighborLoader((ei, xt), [4, 2], batch_size=64) as ld:
        b = next(iter(ld))
        assert getattr(b, "e_id", None) is None and all(a.e_id is None for a in b.adjs)
    with pytest.raises(ValueError, match="e_id=False, but the data has per-edge attributes"):
        graphmill.NeighborLoader((ei, xt), [4], batch_size=64, edge_attr=attr, e_id=False)
    pyg = pytest.importorskip("torch_geometric.data")
    with graphmill.NeighborLoader(pyg.Data(x=xt, edge_index=torch.from_numpy(ei)), [4, 2], batch_size=64, e_id=True) as ld:
        check(ld, ei, attrs=False)
        assert "e_id" in next(iter(ld)).keys


def test_adjs_are_pyg_edge_index_tuples(gm):
    """adjs are named tuples (edge_index, e_id, size) with .to(device), as
    PyG's NeighborSampler's EdgeIndex (its examples call adj.to(device))."""
    ei, x, y = random_graph(n=300, m=3000)
    with graphmill.NeighborLoader((torch.from_numpy(ei), torch.from_numpy(x)), [5, 3], batch_size=32, e_id=True) as ld:
        b = next(iter(ld))
        assert len(b.adjs) == 2
        for adj in b.adjs:
            assert isinstance(adj, graphmill.EdgeIndex) and isinstance(adj, tuple)
            edge_index, e_id, size = adj
            assert edge_index is adj.edge_index and e_id is adj.e_id and size == adj.size
            moved = adj.to("cpu")
            assert isinstance(moved, graphmill.EdgeIndex) and torch.equal(moved.edge_index, edge_index)
            assert torch.equal(moved.e_id, e_id) and moved.size == size
        moved = b.to("cpu")
        assert all(isinstance(a, graphmill.EdgeIndex) and torch.equal(a.e_id, c.e_id) for a, c in zip(moved.adjs, b.adjs))

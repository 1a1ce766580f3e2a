"""The Loader against the real sampler service: `graphmill serve sampler`,
started by the Loader itself."""

import numpy as np
import pytest

import graphmill


@pytest.fixture(scope="module")
def cora(cora_dir):
    return graphmill.open_dataset(cora_dir)


def check_blocks(ds, b, fanouts):
    """Every sampled edge is an edge of the graph, and no destination has
    more in-edges than its hop's fanout."""
    n_id = b.n_id
    for l, blk in enumerate(b.blocks):
        fo = fanouts[len(fanouts) - 1 - l]  # fanouts count from the seeds; blocks from the input
        deg = np.diff(blk.indptr)
        assert deg.max(initial=0) <= fo
        ei = blk.edge_index()
        src, dst = n_id[ei[0]], n_id[ei[1]]
        for s, d in list(zip(src, dst))[:300]:
            assert s in ds.indices[ds.indptr[d]:ds.indptr[d + 1]]
        # a destination with fewer neighbours than the fanout gets them all
        full = np.diff(ds.indptr)[n_id[:blk.num_dst]]
        assert np.all(deg == np.minimum(full, fo))


def test_epoch_from_service(gm, cora):
    with graphmill.Loader(dataset=cora.dir, split="train", fanouts=[10, 5], batch_size=32, seed=3) as ld:
        assert ld.server is not None and len(ld) == 5
        seeds = []
        for i, b in enumerate(ld):
            assert b.index == i and b.epoch == 0 and b.sequence == i
            assert np.array_equal(b.x, cora.features[b.n_id])
            assert np.array_equal(b.y, cora.labels[b.seeds])
            check_blocks(cora, b, [10, 5])
            # every array is a view of the received message
            base = b.buffer.ctypes.data
            for name, a in b.arrays().items():
                assert base <= a.ctypes.data and a.ctypes.data + a.nbytes <= base + len(b.buffer), name
                assert not a.flags.owndata and a.ctypes.data % 16 == 0, name
            seeds += b.seeds.tolist()
        assert sorted(seeds) == sorted(cora.train_idx.tolist())  # every seed exactly once
        proc = ld.server.proc
    assert proc.poll() is not None  # close() stopped the sampler it started


def test_same_seed_same_batches(gm, cora):
    def epoch(seed, k):
        with graphmill.Loader(dataset=cora.dir, split="val", fanouts=[5, 5], batch_size=100, seed=seed, epoch=k) as ld:
            return [(b.n_id.copy(), b.blocks[0].indices.copy()) for b in ld]

    a, b, c = epoch(7, 2), epoch(7, 2), epoch(7, 3)
    assert all(np.array_equal(x[0], y[0]) and np.array_equal(x[1], y[1]) for x, y in zip(a, b))
    assert any(not np.array_equal(x[0], y[0]) for x, y in zip(a, c))


def test_torch_zero_copy_from_service(gm, cora):
    torch = pytest.importorskip("torch")
    with graphmill.Loader(dataset=cora.dir, split="test", fanouts=[5, 5], batch_size=256,
                          normalize_features=True) as ld:
        for b in ld:
            t = b.torch()
            assert t.x.data_ptr() == b.x.ctypes.data and t.n_id.data_ptr() == b.n_id.ctypes.data
            assert t.y.data_ptr() == b.y.ctypes.data
            for tb, nb in zip(t.blocks, b.blocks):
                assert tb.indptr.data_ptr() == nb.indptr.ctypes.data
                assert tb.indices.data_ptr() == nb.indices.ctypes.data
            rows = t.x.sum(1)
            assert torch.allclose(rows[rows != 0], torch.ones_like(rows[rows != 0]), atol=1e-5)


def test_service_errors_carry_go_message(gm, cora):
    with graphmill.Loader(dataset=cora.dir, split="train", fanouts=[], batch_size=8) as ld:
        with pytest.raises(graphmill.ServiceError, match="no fanouts") as e:
            list(ld)
        assert e.value.code.name == "INVALID_ARGUMENT"
    with pytest.raises(graphmill.GraphmillError, match="no such directory"):
        graphmill.Loader(dataset="/nonexistent/dataset")


def test_device_cpu_yields_torch(gm, cora):
    torch = pytest.importorskip("torch")
    import graphmill.torch as gt

    cache = gt.FeatureCache(cora, budget="20%")
    with graphmill.Loader(dataset=cora.dir, split="train", fanouts=[10, 5], batch_size=64, feature_cache=cache,
                          device="cpu") as ld:
        for b in ld:
            assert isinstance(b, gt.TorchBatch)
            assert torch.equal(b.x, gt.tensor(np.asarray(cora.features)[b.n_id.numpy()]))
    assert 0.2 < cache.hit_rate <= 1


def test_shared_secret(gm, cora):
    with graphmill.Loader(dataset=cora.dir, split="val", fanouts=[3], batch_size=250, token="s3cret") as ld:
        assert len(list(ld)) == 2
        with pytest.raises(graphmill.ServiceError, match="wrong secret") as e:
            graphmill.Loader(ld.addr, split="val", token="other", timeout=5)
        assert e.value.code.name == "UNAUTHENTICATED"
        with pytest.raises(graphmill.ServiceError, match="no credentials"):
            graphmill.Loader(ld.addr, split="val", timeout=5)
        with graphmill.Loader(ld.addr, split="val", fanouts=[3], batch_size=250, token="s3cret") as ld2:
            assert len(list(ld2)) == 2


def test_presample_policy_from_loader(gm, cora):
    pytest.importorskip("torch")
    import graphmill.torch as gt

    with graphmill.Loader(dataset=cora.dir, split="train", fanouts=[10, 5], batch_size=32, features=False) as ld:
        counts = graphmill.presample_counts(ld, batches=3)
        ld.set_epoch(0)  # the cache presamples the same epoch's batches
        cache = gt.FeatureCache(cora, budget="5%", policy="presample", loader=ld, presample_batches=3)
    assert counts.sum() > 0
    # the cached rows are the most visited ones
    assert counts[cache.cached_ids].min() >= np.sort(counts)[::-1][cache.capacity - 1]


def test_example_trains(gm, cora_dir):
    pytest.importorskip("torch")
    import os
    import sys

    ex = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples")
    sys.path.insert(0, ex)
    try:
        import sage_pyg_style
    finally:
        sys.path.remove(ex)
    acc = sage_pyg_style.main(["--dataset", cora_dir, "--epochs", "15", "--quiet", "--seed", "1"])
    assert acc > 0.7  # 15 short epochs of GraphSAGE on Cora: far above chance (1/7)


def test_sampler_killed_mid_epoch(gm, cora):
    import signal

    with graphmill.Loader(dataset=cora.dir, split="test", fanouts=[10, 10], batch_size=50, credits=1) as ld:
        it = iter(ld)
        next(it)
        ld.server.proc.send_signal(signal.SIGKILL)  # the sampler this loader started
        with pytest.raises(graphmill.ServiceError, match="the local sampler exited with status -9"):
            for _ in it:
                pass


def test_slow_consumer_gets_heartbeats(gm, cora):
    import time

    with graphmill.Loader(dataset=cora.dir, split="train", fanouts=[5], batch_size=50, credits=1) as ld:
        seen = []
        for b in ld:
            seen.append(b.index)
            if b.index == 0:
                time.sleep(2.5)  # the idle sampler sends heartbeats (sequence numbers go on)
        assert seen == [0, 1, 2] and ld.heartbeats >= 1


def test_shards_cover_the_split_once(gm, cora):
    """Data-parallel ranks: shard r of num_shards takes its part of every
    global batch (as graphmill train's ranks do)."""
    with graphmill.Loader(dataset=cora.dir, split="val", fanouts=[3], batch_size=60, shard=0, num_shards=2, seed=5) as a:
        with graphmill.Loader(a.addr, split="val", fanouts=[3], batch_size=60, shard=1, num_shards=2, seed=5) as b:
            assert len(a) == len(b) == 5  # 500 seeds in global batches of 120
            sa = [x.seeds.tolist() for x in a]
            sb = [x.seeds.tolist() for x in b]
    assert all(len(x) == 60 for x in sa[:-1])
    everything = sum(sa, []) + sum(sb, [])
    assert sorted(everything) == sorted(cora.val_idx.tolist())


def _hops(b):
    """Per block, the set of (source, destination) edges by global id."""
    n_id = np.asarray(b.n_id)
    out = []
    for blk in b.blocks:
        ei = blk.edge_index()
        out.append(set(zip(n_id[ei[0]].tolist(), n_id[ei[1]].tolist())))
    return out


def test_packed_dataset_gives_original_batches(gm, cora, tmp_path):
    """Over a packed copy ('graphmill data pack') the Loader gives the
    original ids in n_id, and the very batches the original dataset gives
    (the service keys its draws by original id; nodes may come in another
    order within a batch); x and y are the original rows of those ids.
    ids="packed" gives the copy's own ids, and a loader with only an
    address is told how to get original ids."""
    import subprocess

    packed = str(tmp_path / "cora-packed")
    subprocess.run([gm, "data", "pack", cora.dir, "--out", packed, "--quiet"], check=True, capture_output=True)
    pk = graphmill.open_dataset(packed)
    orig = np.asarray(pk.orig_ids)
    assert not np.array_equal(orig, np.arange(pk.num_nodes))
    kw = dict(split="train", fanouts=[10, 5], batch_size=32, seed=3)
    with graphmill.Loader(dataset=cora.dir, **kw) as a, graphmill.Loader(dataset=packed, **kw) as p:
        n = 0
        for ba, bp in zip(a, p):
            assert np.array_equal(bp.seeds, ba.seeds)
            assert sorted(bp.n_id.tolist()) == sorted(ba.n_id.tolist())
            assert _hops(bp) == _hops(ba)
            assert np.array_equal(bp.x, cora.features[bp.n_id])
            assert np.array_equal(bp.y, cora.labels[bp.seeds])
            n += 1
        assert n == len(a) == len(p)
        counts = graphmill.presample_counts(p, batches=2)  # by the packed copy's ids, as its FeatureCache
        want = np.zeros(pk.num_nodes, np.int64)
        for i, b in enumerate(a):
            want += np.bincount(b.n_id, minlength=pk.num_nodes)
            if i == 1:
                break
        assert np.array_equal(counts, want[orig])
    torch = pytest.importorskip("torch")
    import graphmill.torch as gt

    cache = gt.FeatureCache(pk, budget="20%")  # keyed by the copy's ids
    with graphmill.Loader(dataset=packed, feature_cache=cache, device="cpu", **kw) as p:
        for b in p:  # torch batches: n_id original, x gathered through the cache by the copy's ids
            assert torch.equal(b.x, gt.tensor(np.asarray(cora.features)[b.n_id.numpy()]))
    assert 0.2 < cache.hit_rate <= 1
    with graphmill.Loader(dataset=packed, ids="packed", **kw) as p:
        b = next(iter(p))
        assert np.array_equal(b.x, np.asarray(pk.features)[b.n_id])
        assert np.isin(orig[b.seeds], cora.train_idx).all()
        with pytest.raises(graphmill.GraphmillError, match="local_dataset="):
            graphmill.Loader(p.addr, **kw)
        with graphmill.Loader(p.addr, local_dataset=packed, **kw) as q:
            bq = next(iter(q))
            assert np.array_equal(bq.x, cora.features[bq.n_id])


def test_one_iteration_at_a_time(gm, cora):
    """Loader: a second iteration while one is open is refused (they would
    share the shared-memory segment); the open one is unharmed."""
    feats = np.asarray(cora.features)
    with graphmill.Loader(dataset=cora.dir, fanouts=[10, 5], batch_size=32) as ld:
        it = iter(ld)
        b = next(it)
        with pytest.raises(graphmill.GraphmillError, match="already iterating; finish or close that iteration first"):
            next(iter(ld))
        got = [b] + list(it)
        assert len(got) == len(ld) and all(np.array_equal(b.x, feats[b.n_id]) for b in got)
        assert len(list(ld)) == len(ld)


def test_adjs_are_pyg_edge_index_tuples(gm, cora):
    """Loader batches (numpy and torch) give adjs as PyG NeighborSampler's
    EdgeIndex: (edge_index, e_id, size), with .to(device)."""
    import torch

    with graphmill.Loader(dataset=cora.dir, fanouts=[5, 3], batch_size=32, edge_ids=True) as ld:
        mb = next(iter(ld))
        t = mb.torch()
        for adjs, blocks in ((mb.adjs, mb.blocks), (t.adjs, t.blocks)):
            assert len(adjs) == 2
            for adj, blk in zip(adjs, blocks):
                assert isinstance(adj, graphmill.EdgeIndex)
                edge_index, e_id, size = adj
                assert size == (blk.num_src, blk.num_dst) and e_id is blk.edge_ids and e_id is not None
                m = adj.to("cpu")
                assert isinstance(m.edge_index, torch.Tensor) and m.edge_index.tolist() == np.asarray(edge_index).tolist()
                assert m.e_id.tolist() == np.asarray(e_id).tolist() and m.size == size
    with graphmill.Loader(dataset=cora.dir, fanouts=[5], batch_size=32) as ld:
        assert next(iter(ld)).torch().adjs[0].e_id is None  # not asked for

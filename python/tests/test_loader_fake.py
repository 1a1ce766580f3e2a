"""The Loader's protocol handling against a Python sampler service
(tests/fake_sampler.py) that can misbehave on request."""

import numpy as np
import pytest

import graphmill
from graphmill.loader import Loader, parse_frame
from graphmill.v1 import sampler_pb2 as pb
import fake_sampler


@pytest.fixture
def cora(cora_dir):
    return graphmill.open_dataset(cora_dir)


def run(ds, **kw):
    srv, addr, svc = fake_sampler.serve(ds, **{k: kw.pop(k) for k in ("drop", "stall", "fail") if k in kw})
    return srv, addr, svc


def test_parse_frame_matches_protobuf():
    for n in (0, 1, 100, 5000, 70000):
        f = pb.Frame(sender=7, epoch=3, sequence=300, kind=pb.Frame.KIND_BATCH, batch=12, minibatch=b"\x01" * n)
        off = fake_sampler.align_payload(f)
        raw = f.SerializeToString()
        p = parse_frame(raw)
        assert (p["sender"], p["epoch"], p["sequence"], p["kind"], p["batch"]) == (7, 3, 300, 1, 12)
        if n:
            assert p["payload"] == (off, n) and off % 16 == 0
            assert raw[off:off + n] == b"\x01" * n
    with pytest.raises(graphmill.GraphmillError):
        parse_frame(pb.Frame(minibatch=b"abc").SerializeToString()[:-1])


def test_epoch_in_order_zero_copy(cora):
    srv, addr, svc = run(cora)
    try:
        with Loader(addr, split="train", fanouts=[5, 3], batch_size=32, seed=1) as ld:
            assert len(ld) == 5  # 140 training nodes
            seen = []
            for i, b in enumerate(ld):
                assert b.index == i and b.epoch == 0
                # n_id, x and blocks are views into the received message
                base = b.buffer.ctypes.data
                for name, a in b.arrays().items():
                    assert base <= a.ctypes.data < base + len(b.buffer), name
                    assert a.ctypes.data % 16 == 0, name
                assert np.array_equal(b.x, cora.features[b.n_id])
                assert np.array_equal(b.y, cora.labels[b.seeds])
                seen.extend(b.seeds.tolist())
            assert sorted(seen) == sorted(cora.train_idx.tolist())
            assert ld.epoch == 1
            # the next loop is the next epoch, shuffled differently
            second = [b.seeds.tolist() for b in ld]
            assert sum(map(len, second)) == 140 and second[0] != seen[:32]
            assert svc.max_outstanding <= ld.credits
    finally:
        srv.stop(0)


def test_torch_batches_share_memory(cora):
    torch = pytest.importorskip("torch")
    srv, addr, _ = run(cora)
    try:
        with Loader(addr, split="val", fanouts=[4, 4], batch_size=100) as ld:
            for b in ld:
                t = b.torch()
                assert t.x.data_ptr() == b.x.ctypes.data and t.n_id.data_ptr() == b.n_id.ctypes.data
                assert t.blocks[0].indices.data_ptr() == b.blocks[0].indices.ctypes.data
                assert torch.equal(t.x, torch.from_numpy(np.asarray(cora.features)[b.n_id]))
    finally:
        srv.stop(0)


def test_service_error_message(cora):
    srv, addr, _ = run(cora, fail=2)
    try:
        ld = Loader(addr, split="train", fanouts=[2, 2], batch_size=16)
        with pytest.raises(graphmill.ServiceError, match="disk on fire") as ei:
            list(ld)
        assert ei.value.code.name == "INTERNAL"
        assert str(ei.value).startswith(f"sampler {addr}: "), "the error names the service"
        ld.close()
    finally:
        srv.stop(0)


def test_unknown_split(cora):
    srv, addr, _ = run(cora)
    try:
        with pytest.raises(graphmill.GraphmillError, match="no 'nope' split"):
            Loader(addr, split="nope")
    finally:
        srv.stop(0)


def test_lost_frame_detected(cora):
    srv, addr, _ = run(cora, drop=1)
    try:
        with Loader(addr, split="train", fanouts=[2], batch_size=16) as ld:
            with pytest.raises(graphmill.ServiceError, match="sequence"):
                list(ld)
    finally:
        srv.stop(0)


def test_silent_sampler_times_out(cora):
    srv, addr, _ = run(cora, stall=1)
    try:
        with Loader(addr, split="train", fanouts=[2], batch_size=16, timeout=1.0) as ld:
            with pytest.raises(graphmill.ServiceError, match="no frame"):
                list(ld)
    finally:
        srv.stop(0)


def test_unreachable_address():
    with pytest.raises(graphmill.ServiceError, match="unavailable|Deadline|deadline") as ei:
        Loader("127.0.0.1:1", timeout=1.0)
    assert str(ei.value).startswith("sampler 127.0.0.1:1: "), str(ei.value)


def test_arguments_checked_up_front():
    """Arguments the service's request cannot carry (uint64 seed and epoch,
    at least one shard) are refused in __init__ with a clear message,
    before any connection (not "Exception iterating requests!" or a
    ZeroDivisionError from len())."""
    for kw, msg in ((dict(seed=-1), r"seed must be in \[0, 2\*\*64\), got -1"),
                    (dict(epoch=-1), r"epoch must be in \[0, 2\*\*64\), got -1"),
                    (dict(seed=1 << 64), "seed must be in"),
                    (dict(seed=1.5), "seed must be an integer"),
                    (dict(num_shards=0), r"num_shards must be in \[1, 2\*\*32\), got 0"),
                    (dict(shard=2, num_shards=2), r"shard must be in \[0, num_shards=2\), got 2"),
                    (dict(batch_size=0), "batch_size must be in"),
                    (dict(credits=0), "credits must be in")):
        with pytest.raises(ValueError, match=msg):
            Loader("127.0.0.1:1", timeout=0.1, **kw)


def test_early_break_cancels(cora):
    srv, addr, svc = run(cora)
    try:
        with Loader(addr, split="test", fanouts=[3, 3], batch_size=10, credits=2) as ld:
            for i, b in enumerate(ld):
                if i == 2:
                    break
            # the loader is reusable after an abandoned epoch
            assert len(list(ld)) == 100
    finally:
        srv.stop(0)


def test_feature_cache_batches(cora):
    torch = pytest.importorskip("torch")
    import graphmill.torch as gt

    srv, addr, _ = run(cora)
    try:
        cache = gt.FeatureCache(cora, budget="30%")
        with Loader(addr, split="train", fanouts=[5, 5], batch_size=64, feature_cache=cache) as ld:
            assert ld.features is False  # frames come without features
            for b in ld:
                assert isinstance(b, gt.TorchBatch)
                assert torch.equal(b.x, gt.tensor(np.asarray(cora.features)[b.n_id.numpy()]))
                st = b.cache_stats
                assert st.lookups == b.n_id.shape[0]
        assert cache.hit_rate > 0.3  # high-degree nodes are sampled more than their share
    finally:
        srv.stop(0)


def test_local_features(cora):
    srv, addr, _ = run(cora)
    try:
        with Loader(addr, split="train", fanouts=[5, 5], batch_size=64, features="local", local_dataset=cora) as ld:
            assert ld.features is False
            for b in ld:
                assert np.array_equal(b.x, cora.features[b.n_id]) and b.feature_dtype == "float32"
        with pytest.raises(ValueError, match="local"):
            Loader(addr, features="local")
    finally:
        srv.stop(0)


def test_feature_cache_rows_from_frames(cora):
    torch = pytest.importorskip("torch")
    import graphmill.torch as gt

    srv, addr, _ = run(cora)
    try:
        cache = gt.FeatureCache(cora, budget="10%")
        with Loader(addr, split="val", fanouts=[5, 5], batch_size=128, feature_cache=cache, features=True) as ld:
            assert ld.features is True  # the service sends the rows; misses are taken from them
            for b in ld:
                assert torch.equal(b.x, gt.tensor(np.asarray(cora.features)[b.n_id.numpy()]))
                assert b.cache_stats.hits < b.cache_stats.lookups
    finally:
        srv.stop(0)


def test_train_loader_seed_matches_go():
    # values of rng.Derive(seed, 0x5a3) computed by the Go code (train.LoaderSeed)
    for seed, want in ((0, 10078169076072904718), (1, 6739772502979586621), (7, 16128990635683687608),
                       (1 << 63, 4732347890126826790)):
        assert graphmill.train_loader_seed(seed) == want


def test_cuda_without_gpu_is_a_clear_error(cora):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present")
    srv, addr, _ = run(cora)
    try:
        with pytest.raises(graphmill.GraphmillError, match="no CUDA device"):
            Loader(addr, device="cuda")
    finally:
        srv.stop(0)

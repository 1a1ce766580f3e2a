"""Shared-memory frames and misses-only frames against the real sampler
service (`graphmill serve sampler`)."""

import mmap
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

import graphmill
from graphmill import _shm


@pytest.fixture(scope="module")
def cora(cora_dir):
    return graphmill.open_dataset(cora_dir)


@pytest.fixture(scope="module")
def server(gm, cora):
    srv = graphmill.loader.SamplerServer(cora.dir)
    yield srv
    srv.close()


def in_shm(b):
    base = b.buffer.base  # np.frombuffer(mmap): a memoryview of the mapping
    return isinstance(base, memoryview) and isinstance(base.obj, mmap.mmap)


def ours():
    return {n for n in os.listdir(_shm.SHM_DIR) if n.startswith("graphmill-")}


def test_shm_equals_grpc(server, cora):
    kw = dict(split="train", fanouts=[10, 5], batch_size=32, seed=4)
    with graphmill.Loader(server.addr, shm=False, **kw) as ld:
        want = [(b.n_id.copy(), b.x.copy(), b.blocks[0].indices.copy()) for b in ld]
        assert ld.transport == "grpc"
    with graphmill.Loader(server.addr, **kw) as ld:
        n = 0
        for (n_id, x, ind), b in zip(want, ld):
            assert in_shm(b)
            assert np.array_equal(b.n_id, n_id) and np.array_equal(b.x, x) and np.array_equal(b.blocks[0].indices, ind)
            assert np.array_equal(b.x, cora.features[b.n_id])
            base = b.buffer.ctypes.data  # every array is a view of the shared mapping
            for name, a in b.arrays().items():
                assert base <= a.ctypes.data and a.ctypes.data + a.nbytes <= base + len(b.buffer), name
            n += 1
        assert n == len(want) and ld.transport == "shm"


def test_slots_released_when_batches_dropped(server, cora):
    kw = dict(split="train", fanouts=[10, 5], batch_size=16, seed=1, credits=2, shm_bytes=8 << 20)
    with graphmill.Loader(server.addr, **kw) as ld:
        frame = len(next(iter(ld)).buffer)  # the payload: frame and rows
        assert 8 * frame > 8 << 20  # the segment cannot hold every batch
        # dropped one by one: every payload comes through shared memory
        assert all(in_shm(b) for b in ld)
        # all kept: the segment fills, the rest come in the messages (no stall), all correct
        kept = list(ld)
        kinds = [in_shm(b) for b in kept]
        assert kinds[0] and not kinds[-1], kinds
        for b in kept:
            assert np.array_equal(b.x, cora.features[b.n_id])
        torch = pytest.importorskip("torch")
        t = kept[0].torch()  # a tensor keeps its slot too
        x0 = t.x.clone()
        del kept, b
        for b in ld:  # the slots of the dropped batches are reused ...
            assert in_shm(b)
        assert torch.equal(t.x, x0)  # ... but not the one the tensor holds


def test_one_segment_for_every_epoch(server, cora):
    with graphmill.Loader(server.addr, split="train", fanouts=[10, 5], batch_size=32, seed=2) as ld:
        first = list(ld)  # epoch 0, all kept
        want = [b.x.copy() for b in first]
        maps = {id(b.buffer.base.obj) for b in first}
        spans = [(b.buffer.ctypes.data, b.buffer.ctypes.data + len(b.buffer)) for b in first]
        for b in ld:  # epoch 1 over the same mapping, around the kept payloads
            assert in_shm(b) and id(b.buffer.base.obj) in maps
            lo, hi = b.buffer.ctypes.data, b.buffer.ctypes.data + len(b.buffer)
            assert all(hi <= a or lo >= z for a, z in spans)
            assert np.array_equal(b.x, cora.features[b.n_id])
        assert all(np.array_equal(b.x, x) for b, x in zip(first, want))
        del first, b
        for b in ld:  # epoch 2: the space of epoch 0 was released on epoch 1's stream ... or this one's
            assert in_shm(b)


@pytest.mark.parametrize("shm", [True, False])
def test_stager_takes_rows_after_the_frame(server, cora, shm):
    torch = pytest.importorskip("torch")
    from graphmill.torch import DeviceStager

    st = DeviceStager("cpu")  # the path device="cuda" takes, on the CPU
    with graphmill.Loader(server.addr, split="val", fanouts=[5, 5], batch_size=100, shm=shm) as ld:
        for b in ld:
            assert b.nbytes == len(b.buffer) - b.offset  # the payload: frame and rows
            tb = st.stage(b)
            st.wait(tb)
            assert torch.equal(tb.x, torch.from_numpy(cora.features[b.n_id]))
            assert torch.equal(tb.blocks[0].indices, torch.from_numpy(b.blocks[0].indices))


def test_refused_segment_falls_back(server, cora, monkeypatch):
    real = _shm.Segment.create

    def wrong_token(size):  # what a server on another machine sees: not the client's file
        seg = real(size)
        seg.token = bytes(b ^ 1 for b in seg.token)
        return seg

    monkeypatch.setattr(_shm.Segment, "create", staticmethod(wrong_token))
    with graphmill.Loader(server.addr, split="val", fanouts=[5], batch_size=100) as ld:
        for b in ld:
            assert not in_shm(b) and np.array_equal(b.x, cora.features[b.n_id])
        assert ld.transport == "grpc"


HOLD = """
import sys, time, graphmill
ld = graphmill.Loader(sys.argv[1], split="train", fanouts=[10, 5], batch_size=16, credits=2)
it = iter(ld)
b = next(it)
print(ld.transport, flush=True)
time.sleep(60)
"""


@pytest.mark.parametrize("victim", ["client", "server"])
def test_nothing_left_after_kill(gm, cora, victim):
    before = ours()
    srv = graphmill.loader.SamplerServer(cora.dir)
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(graphmill.__file__)))
    p = subprocess.Popen([sys.executable, "-c", HOLD, srv.addr], stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert p.stdout.readline().strip() == "shm"
        # mid-stream: the segment has no name, and only its owner may open it
        assert ours() == before
        links = [os.path.join(f"/proc/{p.pid}/fd", fd) for fd in os.listdir(f"/proc/{p.pid}/fd")]
        segs = [l for l in links if os.readlink(l).startswith(_shm.SHM_DIR + "/graphmill-py-")]
        assert segs and all(os.readlink(l).endswith("(deleted)") for l in segs)
        assert all(os.stat(l).st_mode & 0o777 == 0o600 for l in segs)
        (p if victim == "client" else srv.proc).send_signal(signal.SIGKILL)
        time.sleep(0.2)
        assert ours() == before
    finally:
        p.kill()
        p.wait()
        p.stdout.close()
        srv.close()
    assert ours() == before


def test_misses_only_from_service(server, cora):
    torch = pytest.importorskip("torch")
    import graphmill.torch as gt

    kw = dict(split="train", fanouts=[10, 5], batch_size=32, seed=5, shm=False)
    with graphmill.Loader(server.addr, features=False, **kw) as ld:
        for _ in ld:
            pass
        bare = ld.bytes_received  # the frames without any rows
    row_bytes = 4 * cora.feature_dim
    deg = np.diff(cora.indptr)
    got = {}
    with graphmill.Loader(server.addr, features=False, **kw) as svc:
        for budget in ["0%", "20%", "60%"]:
            # a cache filled from the service (GetRows), no local dataset
            cache = gt.FeatureCache(svc, budget=budget, policy="presample", counts=deg)
            assert cache.dataset is None
            if cache.capacity:
                assert torch.equal(cache.shards[0][:5], torch.from_numpy(cora.features[cache.cached_ids[:5]]))
            with graphmill.Loader(server.addr, feature_cache=cache, **kw) as ld:
                for b in ld:
                    assert torch.equal(b.x, torch.from_numpy(cora.features[b.n_id.numpy()]))
                s = cache.stats
                misses = s.lookups - s.hits
                # exactly the missed rows came, besides the frames
                assert ld.bytes_received == bare + misses * row_bytes
                got[budget] = (s.hit_rate, ld.bytes_received)
    assert got["0%"][0] == 0 and 0 < got["20%"][0] < got["60%"][0]
    assert got["0%"][1] > got["20%"][1] > got["60%"][1]

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import graphmill.torch as gt  # noqa: E402
from graphmill import wire  # noqa: E402
from test_wire import sample_batch  # noqa: E402

CUDA = torch.cuda.is_available()


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_torch_shares_memory(dtype):
    rng = np.random.default_rng(10)
    frame = wire.encode_batch(**sample_batch(rng, dtype=dtype, eids=True))
    mb = wire.decode_batch(frame, writable=True)
    tb = mb.torch()
    # the same data pointers: DLPack views, no copy
    assert tb.n_id.data_ptr() == mb.n_id.ctypes.data
    assert tb.x.data_ptr() == mb.x.ctypes.data
    assert tb.y.data_ptr() == mb.y.ctypes.data
    for t, b in zip(tb.blocks, mb.blocks):
        assert t.indptr.data_ptr() == b.indptr.ctypes.data
        assert t.indices.data_ptr() == b.indices.ctypes.data
        assert t.edge_ids.data_ptr() == b.edge_ids.ctypes.data
        assert torch.equal(t.edge_index, torch.from_numpy(b.edge_index()))
        assert t.size == b.size
    assert tb.x.dtype == {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}[dtype]
    assert torch.equal(tb.x.float(), torch.from_numpy(mb.x_float32()))
    # writes through the tensor are seen by numpy: one memory
    tb.n_id[0] = 12345
    assert mb.n_id[0] == 12345
    assert tb.batch_size == mb.batch_size and torch.equal(tb.seeds, tb.n_id[:tb.batch_size])


def check_same(tb, mb):
    assert torch.equal(tb.n_id.cpu(), torch.from_numpy(mb.n_id))
    assert torch.equal(tb.x.cpu().float(), torch.from_numpy(mb.x_float32()))
    assert torch.equal(tb.y.cpu(), torch.from_numpy(mb.y))
    for t, b in zip(tb.blocks, mb.blocks):
        assert torch.equal(t.indptr.cpu(), torch.from_numpy(b.indptr))
        assert torch.equal(t.indices.cpu(), torch.from_numpy(b.indices))
        assert torch.equal(t.edge_index.cpu(), torch.from_numpy(b.edge_index()))


DEVICES = ["cpu"] + (["cuda"] if CUDA else [])


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_device_stager(device, dtype):
    rng = np.random.default_rng(11)
    st = gt.DeviceStager(device, depth=2)
    frames = [wire.encode_batch(**sample_batch(rng, dtype=dtype, seeds=8 + 4 * i)) for i in range(5)]
    staged = []
    for f in frames:
        mb = wire.decode_batch(f, writable=True)
        staged.append((st.stage(mb), mb))
        if len(staged) > 1:  # one batch in flight while the previous is used
            tb, mb0 = staged.pop(0)
            st.wait(tb)
            assert tb.device.type == torch.device(device).type
            check_same(tb, mb0)
    tb, mb0 = staged.pop(0)
    check_same(st.wait(tb), mb0)
    assert st.bytes_to_device == sum(len(f) for f in frames)


@pytest.mark.skipif(not CUDA, reason="no CUDA device")
def test_to_device_copy():
    rng = np.random.default_rng(12)
    mb = wire.decode_batch(wire.encode_batch(**sample_batch(rng)), writable=True)
    tb = mb.torch(device="cuda")
    assert tb.x.is_cuda and tb.blocks[0].edge_index.is_cuda
    check_same(tb, mb)

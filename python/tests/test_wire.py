import struct

import numpy as np
import pytest

import graphmill
from graphmill import wire


def sample_batch(rng, num_nodes=500, seeds=16, fanouts=(5, 3), dim=8, dtype="float32", labels=True, eids=False):
    """A random but well-formed 2-layer batch, built as a sampler would:
    destinations are a prefix of the sources."""
    layer_nodes = [rng.choice(num_nodes, seeds, replace=False)]
    blocks_rev = []
    for fo in fanouts:
        dst = layer_nodes[-1]
        nbrs = [rng.choice(num_nodes, rng.integers(0, fo + 1)) for _ in dst]
        new = [v for v in dict.fromkeys(np.concatenate(nbrs).tolist()) if v not in set(dst.tolist())]
        src = np.concatenate([dst, np.array(new, dtype=np.int64)])
        pos = {v: i for i, v in enumerate(src.tolist())}
        indptr = np.concatenate([[0], np.cumsum([len(n) for n in nbrs])]).astype(np.int64)
        indices = np.array([pos[v] for n in nbrs for v in n.tolist()], dtype=np.int32)
        e = np.arange(len(indices), dtype=np.int64) * 7 if eids else None
        blocks_rev.append(wire.Block(len(src), len(dst), indptr, indices, e))
        layer_nodes.append(src)
    n_id = layer_nodes[-1].astype(np.int64)
    x = rng.standard_normal((len(n_id), dim)).astype(np.float32)
    if dtype == "float16":
        x = x.astype(np.float16)
    elif dtype == "bfloat16":
        x = graphmill.float32_to_bf16(x)
    y = rng.integers(-1, 7, seeds).astype(np.int32) if labels else None
    return dict(n_id=n_id, blocks=blocks_rev[::-1], batch_size=seeds, x=x if dim else None, y=y,
                feature_dtype=dtype if dim else None)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_roundtrip_zero_copy(dtype):
    rng = np.random.default_rng(1)
    b = sample_batch(rng, dtype=dtype, eids=True)
    frame = wire.encode_batch(**b, sender=3, epoch=5, sequence=9)
    assert len(frame) % 64 == 0
    mb = wire.decode_batch(frame)
    assert (mb.sender, mb.epoch, mb.sequence, mb.batch_size) == (3, 5, 9, 16)
    assert np.array_equal(mb.n_id, b["n_id"]) and np.array_equal(mb.y, b["y"])
    assert np.array_equal(mb.x, b["x"]) and mb.feature_dtype == dtype
    for got, want in zip(mb.blocks, b["blocks"]):
        assert got.size == want.size
        assert np.array_equal(got.indptr, want.indptr) and np.array_equal(got.indices, want.indices)
        assert np.array_equal(got.edge_ids, want.edge_ids)
    # zero copy: every array lies inside the frame's bytes, 64-byte aligned from its start
    base = np.frombuffer(frame, np.uint8).ctypes.data
    for name, a in mb.arrays().items():
        off = a.ctypes.data - base
        assert 0 <= off and off + a.nbytes <= len(frame), name
        assert off % 64 == 0, name
        assert not a.flags.owndata
    assert mb.seeds.tolist() == b["n_id"][:16].tolist()
    if dtype == "bfloat16":
        assert np.allclose(mb.x_float32(), graphmill.bf16_to_float32(b["x"]))


def test_pyg_edge_index():
    rng = np.random.default_rng(2)
    mb = wire.decode_batch(wire.encode_batch(**sample_batch(rng)))
    for blk, (ei, e_id, size) in zip(mb.blocks, mb.adjs):
        assert e_id is blk.edge_ids
        assert ei.shape == (2, blk.num_edges) and ei.dtype == np.int64
        assert size == (blk.num_src, blk.num_dst)
        for i in range(blk.num_dst):
            s = blk.indices[blk.indptr[i]:blk.indptr[i + 1]]
            assert sorted(ei[0, ei[1] == i]) == sorted(s)
    assert mb.blocks[0].num_src == len(mb.n_id) and mb.blocks[-1].num_dst == mb.batch_size
    assert mb.blocks[1].num_src == mb.blocks[0].num_dst


def test_offset_in_larger_buffer_and_writable():
    rng = np.random.default_rng(3)
    frame = wire.encode_batch(**sample_batch(rng))
    buf = b"\0" * 48 + frame + b"\0" * 5  # as inside a protobuf message
    mb = wire.decode_batch(buf, offset=48, length=len(frame), writable=True)
    assert mb.x.flags.writeable and mb.n_id.flags.writeable
    assert mb.n_id.ctypes.data == np.frombuffer(buf, np.uint8).ctypes.data + 48 + (mb.n_id.ctypes.data - mb.buffer.ctypes.data - 48)
    ro = wire.decode_batch(buf, offset=48, length=len(frame))
    assert not ro.x.flags.writeable


def _corrupt(frame, pos, value, fmt):
    b = bytearray(frame)
    struct.pack_into(fmt, b, pos, value)
    return bytes(b)


def test_rejects_bad_frames():
    rng = np.random.default_rng(4)
    frame = wire.encode_batch(**sample_batch(rng))
    cases = [
        (b"XXXX" + frame[4:], "magic"),
        (_corrupt(frame, 4, 3, "<H"), "version 3"),
        (_corrupt(frame, 4, 0, "<H"), "version 0"),
        (_corrupt(frame, 64 + 48 * 2, wire.KIND_INPUT_LABELS, "<H"), "unknown kind 12 in a version 1 frame"),
        (_corrupt(frame, 8, len(frame) + 64, "<Q"), "says"),
        (_corrupt(frame, 20, 4, "<I"), "flags"),
        (_corrupt(frame, 56, 0, "<H"), "0 layers"),
        (_corrupt(frame, 40, 10 ** 9, "<Q"), "seeds"),
        (_corrupt(frame, 64 + 2, 3, "<B"), "dtype"),  # blocks section as float32
        (_corrupt(frame, 64 + 24, 8, "<Q"), "offset 8"),
        (_corrupt(frame, 64 + 48 + 24, 64, "<Q"), "overlap"),
        (frame[:-64], "says"),
        (frame[:10], "too few"),
    ]
    for bad, msg in cases:
        with pytest.raises(graphmill.WireError, match=msg):
            wire.decode_batch(bad)


def test_rejects_bad_values():
    rng = np.random.default_rng(5)
    b = sample_batch(rng)
    b["blocks"][0].indices[3] = b["blocks"][0].num_src  # a source position out of range
    frame = wire.encode_batch(**b)
    with pytest.raises(graphmill.WireError, match="source position"):
        wire.decode_batch(frame)
    wire.decode_batch(frame, check=False)  # structure alone is fine
    b = sample_batch(rng)
    with pytest.raises(graphmill.WireError, match="input node ids"):
        wire.decode_batch(wire.encode_batch(**b), num_nodes=int(b["n_id"].max()))


@pytest.mark.parametrize("pyg_layout", [False, True])
def test_random_corruption_only_wire_errors(pyg_layout):
    rng = np.random.default_rng(6)
    b = sample_batch(rng)
    if pyg_layout:  # a version 2 frame
        n, e = len(b["n_id"]), sum(x.num_edges for x in b["blocks"])
        b.update(edge_index=rng.integers(0, n, (2, e)), input_labels=rng.integers(-1, 5, n))
    frame = bytearray(wire.encode_batch(**b))
    table_end = 64 + 48 * struct.unpack_from("<I", frame, 16)[0]
    for _ in range(3000):
        bad = bytearray(frame)
        for _ in range(rng.integers(1, 4)):
            pos = int(rng.integers(0, table_end if rng.random() < 0.8 else len(frame)))
            bad[pos] = int(rng.integers(0, 256))
        try:
            mb = wire.decode_batch(bytes(bad))
        except graphmill.WireError:
            continue
        # whatever decodes is safe to index with
        for blk in mb.blocks:
            assert blk.indices.size == 0 or blk.indices.max() < blk.num_src
        mb.blocks[0].edge_index()
        if mb.edge_index is not None and mb.edge_index.size:
            assert 0 <= mb.edge_index.min() and mb.edge_index.max() < len(mb.n_id)
        if mb.input_labels is not None:
            assert len(mb.input_labels) == len(mb.n_id)


def test_no_features_no_labels():
    rng = np.random.default_rng(7)
    b = sample_batch(rng, dim=0, labels=False)
    mb = wire.decode_batch(wire.encode_batch(**b))
    assert mb.x is None and mb.y is None and mb.feature_dtype is None


GOLDEN = __import__("os").path.join(__import__("conftest").REPO, "batch", "testdata")


def test_golden_sampled_frame():
    """The Go encoder's reference frame (batch/testdata/sampled.gmbf, built
    by sampled() in batch/batch_test.go): decoded to the same values, and
    this package's encoder writes the same bytes."""
    frame = open(f"{GOLDEN}/sampled.gmbf", "rb").read()
    mb = wire.decode_batch(frame)
    assert (mb.sender, mb.epoch, mb.sequence, mb.batch_size) == (3, 2, 41, 2)
    assert mb.n_id.tolist() == [10, 20, 30, 40, 50, 60, 70]
    assert mb.y.tolist() == [1, -1]
    assert mb.feature_dtype == "float32" and mb.x.shape == (7, 3)
    assert np.array_equal(mb.x.ravel(), np.arange(21, dtype=np.float32) * 0.25)
    b0, b1 = mb.blocks
    assert (b0.size, b0.indptr.tolist(), b0.indices.tolist(), b0.edge_ids.tolist()) == (
        (7, 3), [0, 2, 3, 6], [3, 4, 0, 5, 6, 1], [100, 101, 102, 103, 104, 105])
    assert (b1.size, b1.indptr.tolist(), b1.indices.tolist(), b1.edge_ids.tolist(), b1.edge_weight.tolist()) == (
        (3, 2), [0, 1, 3], [2, 0, 2], [7, 8, 9], [0.5, 1, 2])
    assert b0.edge_weight is None and mb.halo is None
    again = wire.encode_batch(mb.n_id, mb.blocks, mb.batch_size, x=mb.x, y=mb.y, sender=3, epoch=2, sequence=41)
    assert again == frame


def test_golden_frontier_frame():
    """The Go encoder's version 2 reference frame (frontier() in
    batch/batch_test.go): PyG's edge_index and every input node's label."""
    frame = open(f"{GOLDEN}/frontier.gmbf", "rb").read()
    assert struct.unpack_from("<H", frame, 4)[0] == 2
    mb = wire.decode_batch(frame)
    assert mb.n_id.tolist() == [1, 4, 2, 6, 0, 5, 3] and mb.batch_size == 2
    assert mb.edge_index.tolist() == [[2, 3, 0, 4, 5, 6], [0, 0, 1, 2, 2, 3]]
    assert mb.input_labels.tolist() == [11, 14, 12, 16, 10, 15, -1]
    assert mb.x is None and mb.y is None
    again = wire.encode_batch(mb.n_id, mb.blocks, mb.batch_size, sequence=5, edge_index=mb.edge_index,
                              input_labels=mb.input_labels)
    assert again == frame


def test_pyg_layout_checked():
    rng = np.random.default_rng(8)
    b = sample_batch(rng, labels=False)
    n, e = len(b["n_id"]), sum(x.num_edges for x in b["blocks"])
    ei = rng.integers(0, n, (2, e))
    assert wire.decode_batch(wire.encode_batch(**b, edge_index=ei)).edge_index.tolist() == ei.tolist()
    for bad, msg in ((dict(edge_index=ei[:, 1:]), "shape"), (dict(input_labels=np.zeros(n - 1)), "input labels section"),
                     (dict(edge_index=np.where(ei == ei[0, 0], n, ei)), "edge index entry"),
                     (dict(edge_index=np.where(ei == ei[1, 0], -1, ei)), "edge index entry"),
                     (dict(input_labels=np.full(n, -2)), "input label below")):
        with pytest.raises(graphmill.WireError, match=msg):
            wire.decode_batch(wire.encode_batch(**b, **bad))


def test_golden_gas_frame():
    frame = open(f"{GOLDEN}/gas.gmbf", "rb").read()
    mb = wire.decode_batch(frame)
    assert mb.n_id.tolist() == [5, 6, 7, 1 << 40, 9] and mb.batch_size == 3
    assert mb.feature_dtype == "float16" and mb.x.view(np.uint16).ravel().tolist() == [0x3C00 + i for i in range(10)]
    assert mb.y.tolist() == [0, 2, -1]
    (nodes, rows), = mb.halo
    assert nodes.tolist() == [1 << 40, 9]
    assert rows.dtype == np.uint16 and rows.ravel().tolist() == [0x3F80 + i for i in range(8)]
    for b in mb.blocks:
        assert b.size == (5, 3) and b.indices.tolist() == [1, 3, 0, 4, 2]

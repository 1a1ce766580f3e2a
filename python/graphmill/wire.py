"""The MiniBatch wire format (docs/wire.md), decoded into numpy views.

A frame is a 64-byte header, a table of 48-byte section entries and the
sections' bytes, each at an offset from the frame's start that is a
multiple of 64. ``decode_batch`` validates the header and table and
returns a ``MiniBatch`` whose arrays are numpy views of the frame's bytes:
nothing is copied.
"""

import struct

import numpy as np

from ._adjs import EdgeIndex
from .errors import WireError

MAGIC = b"GMBF"
VERSION = 2  # the newest this reader knows; frames without kinds 11-12 are version 1
HEADER_SIZE = 64
ENTRY_SIZE = 48
ALIGN = 64
FLAG_HALO = 1
MAX_LAYERS = 4096
MAX_NODES = (1 << 31) - 1

# Section kinds.
KIND_INPUT_NODES = 1
KIND_LABELS = 2
KIND_FEATURES = 3
KIND_BLOCKS = 4
KIND_INDPTR = 5
KIND_INDICES = 6
KIND_EDGE_IDS = 7
KIND_EDGE_WEIGHTS = 8
KIND_HALO_NODES = 9
KIND_HALO_ROWS = 10
KIND_EDGE_INDEX = 11  # version 2
KIND_INPUT_LABELS = 12  # version 2
KIND_NAMES = {
    1: "input_nodes", 2: "labels", 3: "features", 4: "blocks", 5: "indptr", 6: "indices",
    7: "edge_ids", 8: "edge_weights", 9: "halo_nodes", 10: "halo_rows", 11: "edge_index", 12: "input_labels",
}

# dtype codes -> (name, numpy dtype of the stored bits)
DTYPES = {
    1: ("int32", np.dtype("<i4")),
    2: ("int64", np.dtype("<i8")),
    3: ("float32", np.dtype("<f4")),
    4: ("float16", np.dtype("<f2")),
    5: ("bfloat16", np.dtype("<u2")),
}
DTYPE_CODES = {name: code for code, (name, _) in DTYPES.items()}
_FLOATS = (3, 4, 5)
_FIXED = {
    KIND_INPUT_NODES: 2, KIND_LABELS: 1, KIND_BLOCKS: 2, KIND_INDPTR: 2,
    KIND_INDICES: 1, KIND_EDGE_IDS: 2, KIND_EDGE_WEIGHTS: 3, KIND_HALO_NODES: 2,
    KIND_EDGE_INDEX: 2, KIND_INPUT_LABELS: 2,
}
_NDIM2 = (KIND_FEATURES, KIND_BLOCKS, KIND_HALO_ROWS, KIND_EDGE_INDEX)

_HEADER = struct.Struct("<4sHHQIIIIQQQHBBI")
_ENTRY = struct.Struct("<HBBIQQQQQ")


def _align(n):
    return (n + ALIGN - 1) & ~(ALIGN - 1)


class Block:
    """One layer's message-flow graph, compressed over destinations (DGL's
    block convention): the in-edges of destination i are
    ``indices[indptr[i]:indptr[i+1]]``, each the position of its source among
    the block's ``num_src`` sources; destination i is also source i.

    ``size`` is (num_src, num_dst) and ``edge_index()`` gives PyG's
    (source position, destination position) pairs, as the ``adjs`` of PyG's
    NeighborSampler: ``x_target = x[:size[1]]``.
    """

    __slots__ = ("num_src", "num_dst", "indptr", "indices", "edge_ids", "edge_weight", "_edge_index")

    def __init__(self, num_src, num_dst, indptr, indices, edge_ids=None, edge_weight=None):
        self.num_src = num_src
        self.num_dst = num_dst
        self.indptr = indptr
        self.indices = indices
        self.edge_ids = edge_ids
        self.edge_weight = edge_weight
        self._edge_index = None

    @property
    def num_edges(self):
        return len(self.indices)

    @property
    def size(self):
        """(num_src, num_dst), as PyG's NeighborSampler gives it."""
        return (self.num_src, self.num_dst)

    def dst_index(self):
        """The destination position of every edge (int64 [num_edges])."""
        return np.repeat(np.arange(self.num_dst, dtype=np.int64), np.diff(self.indptr))

    def edge_index(self):
        """int64 [2, num_edges]: row 0 the source positions, row 1 the
        destination positions (PyG's flow source -> target). Computed once."""
        if self._edge_index is None:
            ei = np.empty((2, self.num_edges), dtype=np.int64)
            ei[0] = self.indices
            ei[1] = self.dst_index()
            self._edge_index = ei
        return self._edge_index

    def __repr__(self):
        return f"Block(src={self.num_src}, dst={self.num_dst}, edges={self.num_edges})"


class MiniBatch:
    """A decoded minibatch. Arrays are numpy views of the frame's bytes.

    * ``n_id``: int64 global ids of the input nodes (the first block's
      sources); the seeds are its first ``batch_size`` entries.
    * ``blocks``: one ``Block`` per layer, input layer first.
    * ``x``: the input nodes' feature rows (float32, float16, or the uint16
      bit patterns of bfloat16: see ``feature_dtype``), or None.
    * ``y``: the seeds' labels (int32, -1 for none), or None.
    * ``edge_index``: every hop's edges in PyG's layout (int64 [2, E]:
      source and destination positions among the input nodes, the seeds'
      hop first), when the service was asked for it, else None.
    * ``input_labels``: every input node's label (int64, -1 for none),
      when the service was asked for them, else None.
    * ``sender``, ``epoch``, ``sequence``: stream metadata.
    * ``halo``: GNNAutoScale history sources per layer >= 1 (``(nodes, rows)``
      pairs; rows may be None), or None.
    * ``miss_rows``: with a feature cache, the rows of the input nodes the
      cache lacks, as the sampler service sent them (float32), or None.
    """

    __slots__ = ("sender", "epoch", "sequence", "batch_size", "n_id", "blocks", "x", "y", "edge_index", "input_labels",
                 "feature_dtype", "halo", "buffer", "offset", "nbytes", "index", "miss_rows", "__weakref__")

    @property
    def seeds(self):
        """The seeds' global ids: n_id[:batch_size]."""
        return self.n_id[:self.batch_size]

    @property
    def num_layers(self):
        return len(self.blocks)

    @property
    def adjs(self):
        """[EdgeIndex(edge_index, e_id, size), ...] per layer, input layer
        first: what PyG's NeighborSampler yields as ``adjs`` (e_id: the
        blocks' ``edge_ids``, None unless the loader asked for them)."""
        return [EdgeIndex(b.edge_index(), b.edge_ids, b.size) for b in self.blocks]

    def x_float32(self):
        """The features as float32 (a view when stored as float32)."""
        if self.x is None:
            return None
        if self.feature_dtype == "bfloat16":
            return (self.x.astype(np.uint32) << 16).view(np.float32)
        return self.x if self.x.dtype == np.float32 else self.x.astype(np.float32)

    def arrays(self):
        """Every array view of the batch, by name (for checks of where they
        live)."""
        out = {"n_id": self.n_id}
        if self.x is not None:
            out["x"] = self.x
        if self.y is not None:
            out["y"] = self.y
        for l, b in enumerate(self.blocks):
            out[f"blocks.{l}.indptr"] = b.indptr
            out[f"blocks.{l}.indices"] = b.indices
            if b.edge_ids is not None:
                out[f"blocks.{l}.edge_ids"] = b.edge_ids
            if b.edge_weight is not None:
                out[f"blocks.{l}.edge_weight"] = b.edge_weight
        for l, (nodes, rows) in enumerate(self.halo or [], start=1):
            out[f"halo.{l}.nodes"] = nodes
            if rows is not None:
                out[f"halo.{l}.rows"] = rows
        return out

    def torch(self, device=None, non_blocking=False):
        """The batch as PyTorch tensors (``graphmill.torch.TorchBatch``):
        on the CPU they share this batch's memory (DLPack); with a device
        they are copied there."""
        from ._tensors import to_torch

        return to_torch(self, device=device, non_blocking=non_blocking)

    def __repr__(self):
        xs = f", x={self.x.shape[1]}x{self.feature_dtype}" if self.x is not None else ""
        return (f"MiniBatch(epoch={self.epoch}, seq={self.sequence}, batch_size={self.batch_size}, "
                f"n_id={len(self.n_id)}{xs}, blocks={self.blocks})")


class _Writable:
    """Holds a bytes object and exposes its memory as a writable numpy
    buffer (numpy cannot export a read-only array through DLPack). The bytes
    must be owned by the caller alone: the client only does this to the
    message buffers gRPC hands it."""

    __slots__ = ("owner", "__array_interface__")

    def __init__(self, owner, addr, n):
        self.owner = owner
        self.__array_interface__ = {"data": (addr, False), "shape": (n,), "typestr": "|u1", "version": 3}


def as_buffer(buf, writable=False):
    """Returns a 1-d uint8 numpy array over ``buf`` (bytes, bytearray,
    memoryview or a uint8 array) without copying. With ``writable=True`` a
    bytes object is exposed writable (see _Writable)."""
    if isinstance(buf, np.ndarray):
        if buf.dtype != np.uint8 or buf.ndim != 1:
            raise WireError(f"frame buffer must be 1-d uint8, got {buf.dtype} {buf.shape}")
        return buf
    a = np.frombuffer(buf, dtype=np.uint8)
    if writable and not a.flags.writeable and isinstance(buf, bytes) and len(buf):
        a = np.asarray(_Writable(buf, a.__array_interface__["data"][0], len(buf)))
    return a


def frame_size(header):
    """The size of the frame whose first 16 bytes are ``header``, after
    checking magic, version and header size."""
    if len(header) < 16:
        raise WireError(f"{len(header)} bytes are too few for a frame header (16 needed to size it)")
    magic, version, hsize, size = struct.unpack_from("<4sHHQ", header, 0)
    if magic != MAGIC:
        raise WireError(f"bad magic {magic!r} (want {MAGIC!r}): not a minibatch frame")
    if not 1 <= version <= VERSION:
        raise WireError(f"frame version {version}; this reader knows versions 1 to {VERSION}")
    if hsize != HEADER_SIZE:
        raise WireError(f"header size {hsize}; frames have {HEADER_SIZE}")
    if size < HEADER_SIZE or size % ALIGN or size > 1 << 40:
        raise WireError(f"frame size {size} is not a multiple of {ALIGN} in [{ALIGN}, 2^40]")
    return size


def decode_batch(buf, offset=0, length=None, writable=False, check=True, num_nodes=0):
    """Decodes the frame at ``buf[offset:offset+length]`` into a MiniBatch of
    numpy views of ``buf`` (no copy). ``check=True`` also validates the
    values (block offsets and source positions, node ids below
    ``num_nodes`` when given), so that indexing with them cannot go out of
    range. Raises WireError on anything that does not follow docs/wire.md."""
    mem = as_buffer(buf, writable=writable)
    if offset < 0 or offset > len(mem):
        raise WireError(f"offset {offset} outside a buffer of {len(mem)} bytes")
    if length is None:
        length = len(mem) - offset
    if length < 16:
        raise WireError(f"{length} bytes are too few for a frame header (16 needed to size it)")
    if offset + length > len(mem):
        raise WireError(f"frame of {length} bytes at {offset} does not fit a buffer of {len(mem)} bytes")
    f = mem[offset:offset + length]
    size = frame_size(f[:16].tobytes())
    if size != length:
        raise WireError(f"frame header says {size} bytes, buffer has {length}")
    (_, version, _, _, nsec, flags, sender, epoch, seq, nseeds, ninputs, L, fdt, res, fdim) = _HEADER.unpack_from(f, 0)
    if flags & ~FLAG_HALO:
        raise WireError(f"unknown header flags {flags:#x}")
    if res:
        raise WireError(f"reserved header byte 59 is {res}, not 0")
    if not 1 <= L <= MAX_LAYERS:
        raise WireError(f"{L} layers (want 1 to {MAX_LAYERS})")
    if nseeds > ninputs or ninputs > size:
        raise WireError(f"{nseeds} seeds and {ninputs} input nodes in a frame of {size} bytes")
    if (fdt == 0) != (fdim == 0) or (fdt != 0 and fdt not in _FLOATS):
        raise WireError(f"feature dtype code {fdt} with dimension {fdim}")
    table_end = HEADER_SIZE + ENTRY_SIZE * nsec
    if nsec == 0 or table_end > size:
        raise WireError(f"{nsec} sections do not fit a frame of {size} bytes")
    halo = bool(flags & FLAG_HALO)
    sections = {}
    prev_end = _align(table_end)
    for i in range(nsec):
        kind, dt, ndim, layer, d0, d1, off, nb, r = _ENTRY.unpack_from(f, HEADER_SIZE + ENTRY_SIZE * i)
        name = KIND_NAMES.get(kind, f"kind {kind}")
        if r:
            raise WireError(f"section {i}: reserved field is {r}, not 0")
        if kind not in KIND_NAMES or (version == 1 and kind > KIND_HALO_ROWS):
            raise WireError(f"section {i}: unknown kind {kind} in a version {version} frame")
        want = _FIXED.get(kind)
        if want is not None and dt != want:
            raise WireError(f"section {i}: {name} has dtype code {dt}, want {want} ({DTYPES[want][0]})")
        if want is None and dt not in _FLOATS:
            raise WireError(f"section {i}: {name} has dtype code {dt}, want float32, float16 or bfloat16")
        if ndim != (2 if kind in _NDIM2 else 1) or (ndim == 1 and d1 != 1):
            raise WireError(f"section {i}: {name} has {ndim} dimensions ({d0} x {d1})")
        if kind in (KIND_INPUT_NODES, KIND_LABELS, KIND_FEATURES, KIND_BLOCKS, KIND_EDGE_INDEX, KIND_INPUT_LABELS):
            if layer != 0:
                raise WireError(f"section {i}: {name} has layer {layer}, want 0")
        elif kind in (KIND_HALO_NODES, KIND_HALO_ROWS):
            if not halo:
                raise WireError(f"section {i}: {name} in a frame without the halo flag")
            if not 1 <= layer < L:
                raise WireError(f"section {i}: {name} has layer {layer}, want 1 to {L - 1}")
        elif layer >= L:
            raise WireError(f"section {i}: {name} has layer {layer} of {L}")
        if kind in (KIND_FEATURES, KIND_HALO_ROWS) and d1 == 0:
            raise WireError(f"section {i}: {name} have dimension 0")
        if d0 * d1 * DTYPES[dt][1].itemsize != nb:
            raise WireError(f"section {i}: {name}: {nb} bytes for shape {d0} x {d1} of {DTYPES[dt][0]}")
        if off % ALIGN:
            raise WireError(f"section {i}: {name}: offset {off} is not a multiple of {ALIGN}")
        if off < prev_end or off > size or nb > size - off:
            raise WireError(f"section {i}: {name}: bytes [{off}, {off + nb}) overlap the previous section or the table, or pass the frame's end ({size})")
        prev_end = off + nb
        key = (kind, layer)
        if key in sections:
            raise WireError(f"section {i}: {name} of layer {layer} appears twice")
        dtype = DTYPES[dt][1]
        a = f[off:off + nb].view(dtype)
        sections[key] = a.reshape(d0, d1) if ndim == 2 else a

    def need(kind, layer=0):
        a = sections.get((kind, layer))
        if a is None:
            raise WireError(f"no {KIND_NAMES[kind]} section for layer {layer}")
        return a

    counts = need(KIND_BLOCKS)
    if counts.shape != (L, 3):
        raise WireError(f"blocks section has shape {counts.shape} for {L} layers (want {L} x 3)")
    n_id = need(KIND_INPUT_NODES)
    if len(n_id) != ninputs:
        raise WireError(f"input nodes section has {len(n_id)} entries; the header says {ninputs}")
    mb = MiniBatch()
    mb.sender, mb.epoch, mb.sequence = sender, epoch, seq
    mb.batch_size = int(nseeds)
    mb.n_id = n_id
    mb.buffer, mb.offset, mb.nbytes = mem, offset, size
    mb.miss_rows = None
    mb.index = None
    mb.y = sections.get((KIND_LABELS, 0))
    if mb.y is not None and len(mb.y) != nseeds:
        raise WireError(f"labels section has {len(mb.y)} entries for {nseeds} seeds")
    mb.input_labels = sections.get((KIND_INPUT_LABELS, 0))
    if mb.input_labels is not None and len(mb.input_labels) != ninputs:
        raise WireError(f"input labels section has {len(mb.input_labels)} entries for {ninputs} input nodes")
    mb.x = sections.get((KIND_FEATURES, 0))
    mb.feature_dtype = DTYPES[fdt][0] if fdt else None
    if fdt:
        if mb.x is None:
            raise WireError("no features section, but the header has a feature dtype")
        if mb.x.dtype != DTYPES[fdt][1] or mb.x.shape != (ninputs, fdim):
            raise WireError(f"features section is {mb.x.shape} of {mb.x.dtype}; the header says ({ninputs}, {fdim}) of {DTYPES[fdt][0]}")
    elif mb.x is not None:
        raise WireError("a features section, but the header has no feature dtype")
    blocks = []
    for l in range(L):
        ns, nd, ne = (int(v) for v in counts[l])
        if ns > MAX_NODES or nd > ns or ns < 0 or nd < 0 or ne < 0:
            raise WireError(f"block {l} has {ns} sources, {nd} destinations and {ne} edges")
        indptr = need(KIND_INDPTR, l)
        indices = need(KIND_INDICES, l)
        if len(indptr) != nd + 1 or len(indices) != ne:
            raise WireError(f"block {l}: indptr has {len(indptr)} entries for {nd} destinations, indices {len(indices)} for {ne} edges")
        eids = sections.get((KIND_EDGE_IDS, l))
        w = sections.get((KIND_EDGE_WEIGHTS, l))
        for nm, a in (("edge_ids", eids), ("edge_weights", w)):
            if a is not None and len(a) != ne:
                raise WireError(f"block {l}: {nm} has {len(a)} entries for {ne} edges")
        blocks.append(Block(ns, nd, indptr, indices, eids, w))
    mb.blocks = blocks
    mb.edge_index = sections.get((KIND_EDGE_INDEX, 0))
    if mb.edge_index is not None:
        e = sum(b.num_edges for b in blocks)
        if mb.edge_index.shape != (2, e):
            raise WireError(f"edge index section has shape {mb.edge_index.shape} for {e} edges")
    mb.halo = None
    if halo:
        mb.halo = []
        for l in range(1, L):
            nodes = need(KIND_HALO_NODES, l)
            rows = sections.get((KIND_HALO_ROWS, l))
            if rows is not None and rows.shape[0] != len(nodes):
                raise WireError(f"layer {l}: {rows.shape[0]} halo rows for {len(nodes)} halo nodes")
            mb.halo.append((nodes, rows))
    # Shape chain: block 0 reads the input nodes, block l reads block l-1's
    # destinations (plus history rows), the last block's destinations are
    # the seeds.
    if blocks[0].num_src != ninputs:
        raise WireError(f"block 0 has {blocks[0].num_src} sources for {ninputs} input nodes")
    for l in range(1, L):
        extra = len(mb.halo[l - 1][0]) if halo else 0
        if blocks[l].num_src != blocks[l - 1].num_dst + extra:
            raise WireError(f"block {l} has {blocks[l].num_src} sources; block {l - 1} has {blocks[l - 1].num_dst} destinations and {extra} history nodes")
    if blocks[-1].num_dst != nseeds:
        raise WireError(f"the last block has {blocks[-1].num_dst} destinations for {nseeds} seeds")
    if check:
        _check_values(mb, num_nodes)
    return mb


def _check_values(mb, num_nodes):
    # Ranges are checked in one pass each: a negative value, viewed as
    # unsigned, is past any bound (min and max took twice as long).
    if len(mb.n_id) and mb.n_id.view(np.uint64).max() >= (num_nodes or 1 << 63):
        raise WireError(f"input node ids outside [0, {num_nodes or '2^63'})")
    if mb.y is not None and len(mb.y) and mb.y.min() < -1:
        raise WireError("a label below -1")
    if mb.input_labels is not None and len(mb.input_labels) and mb.input_labels.min() < -1:
        raise WireError("an input label below -1")
    if mb.edge_index is not None and mb.edge_index.size and mb.edge_index.view(np.uint64).max() >= len(mb.n_id):
        raise WireError(f"an edge index entry outside [0, {len(mb.n_id)})")
    for l, b in enumerate(mb.blocks):
        p = b.indptr
        if p[0] != 0 or p[-1] != b.num_edges or (len(p) > 1 and np.any(p[1:] < p[:-1])):
            raise WireError(f"block {l}: indptr does not rise from 0 to {b.num_edges}")
        if b.num_edges and b.indices.view(np.uint32).max() >= b.num_src:
            raise WireError(f"block {l}: a source position outside [0, {b.num_src})")
        if b.edge_ids is not None and b.num_edges and b.edge_ids.min() < 0:
            raise WireError(f"block {l}: a negative edge id")


def encode_batch(n_id, blocks, batch_size, x=None, y=None, feature_dtype=None, sender=0, epoch=0,
                 sequence=0, edge_index=None, input_labels=None):
    """Encodes a minibatch as a frame (bytes) - the inverse of decode_batch,
    for tests and for Python-side producers. ``blocks`` are ``Block``
    values; ``x`` holds float32/float16 rows or bfloat16 bit patterns
    (uint16, with feature_dtype="bfloat16"). With ``edge_index`` ([2, E])
    or ``input_labels`` the frame is version 2."""
    L = len(blocks)
    secs = []

    def add(kind, dt, layer, arr, ndim):
        arr = np.ascontiguousarray(arr, dtype=DTYPES[dt][1])
        d0 = arr.shape[0]
        d1 = arr.shape[1] if ndim == 2 else 1
        secs.append([kind, dt, ndim, layer, d0, d1, 0, arr.nbytes, arr])

    add(KIND_BLOCKS, 2, 0, np.array([[b.num_src, b.num_dst, b.num_edges] for b in blocks], np.int64).reshape(L, 3), 2)
    add(KIND_INPUT_NODES, 2, 0, n_id, 1)
    if y is not None:
        add(KIND_LABELS, 1, 0, y, 1)
    if input_labels is not None:
        add(KIND_INPUT_LABELS, 2, 0, input_labels, 1)
    fdt = 0
    if x is not None:
        fdt = DTYPE_CODES[feature_dtype or {np.dtype(np.float16): "float16"}.get(np.asarray(x).dtype, "float32")]
        add(KIND_FEATURES, fdt, 0, x, 2)
    if edge_index is not None:
        add(KIND_EDGE_INDEX, 2, 0, edge_index, 2)
    for l, b in enumerate(blocks):
        add(KIND_INDPTR, 2, l, b.indptr, 1)
        add(KIND_INDICES, 1, l, b.indices, 1)
        if b.edge_ids is not None:
            add(KIND_EDGE_IDS, 2, l, b.edge_ids, 1)
        if b.edge_weight is not None:
            add(KIND_EDGE_WEIGHTS, 3, l, b.edge_weight, 1)
    off = _align(HEADER_SIZE + ENTRY_SIZE * len(secs))
    for s in secs:
        s[6] = off
        off = _align(off + s[7])
    size = off
    out = bytearray(size)
    fdim = x.shape[1] if x is not None else 0
    version = 2 if edge_index is not None or input_labels is not None else 1
    _HEADER.pack_into(out, 0, MAGIC, version, HEADER_SIZE, size, len(secs), 0, sender, epoch, sequence,
                      batch_size, len(n_id), L, fdt, 0, fdim)
    for i, s in enumerate(secs):
        _ENTRY.pack_into(out, HEADER_SIZE + ENTRY_SIZE * i, *s[:8], 0)
        out[s[6]:s[6] + s[7]] = s[8].tobytes()
    return bytes(out)

"""Minibatches as PyTorch tensors: zero-copy views (DLPack), TorchBatch and
device staging. The wire format (wire.MiniBatch.torch), the Loader and
graphmill.torch use it; it imports none of them, so the package's modules
import one another one way only.

Importing this module needs PyTorch (>= 1.13 for ``torch.from_dlpack``).
"""

import warnings

import numpy as np
import torch

from .errors import GraphmillError
from ._adjs import EdgeIndex


def tensor(a, bfloat16=False):
    """Returns a torch tensor sharing memory with the numpy array ``a``
    (through DLPack, ``torch.from_dlpack``). ``bfloat16=True`` reads a
    uint16 array of bfloat16 bit patterns as ``torch.bfloat16``. Read-only
    arrays (memory-mapped files opened with mode "r"), which DLPack cannot
    export, go through ``torch.from_numpy``: do not write to those tensors."""
    a = np.asarray(a) if not isinstance(a, np.ndarray) else a
    if a.dtype == np.uint16:
        if not bfloat16:
            raise TypeError("uint16 arrays are bfloat16 bit patterns here: pass bfloat16=True")
        return tensor(a.view(np.int16)).view(torch.bfloat16)
    if a.dtype == np.uint32:
        a = a.view(np.int32)
    if not a.flags.writeable:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            return torch.from_numpy(a)
    if a.size == 0:
        return torch.from_numpy(a)
    return torch.from_dlpack(a)


# ---------------------------------------------------------------------------
# Minibatches as tensors


_NP_TO_TORCH = {
    np.dtype("<i8"): torch.int64, np.dtype("<i4"): torch.int32, np.dtype("<f4"): torch.float32,
    np.dtype("<f2"): torch.float16, np.dtype("<u2"): torch.bfloat16,
}


class TorchBlock:
    """One layer of a TorchBatch: ``indptr``/``indices`` (graphmill's
    convention: in-edges of destination i are indices[indptr[i]:indptr[i+1]],
    source positions), ``size`` = (num_src, num_dst) and ``edge_index``
    (PyG's [2, E] int64 source/destination positions, built on first use on
    the block's device), ``edge_ids`` and ``edge_weight`` when sent."""

    __slots__ = ("num_src", "num_dst", "indptr", "indices", "edge_ids", "edge_weight", "_edge_index", "_dst")

    def __init__(self, num_src, num_dst, indptr, indices, edge_ids=None, edge_weight=None):
        self.num_src, self.num_dst = num_src, num_dst
        self.indptr, self.indices = indptr, indices
        self.edge_ids, self.edge_weight = edge_ids, edge_weight
        self._edge_index = None
        self._dst = None

    @property
    def size(self):
        return (self.num_src, self.num_dst)

    @property
    def num_edges(self):
        return self.indices.shape[0]

    @property
    def dst_index(self):
        """Destination position of every edge (int64)."""
        if self._dst is None:
            counts = self.indptr[1:] - self.indptr[:-1]
            self._dst = torch.repeat_interleave(torch.arange(self.num_dst, device=self.indptr.device), counts)
        return self._dst

    @property
    def edge_index(self):
        """PyG's edge_index: int64 [2, num_edges], row 0 source positions,
        row 1 destination positions."""
        if self._edge_index is None:
            self._edge_index = torch.stack([self.indices.long(), self.dst_index])
        return self._edge_index

    def __repr__(self):
        return f"TorchBlock(src={self.num_src}, dst={self.num_dst}, edges={self.num_edges}, device={self.indices.device})"


class TorchBatch:
    """A minibatch as PyTorch tensors, in PyG's NeighborLoader/NeighborSampler
    terms: ``n_id`` (int64 global ids of the input nodes), ``x`` (their
    feature rows), ``y`` (the seeds' labels, int32 as sent: call
    ``y.long()`` for PyTorch's losses), ``batch_size`` (seeds = the first
    batch_size nodes), ``blocks`` (TorchBlock per layer, input first) and
    ``adjs`` ([EdgeIndex(edge_index, e_id, size)] per layer, PyG
    NeighborSampler's form; e_id the blocks' edge_ids, None unless
    sent)."""

    __slots__ = ("n_id", "x", "y", "batch_size", "blocks", "sender", "epoch", "sequence",
                 "index", "feature_dtype", "halo", "raw", "cache_stats")

    @property
    def adjs(self):
        return [EdgeIndex(b.edge_index, b.edge_ids, b.size) for b in self.blocks]

    @property
    def device(self):
        return self.n_id.device

    @property
    def seeds(self):
        return self.n_id[:self.batch_size]

    def to(self, device, non_blocking=False):
        """A copy of the batch on ``device``."""
        out = TorchBatch()
        mv = lambda t: None if t is None else t.to(device, non_blocking=non_blocking)  # noqa: E731
        out.n_id, out.x, out.y = mv(self.n_id), mv(self.x), mv(self.y)
        out.blocks = [TorchBlock(b.num_src, b.num_dst, mv(b.indptr), mv(b.indices), mv(b.edge_ids), mv(b.edge_weight))
                      for b in self.blocks]
        for k in ("batch_size", "sender", "epoch", "sequence", "index", "feature_dtype", "raw", "cache_stats"):
            setattr(out, k, getattr(self, k, None))
        out.halo = None if self.halo is None else [(mv(n), mv(r)) for n, r in self.halo]
        return out

    def __repr__(self):
        xs = f", x={tuple(self.x.shape)} {self.x.dtype}" if self.x is not None else ""
        return (f"TorchBatch(batch_size={self.batch_size}, n_id={self.n_id.shape[0]}{xs}, "
                f"blocks={self.blocks}, device={self.device})")


def _fill(tb, mb, conv):
    """Fills TorchBatch tb from MiniBatch mb, converting each numpy view with
    conv(array) -> tensor."""
    t = lambda a: None if a is None else conv(a)  # noqa: E731
    tb.n_id = conv(mb.n_id)
    tb.x = t(mb.x)
    tb.y = t(mb.y)
    tb.batch_size = mb.batch_size
    tb.blocks = [TorchBlock(b.num_src, b.num_dst, conv(b.indptr), conv(b.indices), t(b.edge_ids), t(b.edge_weight))
                 for b in mb.blocks]
    tb.sender, tb.epoch, tb.sequence = mb.sender, mb.epoch, mb.sequence
    tb.index = mb.index
    tb.feature_dtype = mb.feature_dtype
    tb.halo = None if mb.halo is None else [(conv(n), t(r)) for n, r in mb.halo]
    tb.raw = mb
    tb.cache_stats = None
    return tb


def to_torch(mb, device=None, non_blocking=False):
    """Converts a wire MiniBatch to a TorchBatch. On the CPU (device None or
    "cpu") every tensor shares the batch's memory through DLPack (no copy;
    the frame must be writable, as the Loader's are); on another device the
    tensors are copied there."""
    bf16 = mb.feature_dtype == "bfloat16"

    def conv(a):
        if a.dtype == np.uint16:
            return tensor(a, bfloat16=bf16)
        return tensor(a)

    tb = _fill(TorchBatch(), mb, conv)
    if device is not None and torch.device(device).type != "cpu":
        tb = tb.to(device, non_blocking=non_blocking)
    return tb


class DeviceStager:
    """Moves whole frames to a device: each frame's bytes are copied into a
    pinned host buffer (one of ``depth`` reused ones), sent to the device
    with one asynchronous copy on a side stream into a buffer from PyTorch's
    caching allocator, and the batch's tensors are views of that device copy
    at the frame's section offsets (64-byte aligned). ``stage`` returns at
    once; ``wait`` makes the compute stream wait for the copy's event (no
    host block), so the copy of batch k+1 overlaps the step on batch k. A
    staged batch stays valid as long as it is referenced.

    On a CPU ``device`` the same path runs without pinning or streams (the
    tests use it to check the views)."""

    def __init__(self, device, depth=3):
        self.device = torch.device(device)
        self.cuda = self.device.type == "cuda"
        if self.cuda and not torch.cuda.is_available():
            raise GraphmillError(f"device {self.device} asked for, but PyTorch sees no CUDA device")
        self.depth = depth
        self._host = [None] * depth
        self._events = [None] * depth
        self._next = 0
        self.stream = torch.cuda.Stream(self.device) if self.cuda else None
        self.bytes_to_device = 0

    def _pinned(self, i, n):
        h = self._host[i]
        if h is None or h.numel() < n:
            self._host[i] = h = torch.empty(max(n, int(n * 1.25)), dtype=torch.uint8, pin_memory=self.cuda)
        return h

    def stage(self, mb):
        """Starts moving MiniBatch mb to the device and returns its
        TorchBatch (its tensors are ready once ``wait`` was called on it, or
        at once on the CPU)."""
        i = self._next
        self._next = (i + 1) % self.depth
        n = mb.nbytes
        if self._events[i] is not None:
            # pinned buffer i was last copied from `depth` batches ago: that
            # copy must be done before the buffer is overwritten
            self._events[i].synchronize()
        host = self._pinned(i, n)
        host[:n].numpy()[:] = mb.buffer[mb.offset:mb.offset + n]  # the one host copy: into pinned memory
        if self.cuda:
            with torch.cuda.stream(self.stream):
                dev = torch.empty(n, dtype=torch.uint8, device=self.device)
                dev.copy_(host[:n], non_blocking=True)
                ev = torch.cuda.Event()
                ev.record(self.stream)
            self._events[i] = ev
        else:
            dev = host[:n].clone()
            ev = None
        self.bytes_to_device += n
        base = mb.buffer.__array_interface__["data"][0] + mb.offset

        def conv(a):
            off = a.__array_interface__["data"][0] - base
            return dev[off:off + a.nbytes].view(_NP_TO_TORCH[a.dtype]).reshape(a.shape)

        tb = _fill(TorchBatch(), mb, conv)
        tb.raw = (ev, dev)
        return tb

    def wait(self, tb):
        """Makes the current stream wait for tb's copy (no host block) and
        returns tb."""
        if isinstance(tb.raw, tuple):
            ev, dev = tb.raw
            if self.cuda:
                cur = torch.cuda.current_stream(self.device)
                cur.wait_event(ev)
                # the buffer was allocated on the side stream but is read on
                # this one: keep the allocator from reusing it too early
                dev.record_stream(cur)
            tb.raw = None
        return tb



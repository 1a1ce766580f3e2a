"""PyTorch side of graphmill: zero-copy tensors, device staging and the
device-resident feature cache.

Importing this module needs PyTorch (>= 1.13 for ``torch.from_dlpack``);
the rest of the package does not.
"""

import collections
import threading

import numpy as np
import torch

from . import _units
from ._tensors import DeviceStager, TorchBatch, TorchBlock, tensor, to_torch  # noqa: F401 (public here)
from .dataset import Dataset, PartitionedDataset, open_dataset
from .errors import GraphmillError

__all__ = ["FeatureCache", "CacheStats", "History", "push_and_pull", "tensor", "features"]


def features(ds):
    """The features of a native dataset as one tensor over the memory map
    (float32, float16 or bfloat16 as stored), without copying."""
    if ds.features is None:
        return None
    return tensor(ds.features, bfloat16=ds.feature_dtype == "bfloat16")


_TORCH_DTYPE = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
_DTYPE_NAME = {v: k for k, v in _TORCH_DTYPE.items()}


CacheStats = collections.namedtuple(
    "CacheStats", "lookups hits hit_rate bytes_to_device bytes_peer",
)
CacheStats.__doc__ = """Counts of one gather (or of all gathers so far).

lookups: rows asked for; hits: rows found in a device shard;
hit_rate: hits / lookups; bytes_to_device: feature bytes that crossed
the host-to-device link (the misses; 0 when the output device is the CPU
and the rows are read in place); bytes_peer: bytes read from another
device's shard."""


class FeatureCache:
    """Keeps the hottest feature rows of a dataset resident on one or more
    devices under a byte budget, as quiver's ``Feature`` and gglspeedup's
    ``CGPUFeature``; with several devices the cached rows are sharded across
    them (as ``Multi_CGPUFeature``) and each device reads the others' shards.

    ``gather(n_id)`` returns the rows of ``n_id`` on ``device`` in ``n_id``
    order: hits are gathered on their devices through a node-id -> slot
    table, misses are read from the host (the dataset's memory map, or the
    rows the sampler service sent) and copied over.

    Arguments:
      dataset: a ``Dataset`` / ``PartitionedDataset`` or a path (or "cora"),
        a ``Loader`` of a sampler service (rows come through its
        ``get_rows``; policy "presample" then, with counts= or loader=), or
        the rows themselves: a 2-D CPU tensor or numpy array (a PyG
        ``data.x``; policy "degree" then needs ``out_degrees``).
      budget: bytes of feature rows per device ("4GiB", "512MiB", an int),
        or a fraction of all rows over all devices ("10%"). The node -> slot
        table adds 4 bytes per node in host memory.
      policy: "degree" caches the nodes of highest out-degree (the ones
        neighbour sampling reaches most); "presample" caches the nodes seen
        most often in ``presample_batches`` batches of ``loader`` (or in a
        given ``counts`` array: visits per node).
      devices: where the shards live, e.g. ["cuda:0", "cuda:1"] or ["cpu"].
      device: where ``gather`` puts its output (default: ``devices[0]``).
      out_degrees: each node's out-degree, for policy "degree" over rows
        given as a tensor or array.

    ``gather`` may be called from several threads at once: hits and misses
    are told apart on the host (no wait for the device), and its device
    work goes to the calling thread's current stream.
    """

    def __init__(self, dataset, budget="4GiB", policy="degree", devices=("cpu",), device=None,
                 counts=None, loader=None, presample_batches=16, out_degrees=None):
        from .loader import Loader

        if isinstance(dataset, (str, bytes)) or hasattr(dataset, "__fspath__"):
            dataset = open_dataset(dataset)
        self._x = None  # the rows, when given as a tensor
        self._degrees = None if out_degrees is None else np.asarray(out_degrees)
        if isinstance(dataset, (torch.Tensor, np.ndarray)):
            x = dataset if isinstance(dataset, torch.Tensor) else tensor(dataset)
            if x.dim() != 2 or x.device.type != "cpu":
                raise ValueError(f"rows given as a tensor must be 2-D and on the CPU, got {tuple(x.shape)} on {x.device}")
            if x.dtype not in _DTYPE_NAME:
                raise ValueError(f"rows of {x.dtype}: want float32, float16 or bfloat16")
            self._x = x.detach()
            dataset = None
            self.num_nodes, self.dim = int(x.shape[0]), int(x.shape[1])
            self.feature_dtype = _DTYPE_NAME[x.dtype]
            self._rows = None
        elif isinstance(dataset, Loader):
            # A service on another machine: rows come through GetRows, and
            # only the misses come in the frames of a Loader given this cache.
            svc = dataset
            dataset = None
            self.num_nodes = svc.num_nodes
            self.dim = int(svc.info.feature_dim)
            self.feature_dtype = "float32"
            self._rows = svc.get_rows
        elif not isinstance(dataset, (Dataset, PartitionedDataset)):
            raise TypeError(f"dataset must be a graphmill dataset, a path, a Loader or a 2-D tensor of rows, got {type(dataset).__name__}")
        self.dataset = dataset
        if dataset is None:
            pass
        elif isinstance(dataset, PartitionedDataset):
            p0 = dataset.part(0)
            self.num_nodes = dataset.num_nodes
            self.dim = p0.feature_dim
            self.feature_dtype = p0.feature_dtype
            self._rows = dataset.features_of
        else:
            if dataset.features is None:
                raise GraphmillError(f"{dataset.dir}: the dataset has no features to cache")
            self.num_nodes = dataset.num_nodes
            self.dim = dataset.feature_dim
            self.feature_dtype = dataset.feature_dtype
            feats = dataset.features
            self._rows = lambda ids: feats[ids]
        self.dtype = _TORCH_DTYPE[self.feature_dtype]
        self.row_bytes = self.dim * (4 if self.feature_dtype == "float32" else 2)
        if isinstance(devices, (str, torch.device)):
            devices = [devices]
        self.devices = [torch.device(d) for d in devices]
        if not self.devices:
            raise ValueError("devices is empty")
        for d in self.devices:
            if d.type == "cuda" and not torch.cuda.is_available():
                raise GraphmillError(f"device {d} asked for, but PyTorch sees no CUDA device")
        self.device = torch.device(device) if device is not None else self.devices[0]
        ndev = len(self.devices)

        if isinstance(budget, str) and budget.strip().endswith("%"):
            frac = float(budget.strip()[:-1]) / 100
            if not 0 <= frac <= 1:
                raise ValueError(f"budget {budget!r}: a percentage of the rows between 0% and 100%")
            capacity = int(round(frac * self.num_nodes))
        else:
            per_dev = _units.parse_size(budget) // max(self.row_bytes, 1)
            capacity = min(self.num_nodes, per_dev * ndev)
        self.capacity = capacity
        self.budget_bytes = capacity * self.row_bytes

        if policy == "degree":
            score = self._out_degrees()
        elif policy == "presample":
            if counts is None:
                if loader is None:
                    raise ValueError('policy="presample" needs counts (visits per node) or a loader to presample from')
                from .loader import presample_counts

                counts = presample_counts(loader, presample_batches)
            score = np.asarray(counts)
            if score.shape != (self.num_nodes,):
                raise ValueError(f"counts has shape {score.shape}, want ({self.num_nodes},)")
        else:
            raise ValueError(f'policy {policy!r}: want "degree" or "presample"')
        self.policy = policy
        # Hottest first; ties broken by node id so the choice is deterministic.
        order = np.argsort(-np.asarray(score, dtype=np.int64), kind="stable")[:capacity]
        self.cached_ids = order
        # Row r of the ranking goes to device r % ndev, slot r // ndev: the
        # hottest rows are spread evenly over the devices.
        # The node -> slot table lives in host memory (4 bytes per node,
        # outside the budget): gathers split hits from misses without
        # waiting for the device.
        table = np.full(self.num_nodes, -1, dtype=np.int32)
        table[order] = np.arange(capacity, dtype=np.int32)
        self._ndev = ndev
        self._table = table
        self.shards = []
        for d, dev in enumerate(self.devices):
            ids = order[d::ndev]
            shard = torch.empty((len(ids), self.dim), dtype=self.dtype, device=dev)
            step = max(1, (64 << 20) // max(self.row_bytes, 1))
            for lo in range(0, len(ids), step):
                rows = self._host_rows(ids[lo:lo + step])
                shard[lo:lo + len(rows)].copy_(rows)
            self.shards.append(shard)
        self._totals = [0, 0, 0, 0]
        self._lock = threading.Lock()
        self.last = CacheStats(0, 0, 0.0, 0, 0)
        self.batches = 0

    def _out_degrees(self):
        if self._degrees is not None:
            if self._degrees.shape != (self.num_nodes,):
                raise ValueError(f"out_degrees has shape {self._degrees.shape}, want ({self.num_nodes},)")
            return self._degrees
        ds = self.dataset
        if ds is None:
            raise ValueError('policy="degree" needs the dataset (or out_degrees=); with a service use policy="presample" '
                             '(counts= or loader=)')
        if isinstance(ds, PartitionedDataset):
            deg = np.zeros(self.num_nodes, np.int64)
            for p in ds.parts:
                deg[p.global_ids[:p.num_inner]] = p.global_out_degrees[:p.num_inner]
            return deg
        return ds.out_degrees()

    def _host_rows(self, ids, pin=False):
        """Rows of ``ids`` read on the host as a tensor (in pinned memory
        with pin, where rows given as a tensor are gathered straight in)."""
        ids = np.asarray(ids, dtype=np.int64)
        if self._x is not None:
            out = torch.empty((len(ids), self.dim), dtype=self.dtype, pin_memory=pin)
            return torch.index_select(self._x, 0, torch.from_numpy(ids), out=out)
        rows = tensor(np.ascontiguousarray(self._rows(ids)), bfloat16=self.feature_dtype == "bfloat16")
        return rows.pin_memory() if pin else rows

    def contains(self, n_id):
        """A bool tensor on ``device``: which of ``n_id`` are cached."""
        ids = torch.as_tensor(n_id).cpu().long().numpy()
        return torch.from_numpy(self._table[ids] >= 0).to(self.device)

    def gather(self, n_id, miss_rows=None, pin=True, host_rows=None):
        """Returns the feature rows of the nodes ``n_id`` on ``self.device``,
        in ``n_id`` order. ``miss_rows``, if given, holds the rows of the
        nodes not cached (in ``n_id`` order); ``host_rows``, if given, holds
        every node's row on the host (what the sampler service sent) and the
        misses are taken from it; otherwise misses are read from the dataset
        on the host. Only the misses cross to the device; host rows bound
        for a CUDA device are staged in pinned memory. ``last`` holds this
        gather's counts."""
        out, self.last = self.gather_with_stats(n_id, miss_rows, pin, host_rows)
        return out

    def gather_with_stats(self, n_id, miss_rows=None, pin=True, host_rows=None):
        """``gather``, returning ``(rows, CacheStats of this gather)``
        without touching ``last`` (for callers on several threads)."""
        ids = torch.as_tensor(n_id).cpu().long()  # a host copy: the split is made here
        n = ids.shape[0]
        # The split in numpy: np.flatnonzero took 0.11 ms for two passes over
        # 100k flags where torch's nonzero took 1.36 ms.
        code_np = np.take(self._table, ids.numpy())
        hit = code_np >= 0
        hidx_np = np.flatnonzero(hit)
        hidx, midx = torch.from_numpy(hidx_np), torch.from_numpy(np.flatnonzero(~hit))
        nhit, nmiss = int(hidx.numel()), int(midx.numel())
        cuda = self.device.type == "cuda"
        pin = pin and cuda

        def dev(t, d):
            """A host index tensor on device d (staged pinned, asynchronous)."""
            if d.type != "cuda":
                return t
            return (t.pin_memory() if pin else t).to(d, non_blocking=pin)

        out = torch.empty((n, self.dim), dtype=self.dtype, device=self.device)
        peer = 0
        if nhit:
            c = torch.from_numpy(np.take(code_np, hidx_np).astype(np.int64))
            if self._ndev == 1:
                parts = [(0, hidx, c)]
            else:
                dev_of = torch.remainder(c, self._ndev)
                slot = torch.div(c, self._ndev, rounding_mode="floor")
                parts = [(d, hidx[dev_of == d], slot[dev_of == d]) for d in range(self._ndev)]
            for d, idx, slot in parts:
                if not idx.numel():
                    continue
                shard = self.shards[d]
                # index_select: indexing (a[i]) is 10x slower on CPU; index_put_ is
                # the fastest scatter there (index_copy_ takes 1.5x as long)
                rows = torch.index_select(shard, 0, dev(slot, shard.device))
                if shard.device != self.device:
                    peer += int(idx.numel()) * self.row_bytes
                out.index_put_((dev(idx, self.device),), rows.to(self.device, non_blocking=True))
        to_dev = 0
        if nmiss:
            if miss_rows is None and host_rows is not None:
                hr = host_rows if isinstance(host_rows, torch.Tensor) else tensor(host_rows, bfloat16=self.feature_dtype == "bfloat16")
                if hr.shape != (n, self.dim):
                    raise ValueError(f"host_rows has shape {tuple(hr.shape)}, want ({n}, {self.dim})")
                miss_rows = torch.index_select(hr, 0, midx.to(hr.device))
            if miss_rows is None:
                host = self._host_rows(torch.index_select(ids, 0, midx).numpy(), pin=pin)
            else:
                host = miss_rows if isinstance(miss_rows, torch.Tensor) else tensor(miss_rows, bfloat16=self.feature_dtype == "bfloat16")
                if host.shape != (nmiss, self.dim):
                    raise ValueError(f"miss_rows has shape {tuple(host.shape)}, want ({nmiss}, {self.dim})")
                if pin and host.device.type == "cpu" and not host.is_pinned():
                    host = host.pin_memory()
            if cuda and host.device.type == "cpu":
                to_dev = nmiss * self.row_bytes
            out.index_put_((dev(midx, self.device),), host.to(self.device, non_blocking=True))
        with self._lock:
            t = self._totals
            t[0] += n
            t[1] += nhit
            t[2] += to_dev
            t[3] += peer
            self.batches += 1
        return out, CacheStats(n, nhit, nhit / n if n else 0.0, to_dev, peer)

    @property
    def stats(self):
        """Totals over every gather so far (hit_rate over all lookups)."""
        t = self._totals
        return CacheStats(t[0], t[1], t[1] / t[0] if t[0] else 0.0, t[2], t[3])

    @property
    def hit_rate(self):
        """Fraction of looked-up rows found in a device shard so far."""
        return self.stats.hit_rate

    def bytes_per_batch(self):
        """Mean host-to-device feature bytes per gather so far."""
        return self._totals[2] / self.batches if self.batches else 0.0

    def reset_stats(self):
        """Zeroes the counters (e.g. after a warm-up epoch)."""
        with self._lock:
            self._totals = [0, 0, 0, 0]
            self.batches = 0

    def __repr__(self):
        devs = ",".join(str(d) for d in self.devices)
        return (f"FeatureCache({self.capacity}/{self.num_nodes} rows ({_units.human_bytes(self.budget_bytes)}) "
                f"of {self.dim}x{self.feature_dtype} on {devs}, policy={self.policy}, hit rate {self.hit_rate:.1%})")


# load_state_dict's tensor dtype per stored dtype: values kept exactly
# (unsigned ones widened: torch lacks uint16 and up).
_STATE_DTYPE = {"F64": torch.float64, "F32": torch.float32, "F16": torch.float32, "BF16": torch.float32,
                "I64": torch.int64, "I32": torch.int32, "I16": torch.int16, "I8": torch.int8,
                "U64": torch.int64, "U32": torch.int64, "U16": torch.int32, "U8": torch.uint8, "BOOL": torch.bool}


def load_state_dict(path):
    """A graphmill checkpoint as a PyTorch state_dict (PyG's parameter
    names) and the model configuration: ``state, config =
    load_state_dict(path); model.load_state_dict(state)``. Floating
    tensors come as float32 (F16 and BF16 converted, F64 kept as float64),
    integers and BOOL with their values (I8..I64 as stored, U8 as uint8,
    U16 as int32, U32 and U64 as int64), each tensor a copy."""
    from .checkpoint import _read_checkpoint
    from .dataset import bf16_to_float32

    state, cfg, dtypes = _read_checkpoint(path)
    out = {}
    for k, v in state.items():
        dt = dtypes[k]
        if dt == "BF16":
            v = bf16_to_float32(v)
        elif dt == "U64" and v.size and int(v.max()) >= 1 << 63:
            raise GraphmillError(f"{path}: tensor {k} (U64) holds {int(v.max())}, past int64: PyTorch cannot hold it")
        want = _STATE_DTYPE[dt]
        out[k] = torch.from_numpy(np.array(v, dtype=torch.empty(0, dtype=want).numpy().dtype))
    return out, cfg


class History:
    """GNNAutoScale's historical embeddings of one layer: a row per node,
    ``dim`` wide, held in host memory (pinned when ``device`` is a GPU, so
    that pulls and pushes are asynchronous copies). ``pull(n_id)`` returns
    the rows of n_id on ``device``; ``push(x, n_id)`` stores x's rows
    (detached). Rows start at zero."""

    def __init__(self, num_nodes, dim, device=None, dtype=torch.float32):
        self.num_nodes, self.dim = int(num_nodes), int(dim)
        self.device = torch.device(device) if device is not None else torch.device("cpu")
        self.pinned = self.device.type == "cuda"
        self.emb = torch.zeros(self.num_nodes, self.dim, dtype=dtype, pin_memory=self.pinned)
        self._pushed = None  # (event, host rows, n_id) of the last asynchronous push

    def reset_parameters(self):
        self._settle()
        self.emb.zero_()

    @property
    def nbytes(self):
        return self.emb.numel() * self.emb.element_size()

    def _settle(self):
        """Lands the last asynchronous push in the host rows."""
        if self._pushed is not None:
            ev, rows, n_id = self._pushed
            self._pushed = None
            ev.synchronize()
            self.emb.index_copy_(0, n_id, rows)

    def pull(self, n_id=None):
        """The rows of n_id (all rows when None) on the history's device."""
        self._settle()
        if n_id is None:
            rows = self.emb
        else:
            idx = _index(n_id)
            rows = torch.empty(len(idx), self.dim, dtype=self.emb.dtype, pin_memory=self.pinned)
            torch.index_select(self.emb, 0, idx, out=rows)
        return rows.to(self.device, non_blocking=self.pinned)

    def push(self, x, n_id=None, offset=None, count=None):
        """Stores the rows of x (detached) as the rows of n_id (all rows
        when None; offset/count, GNNAutoScale's contiguous ranges, are
        accepted for its signature and not needed)."""
        self._settle()
        x = x.detach()
        idx = torch.arange(self.num_nodes) if n_id is None else _index(n_id)
        if len(idx) != len(x):
            raise ValueError(f"push of {len(x)} rows for {len(idx)} nodes")
        if x.device.type == "cuda":
            rows = torch.empty(x.shape, dtype=self.emb.dtype, pin_memory=True)
            rows.copy_(x, non_blocking=True)
            ev = torch.cuda.Event()
            ev.record()
            self._pushed = (ev, rows, idx)
            return
        self.emb.index_copy_(0, idx, x.to(self.emb.dtype))

    def __repr__(self):
        return f"History({self.num_nodes} x {self.dim}, {self.device}{', pinned' if self.pinned else ''})"


def _index(n_id):
    """Node ids (a tensor, numpy array or list) as an int64 CPU tensor."""
    if isinstance(n_id, torch.Tensor):
        return n_id.to("cpu", torch.int64)
    return torch.as_tensor(np.asarray(n_id, dtype=np.int64))


def push_and_pull(history, x, batch_size=None, n_id=None, offset=None, count=None):
    """GNNAutoScale's one line in a layer's forward: pushes the first
    batch_size rows of x (the batch's own nodes, n_id[:batch_size]) to the
    history and returns x with the other rows (the halo) replaced by their
    historical embeddings, moved to x's device and dtype (a history kept
    elsewhere works). Without n_id (full-graph inference) it pushes every
    row and returns x unchanged."""
    if n_id is None:
        history.push(x)
        return x
    if batch_size is None:
        raise ValueError("push_and_pull needs batch_size with n_id")
    history.push(x[:batch_size], n_id[:batch_size], offset, count)
    halo = history.pull(n_id[batch_size:])
    # on x's device and in its dtype, whatever the history's
    halo = halo.to(device=x.device, dtype=x.dtype, non_blocking=halo.device.type == "cpu" and halo.is_pinned())
    return torch.cat([x[:batch_size], halo], dim=0)

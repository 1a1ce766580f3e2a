"""PyTorch side of graphmill: zero-copy tensors, device staging and the
device-resident feature cache.

Importing this module needs PyTorch (>= 1.13 for ``torch.from_dlpack``);
the rest of the package does not.
"""

import collections
import warnings

import numpy as np
import torch

from . import _units
from .dataset import Dataset, PartitionedDataset, open_dataset
from .errors import GraphmillError

__all__ = ["FeatureCache", "CacheStats", "tensor", "features"]


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


def features(ds):
    """The features of a native dataset as one tensor over the memory map
    (float32, float16 or bfloat16 as stored), without copying."""
    if ds.features is None:
        return None
    return tensor(ds.features, bfloat16=ds.feature_dtype == "bfloat16")


_TORCH_DTYPE = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


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
      dataset: a ``Dataset`` / ``PartitionedDataset`` or a path (or "cora").
      budget: bytes of feature rows per device ("4GiB", "512MiB", an int),
        or a fraction of all rows over all devices ("10%").
      policy: "degree" caches the nodes of highest out-degree (the ones
        neighbour sampling reaches most); "presample" caches the nodes seen
        most often in ``presample_batches`` batches of ``loader`` (or in a
        given ``counts`` array: visits per node).
      devices: where the shards live, e.g. ["cuda:0", "cuda:1"] or ["cpu"].
      device: where ``gather`` puts its output (default: ``devices[0]``).
    """

    def __init__(self, dataset, budget="4GiB", policy="degree", devices=("cpu",), device=None,
                 counts=None, loader=None, presample_batches=16):
        if isinstance(dataset, (str, bytes)) or hasattr(dataset, "__fspath__"):
            dataset = open_dataset(dataset)
        if not isinstance(dataset, (Dataset, PartitionedDataset)):
            raise TypeError(f"dataset must be a graphmill dataset or a path, got {type(dataset).__name__}")
        self.dataset = dataset
        if isinstance(dataset, PartitionedDataset):
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
                counts = np.zeros(self.num_nodes, np.int64)
                for i, b in enumerate(loader):
                    counts += np.bincount(np.asarray(b.n_id), minlength=self.num_nodes)
                    if i + 1 >= presample_batches:
                        break
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
        table = np.full(self.num_nodes, -1, dtype=np.int64)
        table[order] = np.arange(capacity, dtype=np.int64)
        self._ndev = ndev
        self._table = torch.from_numpy(table).to(self.device)
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
        self.last = CacheStats(0, 0, 0.0, 0, 0)
        self.batches = 0

    def _out_degrees(self):
        ds = self.dataset
        if isinstance(ds, PartitionedDataset):
            deg = np.zeros(self.num_nodes, np.int64)
            for p in ds.parts:
                deg[p.global_ids[:p.num_inner]] = p.global_out_degrees[:p.num_inner]
            return deg
        return ds.out_degrees()

    def _host_rows(self, ids):
        """Rows of ``ids`` read from the dataset on the host as a tensor."""
        rows = self._rows(np.asarray(ids, dtype=np.int64))
        return tensor(np.ascontiguousarray(rows), bfloat16=self.feature_dtype == "bfloat16")

    def contains(self, n_id):
        """A bool tensor: which of ``n_id`` are cached."""
        return self._table[torch.as_tensor(n_id, device=self.device).long()] >= 0

    def gather(self, n_id, miss_rows=None, pin=True):
        """Returns the feature rows of the nodes ``n_id`` on ``self.device``,
        in ``n_id`` order. ``miss_rows``, if given, holds the rows of the
        nodes not cached (in ``n_id`` order: what the sampler service sent
        for them); otherwise misses are read from the dataset on the host.
        Host rows bound for a CUDA device are staged in pinned memory."""
        if isinstance(n_id, np.ndarray):
            n_id = tensor(n_id)
        ids = n_id.to(self.device, non_blocking=True).long()
        n = ids.shape[0]
        out = torch.empty((n, self.dim), dtype=self.dtype, device=self.device)
        code = self._table[ids]
        hit = code >= 0
        nhit = 0
        peer = 0
        if self._ndev == 1:
            hidx = hit.nonzero().squeeze(1)
            nhit = int(hidx.numel())
            if nhit:
                out[hidx] = self.shards[0][code[hidx]].to(self.device, non_blocking=True)
        else:
            dev_of = torch.remainder(code, self._ndev)
            slot = torch.div(code, self._ndev, rounding_mode="floor")
            for d, shard in enumerate(self.shards):
                idx = (hit & (dev_of == d)).nonzero().squeeze(1)
                k = int(idx.numel())
                if not k:
                    continue
                nhit += k
                rows = shard[slot[idx].to(shard.device)]
                if shard.device != self.device:
                    peer += k * self.row_bytes
                out[idx] = rows.to(self.device, non_blocking=True)
        midx = (~hit).nonzero().squeeze(1)
        nmiss = int(midx.numel())
        to_dev = 0
        if nmiss:
            if miss_rows is None:
                host = self._host_rows(ids[midx].cpu().numpy())
            else:
                host = miss_rows if isinstance(miss_rows, torch.Tensor) else tensor(miss_rows, bfloat16=self.feature_dtype == "bfloat16")
                if host.shape != (nmiss, self.dim):
                    raise ValueError(f"miss_rows has shape {tuple(host.shape)}, want ({nmiss}, {self.dim})")
            if self.device.type == "cuda":
                if pin and host.device.type == "cpu" and not host.is_pinned():
                    host = host.pin_memory()
                if host.device.type == "cpu":
                    to_dev = nmiss * self.row_bytes
            out[midx] = host.to(self.device, non_blocking=True)
        self.last = CacheStats(n, nhit, nhit / n if n else 0.0, to_dev, peer)
        t = self._totals
        t[0] += n
        t[1] += nhit
        t[2] += to_dev
        t[3] += peer
        self.batches += 1
        return out

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
        self._totals = [0, 0, 0, 0]
        self.batches = 0

    def __repr__(self):
        devs = ",".join(str(d) for d in self.devices)
        return (f"FeatureCache({self.capacity}/{self.num_nodes} rows ({_units.human_bytes(self.budget_bytes)}) "
                f"of {self.dim}x{self.feature_dtype} on {devs}, policy={self.policy}, hit rate {self.hit_rate:.1%})")

"""``graphmill.NeighborLoader``: PyG's NeighborLoader, sampled by graphmill.

The user's graph (a PyG ``Data``, an ``(edge_index, x[, y])`` tuple, a
scipy sparse adjacency or a graphmill dataset directory) is handed to a
local ``graphmill serve sampler`` as a dataset in shared memory
(``/dev/shm``): its in-neighbour lists (CSC) and the seeds, nothing else.
The service draws each batch's neighbours on its own threads, as PyG's
NeighborLoader does (each hop draws only for the nodes the hop before
reached first), and sends the blocks through shared memory; this process
turns them into PyG's batch layout. The service also gathers ``x`` into
the shared payloads when it can map it: a memory map of a whole .npy file
(``np.load(mmap_mode="r")``, a dataset's features) is mapped from that
file, a float32 tensor after torch moves its storage into shared memory
(in place). Other features are gathered here from the user's own arrays
on a small thread pool, ahead of the consumer; ``y`` always is.
"""

import collections
import concurrent.futures
import contextlib
import json
import operator
import os
import shutil
import tempfile
import threading
import warnings
import weakref

import numpy as np

from . import _cli
from ._adjs import EdgeIndex
from .dataset import npy_header
from .errors import GraphmillError
from .loader import Loader

_PYG_IGNORED = ("persistent_workers", "pin_memory", "filter_per_worker", "prefetch_factor", "timeout_s",
                "worker_init_fn", "multiprocessing_context", "generator", "collate_fn")


def _torch():
    try:
        import torch
    except ImportError:
        return None
    return torch


def _numpy(a, name):
    """a (numpy, torch CPU tensor, list) as a numpy array, without a copy
    where possible."""
    if a is None:
        return None
    t = _torch()
    if t is not None and isinstance(a, t.Tensor):
        if a.device.type != "cpu":
            raise ValueError(f"{name} is on {a.device}: give graphmill.NeighborLoader CPU tensors (batches can go to the device after)")
        return a.detach().numpy()
    return np.asarray(a)


class _IdMap:
    """A packed dataset's ids ('graphmill data pack'): node v of the graph
    is node orig[v] to the user. x_packed and y_packed say whether x and y
    are the dataset's own rows (in its order) rather than the user's (in
    the original order)."""

    def __init__(self, orig_ids, x_packed, y_packed):
        self.orig = np.asarray(orig_ids, dtype=np.int64)
        self.x_packed, self.y_packed = x_packed, y_packed

    def __call__(self, n_id):
        """The user's ids of the graph's nodes n_id, and the ids to gather
        x and y by."""
        user = self.orig[n_id]
        return user, (n_id if self.x_packed else user), (n_id if self.y_packed else user)

    def to_graph(self, ids):
        """The graph's ids of the user's ids."""
        new = np.empty(len(self.orig), dtype=np.int32)
        new[self.orig] = np.arange(len(self.orig), dtype=np.int32)
        return new[ids]


class _Graph:
    """The user's graph as in-neighbour lists, with x and y; ids maps a
    packed dataset's ids to the user's (None otherwise)."""

    def __init__(self, indptr, indices, num_nodes, x=None, y=None, edge_weight=None, files=None, pyg=False, ids=None,
                 node_attrs=None, edge_attrs=None, edge_order=None):
        self.indptr, self.indices, self.num_nodes = indptr, indices, int(num_nodes)
        self.x, self.y, self.edge_weight = x, y, edge_weight
        self.ids = ids
        self.files = files  # a dataset's own array files (linked, not written)
        self.pyg = pyg
        self.node_attrs = node_attrs or {}  # a PyG Data's other per-node tensors (train_mask, ...)
        # a PyG Data's per-edge tensors (edge_attr, ...), and the edge_index
        # column of each CSC position, to slice them by
        self.edge_attrs, self.edge_order = edge_attrs or {}, edge_order
        for name, a in (("x", x), ("y", y), *self.node_attrs.items()):
            if a is not None and len(a) != self.num_nodes:
                raise ValueError(f"{name} has {len(a)} rows for {self.num_nodes} nodes")


def _pyg_attrs(data, n, m):
    """A PyG Data's per-node tensors other than x and y, and its per-edge
    ones (edge_attr, ...; m edges), which batches carry sliced by n_id and
    e_id as PyG's loader does."""
    node, edge = {}, {}
    for key in data.keys() if callable(getattr(data, "keys", None)) else data.keys:
        if key in ("x", "y", "edge_index", "num_nodes", "adj_t"):
            continue
        v = data[key]
        if not hasattr(v, "shape") or not len(v.shape):
            continue
        if data.is_node_attr(key) and v.shape[0] == n:
            node[key] = v
        elif data.is_edge_attr(key) and v.shape[0] == m:
            edge[key] = v
    return node, edge


def _csc(edge_index, num_nodes, keep_order=False):
    """In-neighbour lists (CSC) of edges source edge_index[0] -> target
    edge_index[1]: int64 offsets per target and int32 sources, each
    target's edges in the order given (a stable sort, as PyG's CSC); with
    keep_order, also the edge_index column of each CSC position (int32
    below 2^31 edges, int64 beyond: it lives as long as the loader; None
    where they are the same)."""
    ei = _numpy(edge_index, "edge_index")
    if ei.ndim != 2 or ei.shape[0] != 2:
        raise ValueError(f"edge_index must have shape [2, num_edges], got {list(ei.shape)}")
    if not np.issubdtype(ei.dtype, np.integer):
        raise ValueError(f"edge_index must hold integers, got {ei.dtype}")
    src, dst = ei[0], ei[1]
    if ei.shape[1]:
        lo, hi = int(min(src.min(), dst.min())), int(max(src.max(), dst.max()))
        if lo < 0 or hi >= num_nodes:
            raise ValueError(f"edge_index holds node {lo if lo < 0 else hi}, outside [0, {num_nodes})")
    if num_nodes >= 1 << 31:
        raise ValueError(f"{num_nodes} nodes: graphmill's node ids are int32")
    t = _torch()
    if t is not None:  # torch's stable sort runs on every core
        order = t.sort(t.from_numpy(np.ascontiguousarray(dst)), stable=True)[1].numpy()
    else:
        order = np.argsort(dst, kind="stable")
    indices = src[order].astype(np.int32)
    indptr = np.zeros(num_nodes + 1, dtype=np.int64)
    np.cumsum(np.bincount(dst, minlength=num_nodes), out=indptr[1:])
    if keep_order:
        order = order.astype(np.int32 if len(order) < 1 << 31 else np.int64, copy=False)
        if len(order) and bool(np.all(order[1:] > order[:-1])):
            order = None  # edge_index was in CSC order already: positions are columns
        return indptr, indices, order
    return indptr, indices


def _adj_t_edge_index(adj_t, n):
    """edge_index (int64 [2, E], sources in row 0) of a Data's adj_t: the
    transposed adjacency (entry (i, j) is the edge j -> i), a torch sparse
    tensor (COO or CSR) or a torch_sparse SparseTensor; edges in adj_t's
    row-major order (its values are ignored)."""
    t = _torch()
    if t is not None and isinstance(adj_t, t.Tensor) and adj_t.layout == t.sparse_coo:
        shape = tuple(adj_t.shape)
        row, col = adj_t.coalesce().indices()
    elif t is not None and isinstance(adj_t, t.Tensor) and adj_t.layout == t.sparse_csr:
        shape = tuple(adj_t.shape)
        crow, col = adj_t.crow_indices(), adj_t.col_indices()
        row = t.repeat_interleave(t.arange(len(crow) - 1), crow[1:] - crow[:-1])
    elif callable(getattr(adj_t, "coo", None)) and callable(getattr(adj_t, "sizes", None)):  # torch_sparse.SparseTensor
        shape = tuple(adj_t.sizes())
        row, col, _ = adj_t.coo()
    else:
        raise TypeError(f"adj_t must be a torch sparse tensor or a torch_sparse SparseTensor, not {type(adj_t).__name__}")
    if shape != (n, n):
        raise ValueError(f"adj_t has shape {list(shape)} for {n} nodes: want [{n}, {n}]")
    return t.stack([col.cpu().long(), row.cpu().long()])


def _from_data(data, x=None, y=None, num_nodes=None, edge_attrs=None):
    """_Graph from whatever NeighborLoader was given; edge_attrs ({name:
    per-edge array}) are added to the graph's, in the order of its edges
    (edge_index's columns, a scipy matrix's tocoo() order, a dataset's CSC
    positions)."""
    g = _from_input(data, x=x, y=y, num_nodes=num_nodes)
    for k, a in (edge_attrs or {}).items():
        if a is None:
            continue
        if not hasattr(a, "shape") or len(a.shape) == 0:
            a = np.asarray(a)
        if len(a.shape) == 0 or a.shape[0] != len(g.indices):
            raise ValueError(f"{k} has {a.shape[0] if len(a.shape) else 0} rows for {len(g.indices)} edges: give one per edge")
        g.edge_attrs[k] = a
    return g


def _from_input(data, x=None, y=None, num_nodes=None):
    if isinstance(data, (str, os.PathLike)):
        from .dataset import Dataset

        d = Dataset(_cli.resolve_dataset(data))  # a directory, or a built-in name ("cora") as open_dataset takes
        files = {k: os.path.join(d.dir, d.meta["arrays"][k]["file"]) for k in ("indptr", "indices", "edge_weight")
                 + (("labels",) if y is None else ()) if k in d.meta.get("arrays", {})}
        feats = x if x is not None else (d.features_float32() if d.features is not None else None)
        labels = y
        if y is None and d.labels is not None:
            labels = np.asarray(d.labels, dtype=np.int64)  # class labels as torch's losses want them (stored int32)
        return _Graph(d.indptr, d.indices, d.num_nodes, feats, labels, d.edge_weight, files=files,
                      ids=None if d.orig_ids is None else _IdMap(d.orig_ids, x is None, y is None))
    if hasattr(data, "node_types") and hasattr(data, "edge_types"):  # PyG HeteroData
        raise ValueError("heterogeneous graphs (HeteroData) are not supported: give a homogeneous Data "
                         "(HeteroData.to_homogeneous())")
    if hasattr(data, "edge_index") and hasattr(data, "num_nodes") and not isinstance(data, tuple):  # PyG Data
        n = int(data.num_nodes)
        ei = data.edge_index
        if ei is None:
            adj_t = getattr(data, "adj_t", None)
            if adj_t is None:
                raise ValueError("the Data has neither edge_index nor adj_t: give it the graph's edges")
            ei = _adj_t_edge_index(adj_t, n)
        indptr, indices, order = _csc(ei, n, keep_order=True)
        node, edge = _pyg_attrs(data, n, len(indices))
        return _Graph(indptr, indices, n, x if x is not None else getattr(data, "x", None),
                      y if y is not None else getattr(data, "y", None), pyg=True, node_attrs=node,
                      edge_attrs=edge, edge_order=order)
    if hasattr(data, "tocoo") and hasattr(data, "shape"):  # scipy sparse: entry (i, j) is the edge i -> j
        if len(data.shape) != 2 or data.shape[0] != data.shape[1]:
            raise ValueError(f"an adjacency matrix must be square, got {data.shape}")
        c = data.tocoo()  # its edges in this order (e_id), as PyG's from_scipy_sparse_matrix
        n = data.shape[0]
        indptr, indices, order = _csc(np.stack([c.row.astype(np.int64), c.col.astype(np.int64)]), n, keep_order=True)
        return _Graph(indptr, indices, n, x, y, edge_order=order)
    if isinstance(data, (tuple, list)) and 1 <= len(data) <= 3:
        edge_index = data[0]
        dx = data[1] if len(data) > 1 else None
        dy = data[2] if len(data) > 2 else None
        dx, dy = (x if x is not None else dx), (y if y is not None else dy)
        n = num_nodes
        if n is None and dx is not None and dy is not None and len(dx) != len(dy):
            raise ValueError(f"x has {len(dx)} rows but y has {len(dy)} entries: give one per node")
        if n is None:
            if dx is not None:
                n = len(dx)
            elif dy is not None:
                n = len(dy)
            else:
                ei = _numpy(edge_index, "edge_index")
                n = int(ei.max()) + 1 if ei.size else 0
        indptr, indices, order = _csc(edge_index, int(n), keep_order=True)
        return _Graph(indptr, indices, n, dx, dy, edge_order=order)
    raise TypeError("data must be a torch_geometric Data, a tuple (edge_index, x[, y]), a scipy sparse adjacency "
                    f"or a graphmill dataset directory, not {type(data).__name__}")


def _seeds(input_nodes, n):
    """input_nodes (ids or a bool mask; None: every node) as distinct int32
    ids."""
    if input_nodes is None:
        return np.arange(n, dtype=np.int32)
    if isinstance(input_nodes, tuple):
        raise ValueError("input_nodes as (node type, ids): heterogeneous graphs are not supported")
    a = _numpy(input_nodes, "input_nodes").reshape(-1)
    if len(a) == 0:
        raise ValueError("input_nodes is empty")
    if a.dtype == np.bool_:
        if len(a) != n:
            raise ValueError(f"a boolean input_nodes mask has {len(a)} entries for {n} nodes")
        return np.flatnonzero(a).astype(np.int32)
    if not np.issubdtype(a.dtype, np.integer):
        raise ValueError(f"input_nodes must be node ids or a boolean mask, got {a.dtype}")
    if len(a) and (a.min() < 0 or a.max() >= n):
        raise ValueError(f"input_nodes holds node {int(a.min()) if a.min() < 0 else int(a.max())}, outside [0, {n})")
    s = a.astype(np.int32)
    u, c = np.unique(s, return_counts=True)
    if len(u) != len(s):
        raise ValueError(f"input_nodes holds node {int(u[np.argmax(c > 1)])} more than once")
    return s


def _float32_rows(a):
    """(address, bytes, shape) of a when the service can gather its rows: a
    non-empty float32 2-D C-contiguous numpy array or CPU tensor that does
    not require grad (learnt x keeps its gradient only gathered here);
    else None."""
    t = _torch()
    if t is not None and isinstance(a, t.Tensor):
        if a.dtype != t.float32 or a.dim() != 2 or not a.is_contiguous() or a.requires_grad or a.device.type != "cpu":
            return None
        addr, nbytes, shape = a.data_ptr(), a.numel() * a.element_size(), tuple(a.shape)
    else:
        a = np.asarray(a)
        if a.dtype != np.float32 or a.ndim != 2 or not a.flags.c_contiguous:
            return None
        addr, nbytes, shape = a.ctypes.data, a.nbytes, a.shape
    return (addr, nbytes, shape) if nbytes else None


def _npy_backing(a):
    """The .npy file whose whole array is exactly a's memory (a numpy array
    or CPU tensor over a memory map of it: np.load(mmap_mode="r"), a
    graphmill dataset's features), or None. The process's memory map
    (/proc/self/maps) names the file behind a's address; a private mapping
    that is writable may hold rows that differ from the file's, and is not
    taken."""
    rows = _float32_rows(a)
    if rows is None:
        return None
    addr, nbytes, shape = rows
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                parts = line.split(None, 5)
                lo, hi = (int(v, 16) for v in parts[0].split("-"))
                if not lo <= addr < hi:
                    continue
                if addr + nbytes > hi or len(parts) < 6 or parts[4] == "0":
                    return None
                perms, path = parts[1], parts[5].rstrip("\n")
                if perms[3] != "s" and perms[1] == "w":
                    return None
                off = int(parts[2], 16) + addr - lo
                break
            else:
                return None
        if not os.path.isfile(path):  # "(deleted)", or not a file
            return None
        with open(path, "rb") as f:
            head = npy_header(f)
            if head is None:
                return None
            fshape, fortran, fdtype = head
            start = f.tell()
        if start != off or fortran or tuple(fshape) != tuple(shape) or np.dtype(fdtype) != np.float32:
            return None
        return path
    except (OSError, ValueError):
        return None


def _shared_storage(t):
    """(path, offset, True): where the service can map the float32 2-D
    contiguous CPU tensor t's rows, raw, from byte offset on, after moving
    t's storage into shared memory (torch's share_memory_: in place, every
    view of the storage follows; what PyG's worker processes have done to
    the tensors they read). None for other tensors and arrays, when
    /dev/shm lacks room (a full /dev/shm faults writes with SIGBUS), or
    when torch shares it otherwise (the file_system strategy)."""
    torch = _torch()
    if torch is None or not isinstance(t, torch.Tensor) or _float32_rows(t) is None:
        return None
    storage = t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage()
    if not t.is_shared():
        try:
            st = os.statvfs("/dev/shm")
        except OSError:
            return None
        if st.f_bavail * st.f_frsize < storage.nbytes() + (storage.nbytes() >> 3) + (64 << 20):
            return None
    try:
        fd = storage._share_fd_cpu_()[0]
    except (RuntimeError, AttributeError, TypeError):
        return None
    path = f"/proc/{os.getpid()}/fd/{fd}"
    if not os.path.exists(path):
        return None
    return path, t.storage_offset() * t.element_size(), True


_SCRATCH = "graphmill-neighbors-"
_SHM = "/dev/shm"


def _pid_namespace():
    """This process's PID namespace (the inode of /proc/self/ns/pid; 0
    where unknown): a PID in a scratch directory's name means a process
    only within the namespace that named it."""
    try:
        return os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return 0


def _remove_stale_scratch(bases):
    """Removes the scratch directories in bases left by processes of this
    PID namespace that are dead (killed while making a loader, before
    their own cleanup ran). Others' are left alone."""
    ns = _pid_namespace()
    mine = f"{_SCRATCH}{ns}-"
    for base in bases:
        try:
            names = [n for n in os.listdir(base) if n.startswith(mine)]
        except OSError:
            continue
        for name in names:
            pid = name[len(mine):].split("-", 1)[0]
            if not pid.isdigit() or int(pid) == os.getpid():
                continue
            try:
                os.kill(int(pid), 0)
                continue  # alive (or another user's: PermissionError below)
            except ProcessLookupError:
                pass
            except OSError:
                continue
            path = os.path.join(base, name)
            try:
                if os.lstat(path).st_uid == os.getuid():
                    shutil.rmtree(path, ignore_errors=True)
            except OSError:
                pass


def _scratch_dir(nbytes=0):
    """A fresh directory for the dataset handed to the service: in
    /dev/shm when it has room for nbytes (with a margin), else in the
    temporary directory ($TMPDIR, /tmp): a small /dev/shm (Docker's 64
    MB) would fault the writes. Named after this process
    (graphmill-neighbors-NS-PID-...): directories that dead processes left
    are removed here first."""
    shm = _SHM if os.path.isdir(_SHM) and os.access(_SHM, os.W_OK) else None
    _remove_stale_scratch([b for b in {shm, tempfile.gettempdir()} if b])
    base = None
    if shm is not None:
        try:
            st = os.statvfs(shm)
            if st.f_bavail * st.f_frsize >= nbytes + (nbytes >> 3) + (64 << 20):
                base = shm
        except OSError:
            pass
    return tempfile.mkdtemp(prefix=f"{_SCRATCH}{_pid_namespace()}-{os.getpid()}-", dir=base)


def _dataset_bytes(g, seeds, labels=None):
    """Bytes _write_dataset writes for g (arrays g's files hold are linked)."""
    have = g.files or {}
    n = 0 if "indptr" in have else 8 * (g.num_nodes + 1)
    n += 0 if "indices" in have else 4 * len(g.indices)
    if g.edge_weight is not None and "edge_weight" not in have:
        n += 4 * len(g.indices)
    n += 4 * len(seeds) + (4 * g.num_nodes if labels is not None else 0)
    return n + (1 << 20)


def _service_labels(y):
    """(y, its class count) when y can be a graphmill dataset's int32 labels
    (one class per node, -1 for none), else None (2-D, floats, values
    below -1 or past int32)."""
    a = _numpy(y, "y")
    if a.ndim != 1 or a.dtype.kind not in "iu" or len(a) == 0:
        return None
    lo, hi = int(a.min()), int(a.max())
    if lo < -1 or hi >= (1 << 31) - 1:
        return None
    return a, max(hi + 1, 1)


def _write_dataset(dir, g, seeds, x_file=None, x_shape=None, labels=None):
    """A graphmill dataset of g's graph whose train split is seeds: arrays
    a dataset already has are linked, the others written; x_file, (path,
    offset, raw) of float32 rows in the graph's order (an .npy file, or a
    raw file holding them from byte offset on), is linked as its
    features; labels, (array, class count) from _service_labels, are its
    labels."""
    arrays = {}

    def put(name, a, dtype):
        f = name + ".npy"
        src = (g.files or {}).get(name)
        if src is not None:
            os.symlink(os.path.abspath(src), os.path.join(dir, f))
        else:
            np.save(os.path.join(dir, f), np.ascontiguousarray(a, dtype=dtype))
        arrays[name] = {"file": f, "dtype": np.dtype(dtype).newbyteorder("<").str, "shape": list(a.shape)}

    put("indptr", g.indptr, np.int64)
    put("indices", g.indices, np.int32)
    if g.edge_weight is not None:
        put("edge_weight", g.edge_weight, np.float32)
    put("train_idx", seeds, np.int32)
    classes = 0
    if labels is not None:
        put("labels", labels[0], np.int32)
        classes = labels[1]
    dim = 0
    if x_file is not None:
        path, off, raw = x_file
        name = "features.raw" if raw else "features.npy"
        os.symlink(path if raw else os.path.abspath(path), os.path.join(dir, name))
        arrays["features"] = {"file": name, "dtype": "<f4", "shape": list(x_shape)}
        if raw:
            arrays["features"].update(raw=True, offset=int(off))
        dim = int(x_shape[1])
    meta = {"format": "graphmill-dataset", "format_version": 1, "name": "neighbor-loader", "source": "graphmill.NeighborLoader",
            "num_nodes": g.num_nodes, "num_edges": int(len(g.indices)), "feature_dim": dim, "num_classes": classes,
            "graph": {"layout": "csc", "symmetrized": False, "dedup": False, "self_loops": "keep",
                      "has_weights": g.edge_weight is not None},
            "splits": {"train": int(len(seeds))}, "arrays": arrays}
    with open(os.path.join(dir, "meta.json"), "w") as f:
        json.dump(meta, f)


class _BufferPool:
    """Reusable output buffers for the gathered rows. A fresh tensor of
    tens of MiB per batch is mapped fresh by the allocator and faulted in
    page by page, which costs more than the copy itself; a buffer returns
    here when the last view of it (the batch's x and anything sliced from
    it) is dropped, and is reused already mapped."""

    def __init__(self, cols, dtype, keep=8):
        self.cols, self.dtype, self.keep = cols, dtype, keep
        self.free = []
        self.lock = threading.Lock()

    @staticmethod
    def for_tensor(t):
        """A pool for rows of the 2-D tensor t, or False where numpy cannot
        hold its dtype (bfloat16), t is not 2-D, or t requires grad (a
        gather into a buffer would cut the graph: x learnt as embeddings)."""
        import torch

        if t.dim() != 2 or t.requires_grad:
            return False
        try:
            dtype = torch.empty(0, dtype=t.dtype).numpy().dtype
        except TypeError:
            return False
        return _BufferPool(t.shape[1], dtype)

    def take(self, rows):
        with self.lock:
            for i, b in enumerate(self.free):
                if b.shape[0] >= rows:
                    buf = self.free.pop(i)
                    break
            else:
                buf = None
        if buf is None:
            buf = np.empty((max(rows, 1) * 5 // 4, self.cols), dtype=self.dtype)  # room for larger batches
        view = buf[:rows]
        weakref.finalize(view, self._give, buf)
        return view

    def _give(self, buf):
        with self.lock:
            if len(self.free) < self.keep:
                self.free.append(buf)


class SampledBatch:
    """One batch in PyG's layout (attributes as torch_geometric's Data from
    its NeighborLoader): ``x``, ``y`` (rows of every sampled node),
    ``edge_index`` (local ids, ordered by hop), ``n_id`` (global ids, the
    seeds first), ``batch_size``, ``input_id`` (the seeds' positions in
    input_nodes), ``num_sampled_nodes`` and ``num_sampled_edges`` (per hop,
    for ``trim_to_layer``), and ``adjs``: PyG's older NeighborSampler form
    ``[EdgeIndex(edge_index, e_id, (num_src, num_dst)), ...]``, input layer
    first (named tuples with ``.to(device)``, as PyG's)."""

    def __init__(self, **kw):
        self.__dict__.update(kw)

    @property
    def num_nodes(self):
        return len(self.n_id)

    def to(self, device, non_blocking=False):
        """The batch with its tensors on device."""
        t = _torch()
        out = SampledBatch(**self.__dict__)
        for k, v in self.__dict__.items():
            if t is not None and isinstance(v, t.Tensor):
                setattr(out, k, v.to(device, non_blocking=non_blocking))
        if getattr(self, "adjs", None) is not None:
            out.adjs = [adj.to(device, non_blocking=non_blocking) for adj in self.adjs]
        return out

    def __repr__(self):
        extra = f", num_sampled_nodes={self.num_sampled_nodes}" if hasattr(self, "num_sampled_nodes") else ""
        return f"SampledBatch(batch_size={self.batch_size}, n_id={len(self.n_id)}, edges={self.edge_index.shape[1]}{extra})"


_Ready = collections.namedtuple("_Ready", "batch event tensors")


class NeighborLoader:
    """PyG's ``NeighborLoader`` with graphmill's sampler behind it.

    ``NeighborLoader(data, num_neighbors=[25, 10], batch_size=1024,
    input_nodes=idx, shuffle=True)`` yields batches with PyG's fields (see
    ``SampledBatch``; a ``torch_geometric.data.Data`` when ``data`` is one),
    so a model written for PyG's loader, ``trim_to_layer`` included, runs on
    it unchanged.

    ``data``: a ``torch_geometric.data.Data``; a tuple ``(edge_index, x)``
    or ``(edge_index, x, y)`` of numpy arrays or CPU tensors; a scipy
    sparse adjacency (entry (i, j) is the edge i -> j; give ``x=`` and
    ``y=``); or a graphmill dataset directory. ``x=``/``y=`` override the
    data's. A ``Data`` may hold ``adj_t`` (a torch sparse tensor or a
    torch_sparse ``SparseTensor``) instead of ``edge_index``; heterogeneous
    graphs (``HeteroData``, a dict ``num_neighbors``) are not supported.
    Batches carry ``e_id`` (when the data has per-edge attributes, or with
    ``e_id=True``: mapping it costs time per batch), the edges' columns in the given edge_index
    (positions in adj_t's row-major order, in a scipy matrix's ``tocoo()``
    order, columns of a dataset's ``edge_index()``); a Data's per-edge
    tensors, and ``edge_attr=``/``edge_weight=`` given here, come sliced
    by it. ``input_nodes``: node ids (any order, distinct) or a boolean
    mask; None takes every node. ``num_neighbors``: whole counts per hop
    from the seeds, -1 for all, 0 for none from that hop on. ``replace`` draws with replacement. ``num_workers``: the
    sampler's threads (batches it prepares at once). ``seed``: iteration
    is deterministic per seed; each ``for`` loop is the next epoch (or
    ``set_epoch``). ``transform`` is applied to each batch.

    ``service_gather`` (default True) has the service gather ``x``'s rows
    into the shared payloads, on its own threads, where it can map them:
    ``x`` over a memory map of a whole .npy file is read from that file;
    a float32 CPU tensor is moved into shared memory first (torch's
    ``share_memory_``, in place, as PyG's worker processes have it done:
    its views follow it, a ``torch.from_numpy`` tensor leaves its array)
    when /dev/shm has room for it and it does not require grad. Otherwise, or with False, ``x`` is
    gathered in this process on ``gather_workers`` threads. The service
    also lays out each batch's ``edge_index`` (PyG's, from its blocks) and,
    for class labels (``y`` 1-D integers, -1 for none), gathers ``y``: the
    service holds a copy of ``y`` taken when the loader is made (as PyG's
    worker processes do), so a ``y`` changed later needs
    ``service_gather=False``, which gathers ``y`` here on every batch.

    ``device`` (e.g. "cuda"): batches come out with their tensors on that
    device. Each gather thread stages its batch in pinned host memory and
    copies it over on a stream of its own while the consumer computes; the
    consumer's stream waits for the copies, nothing waits on the host.
    ``feature_cache`` keeps the hottest rows of ``x`` on the device: a
    ``graphmill.torch.FeatureCache`` keyed by the same node ids, or a
    budget ("10%" of the rows, "2GiB") for one built here over ``x``,
    caching the rows of highest out-degree (the nodes sampling reaches
    most). Only the misses are gathered on the host and copied;
    ``stats()["feature_cache"]`` counts the hits and the bytes moved. With
    either, ``x`` is gathered in this process (not by the service).

    The service starts with the loader and stops with ``close()``, a
    ``with`` block, or when the loader is collected. One iteration at a
    time: a second ``for`` while one is open raises a GraphmillError.
    """

    def __init__(self, data, num_neighbors, batch_size=1, input_nodes=None, shuffle=False, drop_last=False,
                 replace=False, num_workers=2, seed=0, x=None, y=None, num_nodes=None, transform=None,
                 gather_workers=2, binary=None, timeout=60.0, service_gather=True, device=None, feature_cache=None,
                 edge_attr=None, edge_weight=None, e_id=None, **kwargs):
        for k in list(kwargs):
            if k in _PYG_IGNORED:
                kwargs.pop(k)
        if kwargs.pop("directed", True) is not True:
            raise ValueError("directed=False is not supported")
        if kwargs.pop("disjoint", False):
            raise ValueError("disjoint=True is not supported")
        if kwargs.pop("subgraph_type", "directional") not in ("directional",):
            raise ValueError("only subgraph_type='directional' is supported")
        if kwargs:
            raise TypeError(f"graphmill.NeighborLoader got unsupported arguments: {', '.join(sorted(kwargs))}")
        if isinstance(num_neighbors, dict):
            raise ValueError("num_neighbors as a dict (per edge type): heterogeneous graphs are not supported")
        if isinstance(num_neighbors, (int, np.integer, str, bytes)):
            raise TypeError(f"num_neighbors is a list of counts, one per hop (e.g. [25, 10]), got {num_neighbors!r}")
        fan = []
        for k in num_neighbors:
            try:
                if isinstance(k, (bool, np.bool_)):
                    raise TypeError
                fan.append(operator.index(k))
            except TypeError:
                raise TypeError(f"num_neighbors must hold whole numbers (counts per hop, -1 for all), got {k!r} "
                                f"in {list(num_neighbors)}") from None
        if not fan or any(k < -1 for k in fan) or fan[0] == 0:
            raise ValueError(f"num_neighbors must be counts >= 0 or -1 per hop, the first not 0, got {list(num_neighbors)}")
        self.num_neighbors = fan
        # A hop of 0 draws nothing, nor do the hops after it (PyG's
        # meaning): the service draws the hops before, and the batches
        # list the rest as empty.
        fan = fan[:fan.index(0)] if 0 in fan else fan
        self.transform = transform
        g = _from_data(data, x=x, y=y, num_nodes=num_nodes, edge_attrs=dict(edge_attr=edge_attr, edge_weight=edge_weight))
        self.num_nodes = g.num_nodes
        self.pyg = g.pyg
        self.input_nodes = _seeds(input_nodes, g.num_nodes)
        if len(self.input_nodes) == 0:
            raise ValueError("input_nodes is empty")
        # Ids in and out are the original ones; the service samples the
        # packed graph in its own ids.
        self._ids = g.ids
        seeds = self.input_nodes if g.ids is None else g.ids.to_graph(self.input_nodes)
        t = _torch()
        self._x = self._tensor(g.x, "x")
        self._y = self._tensor(g.y, "y")
        self._node_attrs = {k: self._tensor(a, k) for k, a in g.node_attrs.items()}
        self._edge_attrs = {k: self._tensor(a, k) for k, a in g.edge_attrs.items()}
        # e_id costs a mapping per batch when edge_index is not sorted by
        # destination (a third of the loader's batches/s on 2M random
        # edges): by default only where per-edge attributes need it.
        self._want_e_id = bool(self._edge_attrs) if e_id is None else bool(e_id)
        if self._edge_attrs and not self._want_e_id:
            raise ValueError("e_id=False, but the data has per-edge attributes, which batches slice by e_id")
        # CSC position -> edge_index column (numpy; None: the same), kept
        # only where e_id is mapped (4 bytes per edge for the loader's life)
        self._edge_order = g.edge_order if self._want_e_id else None
        self.device, self.feature_cache = self._placement(device, feature_cache, g)
        self._cuda = self.device is not None and self.device.type == "cuda"  # batches staged and copied on streams
        self._pos = None  # node -> position in input_nodes (input_id), built on first use
        self._rows = None  # _BufferPool of x's rows (with torch, for a 2-D x)
        self._torch = t is not None
        self._pool = None
        self._local = threading.local()  # each gather thread's CUDA stream
        self.gather_workers = max(1, int(gather_workers))
        # x in a file the service can map (float32 rows in the graph's
        # order): the service gathers the rows, on its own threads, into
        # the shared payloads; otherwise this process gathers them.
        self._x_file = None  # (path, offset, raw)
        if service_gather and self._x is not None and (g.ids is None or g.ids.x_packed) and self.device is None \
                and self.feature_cache is None:
            path = _npy_backing(self._x)
            # only a tensor the user gave is moved (a numpy array's memory
            # cannot move in place: it would be copied)
            self._x_file = (path, 0, False) if path is not None else _shared_storage(g.x)
        # y as class labels the service gathers with each batch (in the
        # graph's order), or None: gathered here.
        labels = None
        if service_gather and self._y is not None and (g.ids is None or g.ids.y_packed):
            labels = _service_labels(g.y)
        self._y_service = labels is not None

        def start():
            """A local service on g (seeds as its train split), with x's rows
            in its payloads when self._x_file says where they are."""
            dir = _scratch_dir(_dataset_bytes(g, seeds, labels))
            try:
                _write_dataset(dir, g, seeds, self._x_file, None if self._x_file is None else tuple(self._x.shape), labels)
                return Loader(dataset=dir, split="train", fanouts=fan, batch_size=batch_size, shuffle=shuffle,
                              seed=seed, drop_last=drop_last, features=self._x_file is not None, labels=False, binary=binary,
                              timeout=timeout, server_args=("--workers", str(max(1, int(num_workers)))),
                              frontier=True, replace=replace, ids="packed",  # mapped here (_IdMap)
                              edge_index=True, input_labels=self._y_service,
                              edge_ids=self._want_e_id,  # e_id, to slice edge attributes by
                              # rows in the payloads: room for a consumer that keeps batches (a
                              # sparse file; at most half of /dev/shm's free space)
                              shm_bytes=(4 << 30) if self._x_file is not None else (1 << 30))
            finally:
                # The service has mapped what it needs: nothing is left behind,
                # however this process ends.
                shutil.rmtree(dir, ignore_errors=True)

        try:
            self.loader = start()
        except GraphmillError as e:
            if self._x_file is None:
                raise
            # The service could not map x (a /proc it may not read, a file
            # gone): x is gathered here instead, as with service_gather=False.
            warnings.warn(f"graphmill.NeighborLoader: the sampler service could not map x ({e}); gathering it in this process",
                          RuntimeWarning, stacklevel=2)
            self._x_file = None
            self.loader = start()
        self.batch_size = self.loader.batch_size
        # nothing to gather in this process (x and y from the service, no
        # device): batches are converted on the consumer's thread
        self._inline = (self._x is None or self._x_file is not None) and (self._y is None or self._y_service) \
            and self.device is None

    def _placement(self, device, cache, g):
        """(the device batches go to, None for the CPU; the feature cache or
        None), checked against the graph."""
        t = _torch()
        if device is None and cache is None:
            return None, None
        if t is None:
            raise GraphmillError("device= and feature_cache= need PyTorch")
        from .torch import FeatureCache

        def indexed(d):
            """d with its index: "cuda" is the current one (a cache's "cuda:0" is the same)."""
            return t.device("cuda", t.cuda.current_device()) if d.type == "cuda" and d.index is None else d

        dev = t.device(device) if device is not None else None
        if dev is not None and dev.type == "cuda":
            if not t.cuda.is_available():
                raise GraphmillError(f"device {dev} asked for, but PyTorch sees no CUDA device")
            dev = indexed(dev)
        if cache is not None and not isinstance(cache, FeatureCache):
            if self._x is None:
                raise ValueError("feature_cache as a budget caches x's rows, and this graph has no x")
            # how often each node is an in-neighbour: how often sampling reaches it
            deg = np.bincount(g.indices, minlength=g.num_nodes)
            if g.ids is not None and not g.ids.x_packed:  # x in the user's order
                deg_user = np.empty_like(deg)
                deg_user[g.ids.orig] = deg
                deg = deg_user
            cache = FeatureCache(self._x, budget=cache, devices=[dev or "cpu"], out_degrees=deg)
        if cache is not None:
            if cache.num_nodes != g.num_nodes:
                raise ValueError(f"feature_cache holds {cache.num_nodes} nodes, the graph {g.num_nodes}")
            cdev = indexed(cache.device)
            if dev is None:
                dev = cdev
            elif cdev != dev:
                raise ValueError(f"feature_cache gathers to {cache.device}, the loader's device is {dev}")
        return (None if dev is None or dev.type == "cpu" else dev), cache

    def _tensor(self, a, name):
        if a is None:
            return None
        t = _torch()
        if t is None:
            return _numpy(a, name)
        if isinstance(a, t.Tensor):
            if a.device.type != "cpu":
                raise ValueError(f"{name} is on {a.device}: give graphmill.NeighborLoader CPU tensors")
            return a
        a = np.asarray(a)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # read-only memmaps: only read here
            return t.from_numpy(a)

    def __len__(self):
        return len(self.loader)

    def set_epoch(self, epoch):
        self.loader.set_epoch(epoch)

    @property
    def epoch(self):
        return self.loader.epoch

    def _convert(self, mb):
        L = len(mb.blocks)
        nd = [mb.blocks[L - 1 - h].num_dst for h in range(L)] + [mb.blocks[0].num_src]
        for h in range(1, L):
            if mb.blocks[L - 1 - h].indptr[nd[h - 1]] != 0:
                raise GraphmillError("the sampler service drew neighbours for every node at every hop: it predates "
                                     "PyG-style (frontier) draws; use a graphmill program as new as this client (GRAPHMILL_BIN)")
        empty = len(self.num_neighbors) - L  # hops from a 0 in num_neighbors on: none drawn
        ne = [int(mb.blocks[L - 1 - h].num_edges) for h in range(L)] + [0] * empty
        # Batches bound for a GPU are built in pinned memory, so that their
        # copies start from there with no staging copy (pin_memory()).
        # Elsewhere numpy's arrays: torch.empty's cost 0.2-0.35 ms more per
        # batch on the CPU (measured), its large blocks faulted in afresh.
        pinned = self._cuda  # (device= needs torch)
        ei_t = self._pinned_ids((2, sum(ne))) if pinned else None
        if mb.edge_index is not None and ei_t is None:
            ei = mb.edge_index  # laid out by the service: a view of the payload
        else:
            ei = ei_t.numpy() if ei_t is not None else np.empty((2, sum(ne)), dtype=np.int64)
            self._edge_index(mb, nd, ne, ei)
        e_id = self._e_id(mb, ne, self._pinned_ids((sum(ne),)) if pinned else None) if self._want_e_id else None
        n_t = self._pinned_ids((len(mb.n_id),)) if pinned else None
        if n_t is not None:
            n_id = n_t.numpy()
            n_id[:] = mb.n_id  # the service's ids
        else:
            n_id = np.asarray(mb.n_id, dtype=np.int64)
        n_x = n_y = n_id
        if self._ids is not None:  # a packed dataset: the user's ids are the original ones
            n_id, n_x, n_y = self._ids(n_id)
            n_t = None
        seeds = n_id[:mb.batch_size]
        pos = self._pos
        if pos is None:
            # Built whole, then published: _convert runs on several gather
            # threads, and one that saw a half-filled table read -1s.
            pos = np.full(self.num_nodes, -1, dtype=np.int64)
            pos[self.input_nodes] = np.arange(len(self.input_nodes))
            self._pos = pos
        input_id = pos[seeds]
        nsn = [nd[0]] + [nd[h + 1] - nd[h] for h in range(L)] + [0] * empty
        if self._torch:
            import torch

            if n_t is None:
                n_t = torch.from_numpy(n_id)
            x_t = n_t if n_x is n_id else torch.from_numpy(n_x)
            x = None
            if self.feature_cache is not None:  # the hits on the device, the misses copied over
                with self._on_side_stream():
                    x, _ = self.feature_cache.gather_with_stats(x_t)
            elif mb.x is not None:  # gathered by the service (see __init__)
                x = torch.from_numpy(mb.x)
            elif pinned and self._x is not None and self._x.dim() == 2 and not self._x.requires_grad:
                # into pinned memory, to be copied asynchronously
                x = torch.empty((len(x_t), self._x.shape[1]), dtype=self._x.dtype, pin_memory=True)
                torch.index_select(self._x, 0, x_t, out=x)
            elif self._x is not None:
                if self._rows is None:
                    self._rows = _BufferPool.for_tensor(self._x)
                if self._rows:
                    x = torch.from_numpy(self._rows.take(len(n_id)))
                    torch.index_select(self._x, 0, x_t, out=x)
                else:  # 1-D, a dtype numpy lacks (bfloat16), or x learnt: a fresh tensor
                    x = torch.index_select(self._x, 0, x_t)
            # index_select: torch's indexing (y[ids]) took 3.2 ms for 100k ids, this 0.27
            y = None
            if mb.input_labels is not None:  # gathered by the service (int64)
                y = torch.from_numpy(mb.input_labels)
                if pinned:
                    y = torch.empty(y.shape, dtype=self._y.dtype, pin_memory=True).copy_(y)
                elif y.dtype != self._y.dtype:
                    y = y.to(self._y.dtype)
            elif self._y is not None:
                y_ids = n_t if n_y is n_id else torch.from_numpy(n_y)
                out = None
                if pinned and not self._y.requires_grad:
                    out = torch.empty((len(y_ids),) + tuple(self._y.shape[1:]), dtype=self._y.dtype, pin_memory=True)
                y = torch.index_select(self._y, 0, y_ids, out=out)
            ei, n_id, input_id = (ei_t if ei_t is not None else torch.from_numpy(ei)), n_t, torch.from_numpy(input_id)
            if e_id is not None and not isinstance(e_id, torch.Tensor):
                e_id = torch.from_numpy(e_id)
        else:
            x = np.take(self._x, n_x, axis=0) if self._x is not None else None
            if mb.input_labels is not None:
                y = mb.input_labels.astype(self._y.dtype, copy=False)
            else:
                y = np.take(self._y, n_y, axis=0) if self._y is not None else None
        ev = None
        fields = dict(x=x, y=y, edge_index=ei, n_id=n_id, batch_size=int(mb.batch_size), input_id=input_id,
                      num_sampled_nodes=nsn, num_sampled_edges=ne)
        if e_id is not None:
            fields["e_id"] = e_id
        if self.device is not None:
            ev = self._to_device(fields)
            ei = fields["edge_index"]
        dev_e_id = fields.get("e_id")
        # PyG's older NeighborSampler form: layer l (input layer first) reads
        # the edges of hops < L-l, from every node of hops <= L-l.
        adjs = []
        for l in range(L + empty):
            hops = L + empty - l
            adjs.append(EdgeIndex(ei[:, :sum(ne[:hops])], None if dev_e_id is None else dev_e_id[:sum(ne[:hops])],
                                  (sum(nsn[:hops + 1]), sum(nsn[:hops]))))
        # a Data's other per-node tensors by n_id, the per-edge ones by e_id
        extra = {}
        for attrs, ids in ((self._node_attrs, n_id), (self._edge_attrs, e_id)):
            for k, a in attrs.items():
                if self._torch:
                    v = torch.index_select(a, 0, ids.cpu())
                    extra[k] = v.to(self.device) if self.device is not None else v
                else:
                    extra[k] = np.take(a, ids, axis=0)
        if self.pyg:
            from torch_geometric.data import Data

            out = Data(**{k: v for k, v in fields.items() if v is not None})
            out.adjs = adjs
            for k, v in extra.items():
                out[k] = v
        else:
            out = SampledBatch(adjs=adjs, **fields, **extra)
        if ev is not None:
            # the consumer's stream waits for the copies; the tensors were
            # made on the side stream and are used on the consumer's
            return _Ready(out, ev, [v for v in fields.values() if isinstance(v, torch.Tensor)])
        return self.transform(out) if self.transform is not None else out

    def _e_id(self, mb, ne, pinned):
        """The batch's edges' columns in the user's edge_index (PyG's e_id,
        in edge_index's order: hop by hop), from the blocks' edge ids (CSC
        positions); into pinned (an int64 tensor) when given."""
        L = len(mb.blocks)
        e_id = pinned.numpy() if pinned is not None else np.empty(sum(ne), dtype=np.int64)
        e = 0
        for h in range(L):
            ids = mb.blocks[L - 1 - h].edge_ids
            if ids is None and ne[h]:
                raise GraphmillError("the sampler service sent no edge ids (for the Data's per-edge attributes): it predates "
                                     "them; use a graphmill program as new as this client (GRAPHMILL_BIN)")
            if ne[h] and self._edge_order is None:
                e_id[e:e + ne[h]] = ids
            elif ne[h] and self._torch:  # index_select: 1.1 ms for 214k ids into 6M, np.take 1.5
                import torch

                e_id[e:e + ne[h]] = torch.index_select(torch.from_numpy(self._edge_order), 0,
                                                       torch.from_numpy(np.asarray(ids, dtype=np.int64))).numpy()
            elif ne[h]:
                e_id[e:e + ne[h]] = np.take(self._edge_order, ids)
            e += ne[h]
        return pinned if pinned is not None else e_id

    @staticmethod
    def _edge_index(mb, nd, ne, ei):
        """Fills ei (int64 [2, E]) with mb's edges in PyG's layout: a copy
        of the service's (into a GPU batch's pinned memory), or built from
        the blocks (from a service that predates edge_index)."""
        if mb.edge_index is not None:
            ei[...] = mb.edge_index
            return
        L, e = len(mb.blocks), 0
        for h in range(L):
            b = mb.blocks[L - 1 - h]
            first = nd[h - 1] if h else 0
            ei[0, e:e + ne[h]] = b.indices
            ei[1, e:e + ne[h]] = np.repeat(np.arange(first, nd[h], dtype=np.int64), np.diff(b.indptr[first:]))
            e += ne[h]

    @staticmethod
    def _pinned_ids(shape):
        """An int64 tensor in pinned host memory, for a batch's ids."""
        import torch

        return torch.empty(shape, dtype=torch.int64, pin_memory=True)

    def _on_side_stream(self):
        """A context on this gather thread's own CUDA stream (a no-op on
        the CPU)."""
        if not self._cuda:
            return contextlib.nullcontext()
        import torch

        st = getattr(self._local, "stream", None)
        if st is None:
            st = self._local.stream = torch.cuda.Stream(self.device)
        return torch.cuda.stream(st)

    def _to_device(self, fields):
        """Moves the batch's tensors to self.device in place (from pinned
        memory, on this thread's stream) and returns an event recorded
        after the copies (None off CUDA)."""
        import torch

        cuda = self._cuda
        with self._on_side_stream():
            for k, v in fields.items():
                if isinstance(v, torch.Tensor) and v.device != self.device:
                    if cuda and not v.is_pinned() and not v.requires_grad:
                        v = v.pin_memory()
                    fields[k] = v.to(self.device, non_blocking=cuda)
            if not cuda:
                return None
            ev = torch.cuda.Event()
            ev.record()
            return ev

    def _ready(self, item):
        """A batch from a gather thread, usable on the current stream."""
        if not isinstance(item, _Ready):
            return item
        import torch

        cur = torch.cuda.current_stream(self.device)
        cur.wait_event(item.event)
        for t in item.tensors:
            t.record_stream(cur)
        return self.transform(item.batch) if self.transform is not None else item.batch

    def __iter__(self):
        if self._inline:
            # The service gathered x and y: a batch is views of its payload,
            # made faster here than handed to a thread.
            for mb in self.loader._decoded():
                yield self._convert(mb)
            return
        if self._pool is None:
            self._pool = concurrent.futures.ThreadPoolExecutor(self.gather_workers, thread_name_prefix="graphmill-neighbors")
        pending = collections.deque()
        try:
            for mb in self.loader._decoded():
                pending.append(self._pool.submit(self._convert, mb))
                if len(pending) > self.gather_workers:
                    yield self._ready(pending.popleft().result())
            while pending:
                yield self._ready(pending.popleft().result())
        finally:
            for f in pending:
                f.cancel()

    def stats(self):
        """What the loader did (``graphmill.Loader.stats``), with the
        feature cache's totals (``CacheStats`` as a dict) under
        "feature_cache" when there is one."""
        out = self.loader.stats()
        if self.feature_cache is not None:
            out["feature_cache"] = self.feature_cache.stats._asdict()
        return out

    def close(self):
        """Stops the sampler service."""
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None
        loader = getattr(self, "loader", None)
        if loader is not None:
            loader.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def __repr__(self):
        return (f"NeighborLoader(nodes={self.num_nodes}, num_neighbors={self.num_neighbors}, "
                f"batch_size={self.batch_size}, batches={len(self)})")

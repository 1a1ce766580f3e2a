"""graphmill's native datasets and partitioned datasets as numpy memmaps.

A native dataset is a directory with one ``.npy`` file per array and a
``meta.json`` (see the Go package ``dataset``)::

    indptr.npy   int64 [num_nodes+1]  CSC offsets: in-edges of node v are
                                      indices[indptr[v]:indptr[v+1]]
    indices.npy  int32 [num_edges]    source node of every in-edge
    edge_weight.npy float32 [num_edges]  optional
    features.npy float32 | float16 | uint16 (bfloat16 bit patterns) [num_nodes, dim]
    labels.npy   int32 [num_nodes]    class or -1
    train_idx.npy, val_idx.npy, test_idx.npy  int32 node ids

A partitioned dataset (``graphmill partition``) is a ``partition.json`` book,
three node maps and one native dataset per part (see the Go package
``dataset/parts``).
"""

import json
import os

import numpy as np

from . import _cli
from .errors import GraphmillError

FORMAT_NAME = "graphmill-dataset"
FORMAT_VERSION = 1
BOOK_FORMAT = "graphmill-partition"
BOOK_VERSION = 2

_SPLITS = ("train", "val", "test")


def bf16_to_float32(a):
    """Converts bfloat16 bit patterns (a uint16 array, as graphmill stores
    bfloat16 features) to a new float32 array."""
    a = np.asarray(a)
    if a.dtype != np.uint16:
        raise TypeError(f"bfloat16 bit patterns are uint16, got {a.dtype}")
    return (a.astype(np.uint32) << 16).view(np.float32)


def float32_to_bf16(a):
    """Rounds float32 values to bfloat16 (round to nearest even, as graphmill
    does) and returns their bit patterns as uint16."""
    u = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)
    nan = (u & 0x7FFFFFFF) > 0x7F800000
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    r[nan] = ((u[nan] >> 16) | 0x40).astype(np.uint16)
    return r


def npy_header(f):
    """(shape, fortran_order, dtype) of the .npy file open at its start in
    f, or None for a format version numpy reads with no public function
    (3.0; np.save writes 1.0, or 2.0 for huge headers). numpy 2 took the
    private reader out of numpy.lib.format."""
    version = np.lib.format.read_magic(f)
    read = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}.get(version)
    return read(f) if read is not None else None


def _load(path, mmap_mode):
    """np.load with mmap, falling back to a plain read for empty arrays
    (which cannot be mapped)."""
    with open(path, "rb") as f:
        head = npy_header(f)
    if mmap_mode is None or (head is not None and int(np.prod(head[0])) == 0):
        return np.load(path, allow_pickle=False)
    return np.load(path, mmap_mode=mmap_mode, allow_pickle=False)


class Dataset:
    """An opened native graphmill dataset. Arrays are numpy memmaps of the
    ``.npy`` files: opening costs nothing however large the dataset.

    Attributes: ``dir``, ``meta`` (meta.json as a dict), ``name``,
    ``num_nodes``, ``num_edges``, ``feature_dim``, ``num_classes``,
    ``feature_dtype`` ("float32", "float16" or "bfloat16"), ``indptr``,
    ``indices``, ``edge_weight``, ``features``, ``labels``, ``train_idx``,
    ``val_idx``, ``test_idx`` (None when absent). bfloat16 features are
    held as their uint16 bit patterns (numpy has no bfloat16); use
    ``features_float32()`` or ``graphmill.torch.features(ds)``.
    """

    def __init__(self, path, mmap_mode="r"):
        self.dir = os.fspath(path)
        self._mmap_mode = mmap_mode
        m = _read_header(self.dir, "meta.json", FORMAT_NAME, FORMAT_VERSION,
                         "not a graphmill dataset (no meta.json); import one with 'graphmill data import'", "")
        self.meta = m
        self.name = m.get("name", "")
        self.num_nodes = int(m["num_nodes"])
        self.num_edges = int(m["num_edges"])
        self.feature_dim = int(m.get("feature_dim", 0))
        self.num_classes = int(m.get("num_classes", 0))
        self.feature_dtype = m.get("feature_dtype") or "float32"
        self._arrays = {}
        self.indptr = self.array("indptr")
        self.indices = self.array("indices")
        if self.indptr is None or self.indices is None:
            raise GraphmillError(f"{self.dir}: arrays indptr and indices are required")
        self._check("indptr", self.indptr, np.int64, (self.num_nodes + 1,))
        self._check("indices", self.indices, np.int32, (self.num_edges,))
        if self.num_nodes >= 0 and (int(self.indptr[0]) != 0 or int(self.indptr[-1]) != self.num_edges):
            raise GraphmillError(f"{self.dir}: array indptr runs from {int(self.indptr[0])} to {int(self.indptr[-1])}, want 0 to num_edges={self.num_edges}")
        self.edge_weight = self.array("edge_weight")
        if self.edge_weight is not None:
            self._check("edge_weight", self.edge_weight, np.float32, (self.num_edges,))
        self.features = self.array("features")
        if self.features is not None:
            want = {"float32": np.float32, "float16": np.float16, "bfloat16": np.uint16}.get(self.feature_dtype)
            if want is None:
                raise GraphmillError(f"{self.dir}: meta.json: feature_dtype {self.feature_dtype!r} is not float32, float16 or bfloat16")
            if self.features.dtype == np.uint16 and self.feature_dtype == "float32":
                self.feature_dtype = "bfloat16"  # uint16 features are bfloat16 bit patterns
                want = np.uint16
            self._check("features", self.features, want, (self.num_nodes, self.feature_dim))
        self.labels = self.array("labels")
        if self.labels is not None:
            self._check("labels", self.labels, np.int32, (self.num_nodes,))
        self.splits = {}
        for s in _SPLITS:
            a = self.array(s + "_idx")
            if a is not None:
                self._check(s + "_idx", a, np.int32, (int(m.get("splits", {}).get(s, a.shape[0])),))
                self.splits[s] = a
        # A packed dataset ('graphmill data pack') stores its nodes in a
        # new order: node v is node orig_ids[v] of the dataset it was packed
        # from (None otherwise). Its arrays, splits included, are in the new
        # order; graphmill's loaders take and give the original ids.
        self.packed = m.get("packed")
        self.orig_ids = self.array("orig_ids")
        if self.packed is not None and self.orig_ids is None:
            raise GraphmillError(f"{self.dir}: a packed dataset without its orig_ids array")
        if self.orig_ids is not None:
            self._check("orig_ids", self.orig_ids, np.int32, (self.num_nodes,))
        self.train_idx = self.splits.get("train")
        self.val_idx = self.splits.get("val")
        self.test_idx = self.splits.get("test")

    def _check(self, name, a, dtype, shape):
        if a.dtype != np.dtype(dtype) or tuple(a.shape) != tuple(shape):
            raise GraphmillError(f"{self.dir}: array {name} holds {a.dtype} {list(a.shape)}, want {np.dtype(dtype)} {list(shape)}")

    def array(self, name):
        """Returns the stored array called ``name`` (any array listed in
        meta.json, including ones this client does not know) as a memmap, or
        None when the dataset has none."""
        if name in self._arrays:
            return self._arrays[name]
        am = self.meta.get("arrays", {}).get(name)
        if am is None:
            self._arrays[name] = None
            return None
        f = am.get("file", "")
        if os.path.basename(f) != f or not f:
            raise GraphmillError(f"{self.dir}: array {name} names file {f!r} outside the dataset")
        p = os.path.join(self.dir, f)
        try:
            a = _load(p, self._mmap_mode)
        except FileNotFoundError:
            raise GraphmillError(f"{self.dir}: array {name}: {f} is missing") from None
        except ValueError as e:
            raise GraphmillError(f"{p}: {e}") from None
        if "shape" in am and list(a.shape) != list(am["shape"]):
            raise GraphmillError(f"{p}: holds shape {list(a.shape)} but meta.json says {am['shape']}")
        self._arrays[name] = a
        return a

    @property
    def num_features(self):
        """The feature width (PyG's name for feature_dim)."""
        return self.feature_dim

    def in_degrees(self):
        """Every node's in-degree (int64), from indptr."""
        return np.diff(self.indptr)

    def out_degrees(self):
        """Every node's out-degree (int64): how often it is an edge source."""
        return np.bincount(self.indices, minlength=self.num_nodes).astype(np.int64)

    def edge_index(self):
        """The edges in PyG's convention: an int64 array [2, num_edges] with
        sources in row 0 and destinations in row 1 (messages flow from
        edge_index[0] to edge_index[1]), ordered by destination."""
        dst = np.repeat(np.arange(self.num_nodes, dtype=np.int64), np.diff(self.indptr))
        return np.stack([self.indices.astype(np.int64), dst])

    def features_float32(self, rows=None):
        """The features (or the given rows) as float32, converting float16 and
        bfloat16. For float32 features and rows=None this is the memmap."""
        if self.features is None:
            return None
        f = self.features if rows is None else self.features[np.asarray(rows)]
        if self.feature_dtype == "bfloat16":
            return bf16_to_float32(f)
        if f.dtype != np.float32:
            return f.astype(np.float32)
        return f

    def __repr__(self):
        fs = f", features={self.feature_dim}x{self.feature_dtype}" if self.features is not None else ""
        sp = "".join(f", {k}={len(v)}" for k, v in self.splits.items())
        return f"{type(self).__name__}({self.name!r}, nodes={self.num_nodes}, edges={self.num_edges}{fs}, classes={self.num_classes}{sp})"


class Part(Dataset):
    """One part of a partitioned dataset: a native dataset over the part's
    inner nodes (local ids 0..num_inner-1) and its halo nodes after them.

    Extra attributes: ``index``, ``info`` (the book's entry), ``num_inner``,
    ``num_halo``, ``node_range`` (reordered ids owned), ``global_ids``
    (original id of every local node), ``halo_parts``, ``halo_local_ids``,
    ``global_in_degrees``, ``global_out_degrees`` (degrees in the whole
    graph).
    """

    def __init__(self, path, index, info, mmap_mode="r"):
        super().__init__(path, mmap_mode=mmap_mode)
        self.index = index
        self.info = info
        self.num_inner = int(info["num_inner"])
        self.num_halo = int(info["num_halo"])
        self.node_range = tuple(int(x) for x in info["node_range"])
        n = self.num_inner + self.num_halo
        if n != self.num_nodes:
            raise GraphmillError(f"{self.dir}: {self.num_nodes} local nodes, but the book says {self.num_inner} inner + {self.num_halo} halo")
        self.global_ids = self._extra("global_ids", n)
        self.halo_parts = self._extra("halo_parts", self.num_halo)
        self.halo_local_ids = self._extra("halo_local_ids", self.num_halo)
        self.global_in_degrees = self._extra("in_degrees", n)
        self.global_out_degrees = self._extra("out_degrees", n)

    def _extra(self, name, size):
        a = self.array(name)
        if a is None:
            raise GraphmillError(f"{self.dir}: part array {name} is missing")
        self._check(name, a, np.int32, (size,))
        return a

    def edge_index(self, global_ids=False):
        """The part's edges in PyG's convention (row 0 sources, row 1
        destinations) in local ids, or in original ids with global_ids=True."""
        ei = super().edge_index()
        if global_ids:
            return self.global_ids[ei].astype(np.int64)
        return ei


class PartitionedDataset:
    """A partitioned dataset written by ``graphmill partition``.

    Attributes: ``dir``, ``book`` (partition.json), ``name``, ``num_parts``,
    ``num_nodes``, ``num_edges``, ``part_ids`` (part of every original node),
    ``orig_ids`` and ``new_ids`` (the reordering), ``parts`` (a list of
    ``Part``, opened on first use), ``feature_dim``, ``num_classes``.
    """

    def __init__(self, path, mmap_mode="r"):
        self.dir = os.fspath(path)
        self._mmap_mode = mmap_mode
        b = _read_header(self.dir, "partition.json", BOOK_FORMAT, BOOK_VERSION,
                         "not a partitioned dataset (no partition.json); create one with 'graphmill partition'",
                         "; partition the dataset again")
        self.book = b
        self.name = b.get("name", "")
        self.num_parts = int(b["num_parts"])
        self.num_nodes = int(b["num_nodes"])
        self.num_edges = int(b["num_edges"])
        if len(b.get("parts", [])) != self.num_parts:
            raise GraphmillError(f"{bp}: {len(b.get('parts', []))} parts listed, num_parts is {self.num_parts}")
        arrays = b.get("arrays", {})
        maps = {}
        for name in ("part_ids", "orig_ids", "new_ids"):
            f = arrays.get(name, name + ".npy")
            if os.path.basename(f) != f:
                raise GraphmillError(f"{bp}: array {name} names file {f!r} outside the dataset")
            try:
                a = _load(os.path.join(self.dir, f), mmap_mode)
            except FileNotFoundError:
                raise GraphmillError(f"{self.dir}: node map {f} is missing") from None
            if a.dtype != np.int32 or a.shape != (self.num_nodes,):
                raise GraphmillError(f"{self.dir}: {f} holds {a.dtype} {list(a.shape)}, want int32 [{self.num_nodes}]")
            maps[name] = a
        self.part_ids = maps["part_ids"]
        self.orig_ids = maps["orig_ids"]
        self.new_ids = maps["new_ids"]
        self._parts = [None] * self.num_parts

    def part(self, p):
        """Opens (once) and returns part p."""
        if not 0 <= p < self.num_parts:
            raise IndexError(f"part {p} of a dataset with {self.num_parts} parts")
        if self._parts[p] is None:
            info = self.book["parts"][p]
            d = info["dir"]
            if os.path.basename(d) != d:
                raise GraphmillError(f"{self.dir}: part {p} names directory {d!r} outside the dataset")
            self._parts[p] = Part(os.path.join(self.dir, d), p, info, mmap_mode=self._mmap_mode)
        return self._parts[p]

    @property
    def parts(self):
        """All parts (opened on first use)."""
        return [self.part(p) for p in range(self.num_parts)]

    @property
    def feature_dim(self):
        return self.part(0).feature_dim

    @property
    def num_classes(self):
        return self.part(0).num_classes

    def locate(self, nodes):
        """Maps original node ids to (part, local id) arrays."""
        nodes = np.asarray(nodes, dtype=np.int64)
        part = self.part_ids[nodes].astype(np.int64)
        starts = np.array([int(pi["node_range"][0]) for pi in self.book["parts"]], dtype=np.int64)
        local = self.new_ids[nodes].astype(np.int64) - starts[part]
        return part, local

    def _gather(self, name, nodes):
        nodes = np.asarray(nodes, dtype=np.int64)
        part, local = self.locate(nodes)
        out = None
        for p in np.unique(part):
            sel = part == p
            src = getattr(self.part(int(p)), name)
            if src is None:
                return None
            if out is None:
                out = np.empty((len(nodes),) + src.shape[1:], dtype=src.dtype)
            out[sel] = src[local[sel]]
        if out is None:
            src = getattr(self.part(0), name)
            out = np.empty((0,) + src.shape[1:], dtype=src.dtype)
        return out

    def features_of(self, nodes):
        """The stored feature rows of original nodes (a new array)."""
        return self._gather("features", nodes)

    def labels_of(self, nodes):
        """The labels of original nodes (a new array)."""
        return self._gather("labels", nodes)

    def split(self, name):
        """The original ids of a split ("train", "val", "test"), part by part."""
        out = [p.global_ids[p.splits[name]].astype(np.int64) for p in self.parts if name in p.splits]
        return np.concatenate(out) if out else np.empty(0, np.int64)

    def edge_index(self):
        """Every edge of the original graph in PyG's convention (int64
        [2, num_edges], original ids), part by part."""
        eis = [p.edge_index(global_ids=True) for p in self.parts]
        return np.concatenate(eis, axis=1) if eis else np.empty((2, 0), np.int64)

    def __repr__(self):
        return f"PartitionedDataset({self.name!r}, parts={self.num_parts}, nodes={self.num_nodes}, edges={self.num_edges})"


def open_dataset(path, mmap_mode="r", binary=None):
    """Opens a graphmill dataset: a native dataset directory (meta.json), a
    partitioned dataset directory (partition.json), or the name of a
    built-in dataset ("cora", materialised by the graphmill program found
    on PATH). Arrays are memory-mapped read-only (``mmap_mode="r"``); pass
    ``mmap_mode="c"`` for private copy-on-write mappings that numpy and
    torch may write to without touching the files."""
    d = _cli.resolve_dataset(path, binary=binary)
    if os.path.exists(os.path.join(d, "partition.json")):
        return PartitionedDataset(d, mmap_mode=mmap_mode)
    return Dataset(d, mmap_mode=mmap_mode)


def _read_header(dir, name, fmt, version, missing, redo):
    """Reads the JSON header file name of the folder dir and checks its
    format name and version; missing says what dir is not when it lacks
    the file, redo what to do about an unsupported version."""
    path = os.path.join(dir, name)
    try:
        with open(path) as f:
            h = json.load(f)
    except FileNotFoundError:
        raise GraphmillError(f"{dir}: {missing}") from None
    except ValueError as e:
        raise GraphmillError(f"{path}: {e}") from None
    if not isinstance(h, dict):
        raise GraphmillError(f"{path}: not a JSON object")
    if h.get("format") != fmt:
        raise GraphmillError(f"{path}: format is {h.get('format')!r}, want {fmt!r}")
    if h.get("format_version") != version:
        raise GraphmillError(f"{path}: format version {h.get('format_version')} is not supported (this client reads version {version}){redo}")
    return h

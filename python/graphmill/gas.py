"""GNNAutoScale for any PyTorch model: batches of graph parts with their
one-hop halo (``graphmill.gas.Loader``), and historical embeddings
(``graphmill.torch.History``, ``push_and_pull``) for the halo's rows.

    loader = graphmill.gas.Loader((edge_index, x, y), num_parts=40, batch_size=10, shuffle=True)
    for b in loader:
        out = model(b.x, b.edge_index, b.batch_size, b.n_id)   # push_and_pull inside
        loss = F.cross_entropy(out[:b.batch_size], b.y[:b.batch_size])

The parts come from graphmill's partitioner (``graphmill partition
--assignment``, METIS-like multilevel k-way), as GNNAutoScale uses METIS.
"""

import os
import shutil
import subprocess
import tempfile

import numpy as np

from . import _cli
from .errors import GraphmillError
from .neighbor import SampledBatch, _dataset_bytes, _from_data, _Graph, _scratch_dir, _write_dataset

__all__ = ["Loader", "partition"]


def partition(data, num_parts, seed=1, method="metis", binary=None, num_nodes=None):
    """Every node's part (int32 [num_nodes]) from graphmill's partitioner,
    for any graph NeighborLoader takes."""
    g = data if isinstance(data, _Graph) else _from_data(data, num_nodes=num_nodes)
    if not 1 <= int(num_parts) <= g.num_nodes:
        raise ValueError(f"num_parts must be in [1, {g.num_nodes}], got {num_parts}")
    seeds = np.arange(min(1, g.num_nodes), dtype=np.int32)
    dir = _scratch_dir(_dataset_bytes(g, seeds) + 4 * g.num_nodes)  # and the assignment
    try:
        ds = os.path.join(dir, "graph")
        os.mkdir(ds)
        _write_dataset(ds, g, seeds)
        out = os.path.join(dir, "parts.npy")
        cmd = [_cli.find_binary(binary), "partition", "-k", str(int(num_parts)), "--method", method,
               "--seed", str(int(seed)), "--assignment", out, ds]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            raise GraphmillError(f"graphmill partition failed: {(r.stderr or r.stdout).strip().splitlines()[-1:]}")
        return np.load(out)
    finally:
        shutil.rmtree(dir, ignore_errors=True)


class Loader:
    """GNNAutoScale's batches: the graph cut into ``num_parts`` parts by
    graphmill's partitioner; each batch joins ``batch_size`` parts (shuffled
    per epoch with ``shuffle``). A batch's ``n_id`` holds its nodes first
    (``batch_size`` of them: note this is a node count, as in PyG's
    batches) and then their one-hop halo: the in-neighbours outside the
    batch, whose rows a model takes from its histories (``push_and_pull``).
    ``edge_index`` holds every in-edge of the batch's nodes (local ids,
    sources in row 0); ``x`` and ``y`` are the rows of n_id. A layer's
    output rows of halo nodes are not meaningful (their in-edges are not in
    the batch): push_and_pull replaces them.

    ``data`` is anything ``graphmill.NeighborLoader`` takes. ``parts``
    gives the assignment instead of partitioning. ``sort_halo`` keeps halo
    nodes in increasing id order (default: order of first appearance).
    """

    def __init__(self, data, num_parts, batch_size=1, shuffle=False, seed=1, x=None, y=None, num_nodes=None,
                 parts=None, method="metis", binary=None, gcn_norm=False):
        g = _from_data(data, x=x, y=y, num_nodes=num_nodes)
        self.gcn_norm = bool(gcn_norm)
        self.graph = g
        self.num_nodes = g.num_nodes
        given = parts is not None
        if parts is None:
            parts = partition(g, num_parts, seed=seed, method=method, binary=binary)
        parts = np.asarray(parts)
        if parts.shape != (g.num_nodes,) or (len(parts) and (parts.min() < 0 or parts.max() >= num_parts)):
            raise ValueError(f"parts must give each of the {g.num_nodes} nodes a part in [0, {num_parts})")
        if given and g.ids is not None:  # by original id: to the packed dataset's order
            parts = parts[g.ids.orig]
        self.parts = parts
        self.num_parts = int(num_parts)
        self.batch_size = int(batch_size)
        if not 1 <= self.batch_size <= self.num_parts:
            raise ValueError(f"batch_size (parts per batch) must be in [1, {self.num_parts}], got {batch_size}")
        self.shuffle = bool(shuffle)
        self.seed = int(seed)
        self.epoch = 0
        order = np.argsort(parts, kind="stable")
        ptr = np.zeros(self.num_parts + 1, dtype=np.int64)
        np.cumsum(np.bincount(parts, minlength=self.num_parts), out=ptr[1:])
        self.part_nodes = [order[ptr[p]:ptr[p + 1]].astype(np.int64) for p in range(self.num_parts)]
        self._pos = np.full(g.num_nodes, -1, dtype=np.int64)
        try:
            import torch
        except ImportError:
            torch = None
        self._torch = torch
        self._x = self._as(g.x)
        self._y = self._as(g.y)
        self._dinv = self._gcn_dinv(g) if self.gcn_norm else None

    @staticmethod
    def _gcn_dinv(g):
        """deg^-1/2 of every node over the whole graph, as PyG's gcn_norm
        (add_remaining_self_loops, unit weights): its in-edges from other
        nodes, plus one self-loop (float64)."""
        indptr, indices = np.asarray(g.indptr), np.asarray(g.indices)
        deg = np.diff(indptr).astype(np.float64)
        dst = np.repeat(np.arange(g.num_nodes, dtype=np.int64), np.diff(indptr))
        deg -= np.bincount(dst[indices == dst], minlength=g.num_nodes)  # the graph's own self-loops
        return 1.0 / np.sqrt(deg + 1)

    def _as(self, a):
        if a is None or self._torch is None:
            return None if a is None else np.asarray(a)
        t = self._torch
        if isinstance(a, t.Tensor):
            return a
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            return t.from_numpy(np.asarray(a))

    def __len__(self):
        return -(-self.num_parts // self.batch_size)

    def set_epoch(self, epoch):
        self.epoch = int(epoch)

    def batch(self, part_ids):
        """The batch of the given parts."""
        g = self.graph
        inner = np.concatenate([self.part_nodes[p] for p in part_ids])
        lo, hi = g.indptr[inner], g.indptr[inner + 1]
        deg = hi - lo
        # the in-edges of every inner node, in CSC order
        starts = np.repeat(lo - np.cumsum(np.concatenate([[0], deg[:-1]])), deg)
        src = np.asarray(g.indices)[starts + np.arange(int(deg.sum()))].astype(np.int64)
        pos = self._pos
        pos[inner] = np.arange(len(inner))
        out = src[pos[src] < 0]
        halo, first = np.unique(out, return_index=True)
        halo = halo[np.argsort(first, kind="stable")]  # order of first appearance
        pos[halo] = len(inner) + np.arange(len(halo))
        n_id = np.concatenate([inner, halo])
        ei = np.stack([pos[src], np.repeat(np.arange(len(inner), dtype=np.int64), deg)])
        pos[n_id] = -1
        ew = None
        if self._dinv is not None:
            # GCN's normalisation with the whole graph's degrees: the batch
            # nodes' in-edges from others, then one self-loop each
            ei = ei[:, ei[0] != ei[1]]
            loops = np.arange(len(inner), dtype=np.int64)
            ei = np.concatenate([ei, np.stack([loops, loops])], axis=1)
            dinv = self._dinv[n_id]
            ew = dinv[ei[0]] * dinv[ei[1]]
        n_x = n_y = n_id
        if g.ids is not None:  # a packed dataset: the user's ids are the original ones
            n_id, n_x, n_y = g.ids(n_id)
        if ew is not None:
            ew = ew.astype(np.float64 if str(getattr(self._x, "dtype", "")) in ("float64", "torch.float64") else np.float32)
        fields = dict(n_id=n_id, edge_index=ei, edge_weight=ew, batch_size=len(inner), num_halo=len(halo))
        if self._torch is not None:
            t = self._torch
            fields.update(n_id=t.from_numpy(n_id), edge_index=t.from_numpy(ei),
                          edge_weight=t.from_numpy(ew) if ew is not None else None,
                          x=t.index_select(self._x, 0, t.from_numpy(n_x)) if self._x is not None else None,
                          y=t.index_select(self._y, 0, t.from_numpy(n_y)) if self._y is not None else None)
        else:
            fields.update(x=self._x[n_x] if self._x is not None else None, y=self._y[n_y] if self._y is not None else None)
        b = SampledBatch(**fields)
        b.parts = list(part_ids)
        return b

    def __iter__(self):
        ids = np.arange(self.num_parts)
        if self.shuffle:
            ids = np.random.default_rng([self.seed, self.epoch]).permutation(self.num_parts)
        self.epoch += 1
        for i in range(0, self.num_parts, self.batch_size):
            yield self.batch(ids[i:i + self.batch_size])

    def __repr__(self):
        norm = ", gcn_norm=True" if self.gcn_norm else ""
        return f"gas.Loader(nodes={self.num_nodes}, parts={self.num_parts}, batch_size={self.batch_size} parts, batches={len(self)}{norm})"

"""``EdgeIndex``: one layer of a batch's ``adjs`` (PyG NeighborSampler's
form), shared by the numpy and the PyTorch batches."""

import collections
import warnings

import numpy as np


class EdgeIndex(collections.namedtuple("EdgeIndex", "edge_index e_id size")):
    """One layer of a batch's ``adjs``, as PyG's ``NeighborSampler`` yields
    it (its ``EdgeIndex``): ``edge_index`` (int64 [2, E], source and
    destination positions), ``e_id`` (the edges' ids, or None when not
    sent) and ``size`` (num_src, num_dst). A tuple: ``for edge_index, e_id,
    size in adjs``; ``adj.to(device)`` moves its arrays (as
    ``Tensor.to``; numpy arrays become tensors)."""

    __slots__ = ()

    def to(self, *args, **kwargs):
        import torch

        def mv(a):
            if a is None:
                return None
            if not isinstance(a, torch.Tensor):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", UserWarning)  # a read-only view: only read
                    a = torch.from_numpy(np.asarray(a))
            return a.to(*args, **kwargs)

        return EdgeIndex(mv(self.edge_index), mv(self.e_id), self.size)

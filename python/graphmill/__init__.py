"""graphmill's Python client.

* ``open_dataset(dir)``: native and partitioned datasets as numpy memmaps.
* ``NeighborLoader(data, num_neighbors, batch_size, input_nodes=...)``: PyG's
  NeighborLoader on the user's own graph (PyG Data, edge_index tuples,
  scipy matrices, dataset directories), sampled by graphmill.
* ``Loader(addr | dataset=dir, ...)``: sampled minibatches streamed from a
  graphmill sampler service, as numpy views of the received bytes
  (``batch.torch()`` gives PyTorch tensors sharing that memory).
* ``decode_batch(buf)``: the MiniBatch wire format (docs/wire.md).
* ``graphmill.torch``: device staging and ``FeatureCache`` (needs PyTorch).
"""

from .errors import GraphmillError, ServiceError, WireError
from .checkpoint import load_checkpoint, load_safetensors
from .loader import Loader, presample_counts, train_loader_seed
from .neighbor import NeighborLoader, SampledBatch
from ._adjs import EdgeIndex
from .wire import Block, MiniBatch, decode_batch, encode_batch
from .dataset import (
    Dataset,
    Part,
    PartitionedDataset,
    bf16_to_float32,
    float32_to_bf16,
    open_dataset,
)

__version__ = "0.1.0"

__all__ = [
    "Block",
    "Dataset",
    "EdgeIndex",
    "Loader",
    "MiniBatch",
    "NeighborLoader",
    "SampledBatch",
    "decode_batch",
    "encode_batch",
    "presample_counts",
    "train_loader_seed",
    "load_checkpoint",
    "load_safetensors",
    "GraphmillError",
    "Part",
    "PartitionedDataset",
    "ServiceError",
    "WireError",
    "bf16_to_float32",
    "float32_to_bf16",
    "open_dataset",
]

"""graphmill checkpoints: safetensors files (8-byte little-endian header
length, a JSON header, raw little-endian tensors) whose parameter names are
PyTorch Geometric's (``convs.{i}.lin_l.weight`` ...), with the model's
configuration as JSON in the metadata key ``graphmill_config``."""

import json
import os
import struct

import numpy as np

from .errors import GraphmillError

_DTYPES = {"F32": "<f4", "F16": "<f2", "BF16": "<u2", "I32": "<i4", "I64": "<i8", "F64": "<f8", "U8": "u1"}


def load_safetensors(path):
    """Reads a safetensors file into ({name: numpy array}, metadata dict).
    The arrays are read-only views of one memory map of the file (BF16
    tensors come as uint16 bit patterns). Header, offsets and sizes are
    validated."""
    path = os.fspath(path)
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        head = f.read(8)
        if len(head) < 8:
            raise GraphmillError(f"{path}: too short for a safetensors file")
        (n,) = struct.unpack("<Q", head)
        if n > size - 8 or n > 100 << 20:
            raise GraphmillError(f"{path}: header length {n} does not fit a file of {size} bytes")
        try:
            header = json.loads(f.read(n))
        except ValueError as e:
            raise GraphmillError(f"{path}: header is not JSON: {e}") from None
    if not isinstance(header, dict):
        raise GraphmillError(f"{path}: header is not a JSON object")
    meta = header.pop("__metadata__", {}) or {}
    data_len = size - 8 - n
    mm = np.memmap(path, dtype=np.uint8, mode="r", offset=8 + n, shape=(data_len,)) if data_len else np.empty(0, np.uint8)
    out = {}
    for name, e in header.items():
        try:
            dt = np.dtype(_DTYPES[e["dtype"]])
            shape = [int(s) for s in e["shape"]]
            lo, hi = (int(o) for o in e["data_offsets"])
        except (KeyError, TypeError, ValueError):
            raise GraphmillError(f"{path}: tensor {name}: bad header entry {e!r}") from None
        count = int(np.prod(shape)) if shape else 1
        if not 0 <= lo <= hi <= data_len or hi - lo != count * dt.itemsize:
            raise GraphmillError(f"{path}: tensor {name}: bytes [{lo}, {hi}) do not hold {shape} of {e['dtype']} in {data_len} data bytes")
        out[name] = mm[lo:hi].view(dt).reshape(shape)
    return out, meta


def load_checkpoint(path):
    """Reads a graphmill checkpoint: returns (state, config), where state maps
    PyG parameter names to numpy arrays and config is the model's
    configuration (kind, layers, hidden, ...) from ``graphmill_config``."""
    state, meta = load_safetensors(path)
    cfg = meta.get("graphmill_config")
    if cfg is None:
        raise GraphmillError(f"{path}: no graphmill_config in the metadata: not a graphmill checkpoint")
    try:
        cfg = json.loads(cfg)
    except ValueError as e:
        raise GraphmillError(f"{path}: graphmill_config is not JSON: {e}") from None
    cfg["_metadata"] = {k: v for k, v in meta.items() if k != "graphmill_config"}
    return state, cfg

"""graphmill checkpoints: safetensors files (8-byte little-endian header
length, a JSON header, raw little-endian tensors) whose parameter names are
PyTorch Geometric's (``convs.{i}.lin_l.weight`` ...), with the model's
configuration as JSON in the metadata key ``graphmill_config``."""

import json
import os
import struct

import numpy as np

from .errors import GraphmillError

# The dtypes graphmill's Go reader takes (safetensors/safetensors.go), as
# numpy stores them; BF16 as its bit patterns (numpy has no bfloat16).
_DTYPES = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "BF16": "<u2", "I64": "<i8", "I32": "<i4", "I16": "<i2", "I8": "i1",
           "U64": "<u8", "U32": "<u4", "U16": "<u2", "U8": "u1", "BOOL": "u1"}


def load_safetensors(path):
    """Reads a safetensors file into ({name: numpy array}, metadata dict).
    The arrays are read-only views of one memory map of the file (BF16
    tensors come as uint16 bit patterns). Header, offsets and sizes are
    validated. BOOL tensors come as numpy bools (any non-zero byte is
    true)."""
    out, meta, _ = _read_safetensors(path)
    return out, meta


def _read_safetensors(path):
    """load_safetensors's (arrays, metadata), and each tensor's dtype as
    stored ({name: "BF16", ...})."""
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
    out, dtypes = {}, {}
    for name, e in header.items():
        if isinstance(e, dict) and isinstance(e.get("dtype"), str) and e["dtype"] not in _DTYPES:
            raise GraphmillError(f"{path}: tensor {name} has dtype {e['dtype']!r}, which graphmill does not read "
                                 f"(it reads {', '.join(_DTYPES)})")
        try:
            dt = np.dtype(_DTYPES[e["dtype"]])
            shape = [int(s) for s in e["shape"]]
            lo, hi = (int(o) for o in e["data_offsets"])
        except (KeyError, TypeError, ValueError):
            raise GraphmillError(f"{path}: tensor {name}: bad header entry {e!r}") from None
        count = int(np.prod(shape)) if shape else 1
        if not 0 <= lo <= hi <= data_len or hi - lo != count * dt.itemsize:
            raise GraphmillError(f"{path}: tensor {name}: bytes [{lo}, {hi}) do not hold {shape} of {e['dtype']} in {data_len} data bytes")
        a = mm[lo:hi].view(dt).reshape(shape)
        out[name] = a != 0 if e["dtype"] == "BOOL" else a
        dtypes[name] = e["dtype"]
    return out, meta, dtypes


def load_checkpoint(path):
    """Reads a graphmill checkpoint: returns (state, config), where state maps
    PyG parameter names to numpy arrays and config is the model's
    configuration (kind, layers, hidden, ...) from ``graphmill_config``."""
    state, cfg, _ = _read_checkpoint(path)
    return state, cfg


def _read_checkpoint(path):
    """load_checkpoint's (state, config), and each tensor's stored dtype."""
    state, meta, dtypes = _read_safetensors(path)
    cfg = meta.get("graphmill_config")
    if cfg is None:
        raise GraphmillError(f"{path}: no graphmill_config in the metadata: not a graphmill checkpoint")
    try:
        cfg = json.loads(cfg)
    except ValueError as e:
        raise GraphmillError(f"{path}: graphmill_config is not JSON: {e}") from None
    cfg["_metadata"] = {k: v for k, v in meta.items() if k != "graphmill_config"}
    return state, cfg, dtypes

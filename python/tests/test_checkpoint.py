import os
import subprocess
import sys

import numpy as np
import pytest

import graphmill

torch = pytest.importorskip("torch")
EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples")


def test_checkpoint_into_pyg_named_module(gm, cora_dir, tmp_path):
    ck = tmp_path / "sage.safetensors"
    subprocess.run([gm, "train", "--model", "sage", "--epochs", "3", "--quiet", "--save", str(ck)],
                   check=True, capture_output=True)
    sys.path.insert(0, EXAMPLES)
    try:
        import load_checkpoint
    finally:
        sys.path.remove(EXAMPLES)
    acc, recorded = load_checkpoint.main([str(ck), "--dataset", cora_dir])
    # PyTorch computes the accuracy graphmill recorded (same weights, same graph)
    assert abs(acc - float(recorded)) < 1e-3
    state, cfg = graphmill.load_checkpoint(str(ck))
    assert cfg["kind"] == "sage" and set(state) == {
        f"convs.{i}.{p}" for i in range(2) for p in ("lin_l.weight", "lin_l.bias", "lin_r.weight")}
    assert state["convs.0.lin_l.weight"].shape == (64, 1433)


def test_bad_safetensors(tmp_path):
    p = tmp_path / "bad.safetensors"
    p.write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{}")
    with pytest.raises(graphmill.GraphmillError, match="does not fit"):
        graphmill.load_safetensors(str(p))
    hdr = b'{"w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,12]}}'
    p.write_bytes(len(hdr).to_bytes(8, "little") + hdr + b"\0" * 16)
    with pytest.raises(graphmill.GraphmillError, match="tensor w"):
        graphmill.load_safetensors(str(p))
    hdr = b'{"w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]},"__metadata__":{"a":"b"}}'
    p.write_bytes(len(hdr).to_bytes(8, "little") + hdr + np.arange(4, dtype="<f4").tobytes())
    t, meta = graphmill.load_safetensors(str(p))
    assert t["w"].tolist() == [[0, 1], [2, 3]] and meta == {"a": "b"}
    with pytest.raises(graphmill.GraphmillError, match="not a graphmill checkpoint"):
        graphmill.load_checkpoint(str(p))

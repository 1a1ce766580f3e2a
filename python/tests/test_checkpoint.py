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


def _write_safetensors(path, tensors, meta=None):
    """tensors: {name: (dtype name, shape, raw bytes)}."""
    import json

    hdr, data = {}, b""
    for name, (dt, shape, raw) in tensors.items():
        hdr[name] = {"dtype": dt, "shape": list(shape), "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    if meta is not None:
        hdr["__metadata__"] = meta
    h = json.dumps(hdr).encode()
    path.write_bytes(len(h).to_bytes(8, "little") + h + data)


def test_state_dict_every_dtype(tmp_path):
    """load_state_dict converts BF16 (and F16) to their float32 values, not
    their bit patterns, and keeps every other dtype Go's reader takes."""
    import json

    w = np.array([1.0, -2.5, 0.15625, 3e38], dtype=np.float32)
    bf16 = (w.view(np.uint32) >> 16).astype("<u2")
    t = {"bf16": ("BF16", [2, 2], bf16.tobytes()),
         "f16": ("F16", [4], w[:3].astype("<f2").tobytes() + np.float16(7).tobytes()),
         "f32": ("F32", [4], w.tobytes()),
         "f64": ("F64", [2], np.array([0.1, -1e300], "<f8").tobytes()),
         "i8": ("I8", [3], np.array([-128, 0, 127], "i1").tobytes()),
         "i16": ("I16", [2], np.array([-32768, 32767], "<i2").tobytes()),
         "i32": ("I32", [2], np.array([-2**31, 2**31 - 1], "<i4").tobytes()),
         "i64": ("I64", [2], np.array([-2**63, 2**63 - 1], "<i8").tobytes()),
         "u8": ("U8", [2], np.array([0, 255], "u1").tobytes()),
         "u16": ("U16", [2], np.array([0, 65535], "<u2").tobytes()),
         "u32": ("U32", [2], np.array([0, 2**32 - 1], "<u4").tobytes()),
         "u64": ("U64", [], np.array(2**62, "<u8").tobytes()),
         "bool": ("BOOL", [3], bytes([0, 1, 2]))}
    p = tmp_path / "all.safetensors"
    _write_safetensors(p, t, {"graphmill_config": json.dumps({"kind": "gcn"})})
    import graphmill.torch as gt

    st, cfg = gt.load_state_dict(str(p))
    assert cfg["kind"] == "gcn"
    assert st["bf16"].dtype == torch.float32 and st["bf16"].tolist() == [[1.0, -2.5], [0.15625, float((bf16[3:].astype(np.uint32) << 16).view(np.float32)[0])]]
    assert st["f16"].dtype == torch.float32 and st["f16"].tolist() == [1.0, -2.5, 0.15625, 7.0]
    assert torch.equal(st["f32"], torch.from_numpy(w))
    assert st["f64"].dtype == torch.float64 and st["f64"].tolist() == [0.1, -1e300]
    want = {"i8": (torch.int8, [-128, 0, 127]), "i16": (torch.int16, [-32768, 32767]),
            "i32": (torch.int32, [-2**31, 2**31 - 1]), "i64": (torch.int64, [-2**63, 2**63 - 1]),
            "u8": (torch.uint8, [0, 255]), "u16": (torch.int32, [0, 65535]), "u32": (torch.int64, [0, 2**32 - 1]),
            "u64": (torch.int64, 2**62), "bool": (torch.bool, [False, True, True])}
    for k, (dt, v) in want.items():
        assert st[k].dtype == dt and st[k].tolist() == v, k
    # numpy: BF16 as its bit patterns (documented), BOOL as bools
    a, _ = graphmill.load_safetensors(str(p))
    assert a["bf16"].dtype == np.uint16 and a["bool"].tolist() == [False, True, True]
    # a dtype graphmill does not read, and a U64 past int64
    _write_safetensors(p, {"f8": ("F8_E4M3", [1], b"\0")})
    with pytest.raises(graphmill.GraphmillError, match="dtype 'F8_E4M3'"):
        graphmill.load_safetensors(str(p))
    _write_safetensors(p, {"u": ("U64", [1], np.array([2**64 - 1], "<u8").tobytes())}, {"graphmill_config": "{}"})
    with pytest.raises(graphmill.GraphmillError, match="past int64"):
        gt.load_state_dict(str(p))


@pytest.mark.parametrize("example", ["sage_pyg_style.py", "load_checkpoint.py", "gas_gcn.py"])
def test_examples_run_from_the_source_tree(tmp_path, example):
    """The examples import the package next to them (python/), installed
    or not, as docs/python.md runs them (python3 python/examples/X.py):
    here a 'graphmill' that fails on import comes first on PYTHONPATH and
    must not be the one they load."""
    fake = tmp_path / "shadow" / "graphmill"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('not the graphmill next to the example')\n")
    env = dict(os.environ, PYTHONPATH=str(fake.parent))
    r = subprocess.run([sys.executable, os.path.join(EXAMPLES, example), "--help"], capture_output=True, text=True,
                       cwd=str(tmp_path), env=env, timeout=120)
    assert r.returncode == 0 and "usage:" in r.stdout, r.stderr[-2000:]

import json
import os
import shutil
import subprocess

import numpy as np
import pytest

import graphmill
from conftest import SHARED_DATA


def test_cora_arrays(cora_dir, gm):
    ds = graphmill.open_dataset("cora")
    assert ds.dir == cora_dir
    info = json.loads(subprocess.run([gm, "data", "info", cora_dir, "--json"], check=True, capture_output=True).stdout)
    assert (ds.num_nodes, ds.num_edges, ds.feature_dim, ds.num_classes) == (
        info["num_nodes"], info["num_edges"], info["feature_dim"], info["num_classes"])
    assert isinstance(ds.indptr, np.memmap) and ds.indptr.dtype == np.int64
    assert isinstance(ds.features, np.memmap) and ds.features.shape == (2708, 1433)
    assert ds.indices.dtype == np.int32 and ds.labels.dtype == np.int32
    assert (len(ds.train_idx), len(ds.val_idx), len(ds.test_idx)) == (info["train_size"], info["val_size"], info["test_size"])
    deg = ds.in_degrees()
    assert deg.max() == info["in_degree"]["max"] and deg.min() == info["in_degree"]["min"]
    assert ds.out_degrees().max() == info["out_degree"]["max"]
    assert ds.features.flags.writeable is False  # read-only mapping of the file


def test_edge_index_pyg_convention(cora_dir):
    ds = graphmill.open_dataset(cora_dir)
    ei = ds.edge_index()
    assert ei.dtype == np.int64 and ei.shape == (2, ds.num_edges)
    # row 1 holds destinations: node v's in-neighbours (CSC) are the sources of its edges
    for v in (0, 1, 1000, 2707):
        src = ei[0, ei[1] == v]
        assert sorted(src) == sorted(ds.indices[ds.indptr[v]:ds.indptr[v + 1]])
    # Cora is symmetrised: every reversed edge exists too
    fwd = set(map(tuple, ei.T.tolist()))
    assert all((d, s) in fwd for s, d in list(fwd)[:500])


def test_imported_npz(gm, tmp_path):
    src = os.path.join(SHARED_DATA, "gnn-benchmark", "citeseer.npz")
    if not os.path.exists(src):
        pytest.skip(f"{src} is absent (shared datasets)")
    out = tmp_path / "citeseer"
    subprocess.run([gm, "data", "import", "--format", "npz", "--src", src, "--split", "random", "--out", str(out)],
                   check=True, capture_output=True)
    ds = graphmill.open_dataset(str(out))
    z = np.load(src, allow_pickle=True)
    assert ds.features.shape[1] == z["attr_shape"][1]
    assert ds.num_classes == len(np.unique(z["labels"]))
    assert ds.labels.max() < ds.num_classes and len(ds.train_idx) == 20 * ds.num_classes


def _half_copy(src, dst, dtype):
    """Copies a float32 dataset, rewriting its features as float16 or
    bfloat16 the way graphmill stores them."""
    shutil.copytree(src, dst)
    ds = graphmill.open_dataset(src)
    f = np.asarray(ds.features)
    if dtype == "float16":
        h = f.astype(np.float16)
    else:
        h = graphmill.float32_to_bf16(f)
    np.save(os.path.join(dst, "features.npy"), h)
    with open(os.path.join(dst, "meta.json")) as fp:
        m = json.load(fp)
    m["feature_dtype"] = dtype
    m["arrays"]["features"]["dtype"] = h.dtype.str
    with open(os.path.join(dst, "meta.json"), "w") as fp:
        json.dump(m, fp)
    return f


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_features(gm, cora_dir, tmp_path, dtype):
    dst = str(tmp_path / dtype)
    f32 = _half_copy(cora_dir, dst, dtype)
    # graphmill itself accepts the directory: it is the Go format, not ours
    subprocess.run([gm, "data", "verify", dst], check=True, capture_output=True)
    ds = graphmill.open_dataset(dst)
    assert ds.feature_dtype == dtype
    assert ds.features.dtype == (np.float16 if dtype == "float16" else np.uint16)
    got = ds.features_float32()
    assert got.dtype == np.float32 and got.shape == f32.shape
    tol = 2 ** -8 if dtype == "float16" else 2 ** -7
    assert np.allclose(got, f32, rtol=tol, atol=1e-6)
    rows = ds.features_float32([5, 3])
    assert np.array_equal(rows, got[[5, 3]])


def test_bf16_roundtrip():
    x = np.array([0.0, 1.0, -2.5, 3.14159, 1e-30, np.inf, -np.inf], np.float32)
    b = graphmill.float32_to_bf16(x)
    assert b.dtype == np.uint16
    y = graphmill.bf16_to_float32(b)
    assert np.allclose(y, x, rtol=2 ** -8)
    assert np.isnan(graphmill.bf16_to_float32(graphmill.float32_to_bf16(np.array([np.nan], np.float32))))[0]


def test_partitioned(cora_dir, cora_parts):
    ds = graphmill.open_dataset(cora_dir)
    pd = graphmill.open_dataset(cora_parts)
    assert isinstance(pd, graphmill.PartitionedDataset)
    assert pd.num_parts == 3 and pd.num_nodes == ds.num_nodes and pd.num_edges == ds.num_edges
    # every edge lies in exactly one part
    a = ds.edge_index()
    b = pd.edge_index()
    assert b.shape == a.shape
    assert set(map(tuple, a.T.tolist())) == set(map(tuple, b.T.tolist()))
    allv = np.arange(ds.num_nodes)
    assert np.array_equal(pd.features_of(allv), ds.features)
    assert np.array_equal(pd.labels_of(allv), ds.labels)
    for s in ("train", "val", "test"):
        assert sorted(pd.split(s).tolist()) == sorted(ds.splits[s].tolist())
    total = 0
    for p in pd.parts:
        assert p.num_inner == p.node_range[1] - p.node_range[0]
        assert np.all(pd.part_ids[p.global_ids[:p.num_inner]] == p.index)
        assert np.all(pd.part_ids[p.global_ids[p.num_inner:]] == p.halo_parts)
        # global degrees agree with the whole graph
        assert np.array_equal(p.global_in_degrees, ds.in_degrees()[p.global_ids])
        assert np.all(p.labels[p.num_inner:] == -1)
        total += p.num_inner
    assert total == ds.num_nodes
    part, local = pd.locate(allv)
    assert np.array_equal(np.asarray([pd.part(int(q)).global_ids[l] for q, l in zip(part[:50], local[:50])]), allv[:50])


def test_errors(tmp_path, cora_dir):
    with pytest.raises(graphmill.GraphmillError, match="no such directory"):
        graphmill.open_dataset(str(tmp_path / "nope"))
    with pytest.raises(graphmill.GraphmillError, match="not a built-in dataset"):
        graphmill.open_dataset("no-such-builtin")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(graphmill.GraphmillError, match="no meta.json"):
        graphmill.open_dataset(str(empty))
    bad = tmp_path / "bad"
    shutil.copytree(cora_dir, bad)
    np.save(bad / "labels.npy", np.zeros(5, np.int64))
    with pytest.raises(graphmill.GraphmillError, match="labels"):
        graphmill.open_dataset(str(bad))
    m = json.loads((bad / "meta.json").read_text())
    m["format_version"] = 99
    (bad / "meta.json").write_text(json.dumps(m))
    with pytest.raises(graphmill.GraphmillError, match="format version 99"):
        graphmill.open_dataset(str(bad))


def test_bad_feature_dtype(tmp_path, cora_dir):
    """A feature_dtype other than float32, float16 or bfloat16 in meta.json
    is a clear error naming the dataset (it was a NameError)."""
    bad = tmp_path / "bad"
    shutil.copytree(cora_dir, bad)
    m = json.loads((bad / "meta.json").read_text())
    m["feature_dtype"] = "int8"
    (bad / "meta.json").write_text(json.dumps(m))
    with pytest.raises(graphmill.GraphmillError, match=f"{bad}: meta.json: feature_dtype 'int8' is not float32"):
        graphmill.open_dataset(str(bad))

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import graphmill  # noqa: E402
import graphmill.torch as gt  # noqa: E402

CUDA = torch.cuda.is_available()
DEVICE_SETS = [["cpu"], ["cpu", "cpu"]]
if CUDA:
    DEVICE_SETS += [["cuda:0"], [f"cuda:{i}" for i in range(torch.cuda.device_count())]]


@pytest.mark.parametrize("devices", DEVICE_SETS, ids=lambda d: "+".join(d))
@pytest.mark.parametrize("budget", ["10%", "30%", "64KiB"])
def test_gather_matches_dataset(cora_dir, devices, budget):
    ds = graphmill.open_dataset(cora_dir)
    c = gt.FeatureCache(ds, budget=budget, devices=devices)
    if budget.endswith("%"):
        assert c.capacity == round(float(budget[:-1]) / 100 * ds.num_nodes)
    else:
        assert c.capacity == (64 << 10) // (ds.feature_dim * 4) * len(devices)
    # the cached rows are those of highest out-degree
    deg = ds.out_degrees()
    assert deg[c.cached_ids].min() >= np.sort(deg)[::-1][c.capacity - 1]
    rng = np.random.default_rng(0)
    for _ in range(3):
        n_id = rng.integers(0, ds.num_nodes, 700)
        x = c.gather(torch.from_numpy(n_id))
        assert x.device == torch.device(devices[0])
        assert torch.equal(x.cpu(), torch.from_numpy(np.asarray(ds.features[n_id])))
        hits = np.isin(n_id, c.cached_ids).sum()
        assert c.last.lookups == 700 and c.last.hits == hits
        assert c.last.bytes_to_device == ((700 - hits) * c.row_bytes if devices[0].startswith("cuda") else 0)
    assert 0 < c.hit_rate < 1


def test_presample_and_miss_rows(cora_dir):
    ds = graphmill.open_dataset(cora_dir)
    counts = np.zeros(ds.num_nodes, np.int64)
    counts[[7, 3, 11]] = [5, 9, 1]
    c = gt.FeatureCache(ds, budget=2 * ds.feature_dim * 4, policy="presample", counts=counts)
    assert c.capacity == 2 and list(c.cached_ids) == [3, 7]
    n_id = np.array([3, 11, 7, 0])
    miss = np.asarray(ds.features[[11, 0]]).copy()
    miss[:] += 1  # rows given by the service win over the host copy
    x = c.gather(n_id, miss_rows=miss)
    assert torch.equal(x[0], gt.tensor(ds.features[3]))
    assert torch.equal(x[1], torch.from_numpy(miss[0])) and torch.equal(x[3], torch.from_numpy(miss[1]))
    assert c.last.hits == 2 and c.contains([3, 11]).tolist() == [True, False]
    with pytest.raises(ValueError, match="miss_rows"):
        c.gather(n_id, miss_rows=miss[:1])


def test_bad_arguments(cora_dir):
    ds = graphmill.open_dataset(cora_dir)
    with pytest.raises(ValueError, match="policy"):
        gt.FeatureCache(ds, policy="lru")
    with pytest.raises(ValueError, match="presample"):
        gt.FeatureCache(ds, policy="presample")
    with pytest.raises(ValueError, match="byte count"):
        gt.FeatureCache(ds, budget="lots")
    if not CUDA:
        with pytest.raises(graphmill.GraphmillError, match="CUDA"):
            gt.FeatureCache(ds, devices=["cuda:0"])


def test_partitioned_cache(cora_dir, cora_parts):
    ds = graphmill.open_dataset(cora_dir)
    pd = graphmill.open_dataset(cora_parts)
    c1 = gt.FeatureCache(ds, budget="20%")
    c2 = gt.FeatureCache(pd, budget="20%")
    assert np.array_equal(np.sort(c1.cached_ids), np.sort(c2.cached_ids))
    n_id = np.arange(0, ds.num_nodes, 3)
    assert torch.equal(c2.gather(n_id), c1.gather(n_id))


def test_tensor_zero_copy_and_bf16():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    t = gt.tensor(a)
    assert t.data_ptr() == a.ctypes.data
    b = graphmill.float32_to_bf16(a)
    tb = gt.tensor(b, bfloat16=True)
    assert tb.dtype == torch.bfloat16 and tb.data_ptr() == b.ctypes.data
    assert torch.equal(tb.float(), torch.from_numpy(a))
    with pytest.raises(TypeError):
        gt.tensor(b)


def test_rows_given_as_a_tensor():
    """A FeatureCache over a tensor of rows (a PyG data.x): the cached rows
    are those of highest out_degrees, gathers return x's rows, and what
    cannot be cached this way is refused."""
    r = np.random.default_rng(3)
    x = r.standard_normal((500, 6)).astype(np.float32)
    deg = r.integers(0, 50, 500)
    for rows in (torch.from_numpy(x), x):
        c = gt.FeatureCache(rows, budget="10%", out_degrees=deg)
        assert c.capacity == 50 and deg[c.cached_ids].min() >= np.sort(deg)[::-1][49]
        n_id = r.integers(0, 500, 300)
        assert torch.equal(c.gather(n_id), torch.from_numpy(x[n_id]))
        assert c.last.hits == np.isin(n_id, c.cached_ids).sum()
    with pytest.raises(ValueError, match="out_degrees"):
        gt.FeatureCache(torch.from_numpy(x), budget="10%")
    with pytest.raises(ValueError, match="shape"):
        gt.FeatureCache(torch.from_numpy(x), budget="10%", out_degrees=deg[:10])
    with pytest.raises(ValueError, match="2-D"):
        gt.FeatureCache(torch.from_numpy(x[:, 0].copy()), out_degrees=deg)
    with pytest.raises(ValueError, match="float64"):
        gt.FeatureCache(torch.from_numpy(x.astype(np.float64)), out_degrees=deg)

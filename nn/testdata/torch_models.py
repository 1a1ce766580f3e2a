# PyTorch modules named and shaped as PyTorch Geometric's layers, written
# in plain PyTorch (no PyG needed), over one graph loaded by setup(): the
# reference graphmill's checkpoints load into (torch_check.py) and its
# training is compared with (torch_train.py).
import json, os, struct
import numpy as np
import torch

def load_safetensors(path):
    b = open(path, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    header = json.loads(b[8:8 + n])
    data = b[8 + n:]
    sd = {}
    for name, v in header.items():
        if name == "__metadata__":
            continue
        assert v["dtype"] == "F32", v
        lo, hi = v["data_offsets"]
        sd[name] = torch.from_numpy(np.frombuffer(data[lo:hi], dtype="<f4").copy().reshape(v["shape"]))
    return sd, header.get("__metadata__", {})


SAFETENSORS_DTYPES = {torch.float32: ("F32", "<f4"), torch.float64: ("F64", "<f8"), torch.float16: ("F16", "<f2"),
                      torch.int64: ("I64", "<i8"), torch.int32: ("I32", "<i4"), torch.uint8: ("U8", "u1"), torch.bool: ("BOOL", "u1")}


def save_safetensors(path, sd, metadata):
    """Writes a state_dict as safetensors.torch.save_file does (a plain
    writer: the safetensors package is not needed), every dtype as stored."""
    header, chunks, off = {"__metadata__": metadata}, [], 0
    for name, t in sd.items():
        dtype, npt = SAFETENSORS_DTYPES[t.dtype]
        b = t.detach().contiguous().numpy().astype(npt).tobytes()
        header[name] = {"dtype": dtype, "shape": list(t.shape), "data_offsets": [off, off + len(b)]}
        chunks.append(b); off += len(b)
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(chunks))


def setup(ddir, normalize):
    """Loads the dataset's graph and features into this module's globals."""
    global N, src, dst, src_l, dst_l, x
    indptr = np.load(os.path.join(ddir, "indptr.npy"))
    indices = np.load(os.path.join(ddir, "indices.npy"))
    x = torch.from_numpy(np.load(os.path.join(ddir, "features.npy")).astype(np.float32))
    if normalize:
        s = x.sum(1, keepdim=True)
        x = torch.where(s != 0, x / torch.where(s != 0, s, torch.ones_like(s)), x)
    N = x.shape[0]
    dst = torch.from_numpy(np.repeat(np.arange(N), np.diff(indptr)).astype(np.int64))
    src = torch.from_numpy(indices.astype(np.int64))
    loops = torch.arange(N)
    keep = src != dst
    src_l = torch.cat([src[keep], loops]); dst_l = torch.cat([dst[keep], loops])
    return x

def scatter_sum(vals, index, n):
    out = torch.zeros((n,) + vals.shape[1:], dtype=vals.dtype)
    return out.index_add_(0, index, vals)

class SAGEConv(torch.nn.Module):
    def __init__(s, i, o):
        super().__init__()
        s.lin_l = torch.nn.Linear(i, o, bias=True)
        s.lin_r = torch.nn.Linear(i, o, bias=False)
    def forward(s, x):
        deg = scatter_sum(torch.ones(len(dst)), dst, N).clamp(min=1)
        mean = scatter_sum(x[src], dst, N) / deg[:, None]
        return s.lin_l(mean) + s.lin_r(x)

class GCNConv(torch.nn.Module):
    def __init__(s, i, o):
        super().__init__()
        s.lin = torch.nn.Linear(i, o, bias=False)
        s.bias = torch.nn.Parameter(torch.zeros(o))
    def forward(s, x):
        deg = scatter_sum(torch.ones(len(dst_l)), dst_l, N)
        norm = deg[src_l].rsqrt() * deg[dst_l].rsqrt()
        h = s.lin(x)
        return scatter_sum(h[src_l] * norm[:, None], dst_l, N) + s.bias

class GATConv(torch.nn.Module):
    def __init__(s, i, o, heads, concat):
        super().__init__()
        s.h, s.o, s.concat = heads, o, concat
        s.lin = torch.nn.Linear(i, heads * o, bias=False)
        s.att_src = torch.nn.Parameter(torch.zeros(1, heads, o))
        s.att_dst = torch.nn.Parameter(torch.zeros(1, heads, o))
        s.bias = torch.nn.Parameter(torch.zeros(heads * o if concat else o))
    def forward(s, x):
        h = s.lin(x).view(-1, s.h, s.o)
        a_s = (h * s.att_src).sum(-1); a_d = (h * s.att_dst).sum(-1)
        e = torch.nn.functional.leaky_relu(a_s[src_l] + a_d[dst_l], 0.2)
        e = e - e.max()
        w = e.exp()
        alpha = w / scatter_sum(w, dst_l, N)[dst_l]
        out = scatter_sum(h[src_l] * alpha[:, :, None], dst_l, N)
        out = out.reshape(N, -1) if s.concat else out.mean(1)
        return out + s.bias

class MLP(torch.nn.Module):
    def __init__(s, i, h, o):
        super().__init__()
        s.lin1 = torch.nn.Linear(i, h)
        s.lin2 = torch.nn.Linear(h, o)
    def forward(s, x):
        return s.lin2(torch.relu(s.lin1(x)))

class APPNP(torch.nn.Module):
    def __init__(s, c):
        super().__init__()
        s.convs = torch.nn.ModuleList([MLP(c["in"], c["hidden"], c["out"])])
        s.K, s.alpha = c["layers"], c.get("alpha", 0.1)
    def forward(s, x):
        h0 = s.convs[0](x)
        deg = scatter_sum(torch.ones(len(dst_l)), dst_l, N)
        norm = deg[src_l].rsqrt() * deg[dst_l].rsqrt()
        h = h0
        for _ in range(s.K):
            h = (1 - s.alpha) * scatter_sum(h[src_l] * norm[:, None], dst_l, N) + s.alpha * h0
        return h

def gcn_norm():
    deg = scatter_sum(torch.ones(len(dst_l)), dst_l, N)
    return deg[src_l].rsqrt() * deg[dst_l].rsqrt()

class GINConv(torch.nn.Module):
    # PyG's GINConv(Sequential(Linear(bias=False), BatchNorm1d, ReLU, Linear)),
    # eps 0, train_eps=False: eps is a buffer of shape [1], as PyG registers.
    def __init__(s, i, h, o):
        super().__init__()
        s.register_buffer("eps", torch.zeros(1))
        s.nn = torch.nn.Sequential(torch.nn.Linear(i, h, bias=False), torch.nn.BatchNorm1d(h), torch.nn.ReLU(), torch.nn.Linear(h, o))
    def forward(s, x):
        return s.nn((1 + s.eps) * x + scatter_sum(x[src], dst, N))

class GCN2Conv(torch.nn.Module):
    # PyG's GCN2Conv with shared weights, normalize=True.
    def __init__(s, ch, alpha, beta, head=None):
        super().__init__()
        s.weight1 = torch.nn.Parameter(torch.zeros(ch, ch))
        s.alpha, s.beta = alpha, beta
        if head is not None: s.lin = torch.nn.Linear(*head)
    def forward(s, x, x0):
        norm = gcn_norm()
        h = scatter_sum(x[src_l] * norm[:, None], dst_l, N)
        h = (1 - s.alpha) * h + s.alpha * x0
        out = (1 - s.beta) * h + s.beta * (h @ s.weight1)
        if hasattr(s, "lin"): out = s.lin(torch.relu(out))
        return out

class GCNII(torch.nn.Module):
    def __init__(s, c):
        super().__init__()
        import math
        L, H = c["layers"], c["hidden"]
        class In(torch.nn.Module):
            def __init__(t):
                super().__init__(); t.lin = torch.nn.Linear(c["in"], H)
        convs = [In()]
        for l in range(1, L + 1):
            convs.append(GCN2Conv(H, c["alpha"], math.log(c["theta"] / l + 1), (H, c["out"]) if l == L else None))
        s.convs = torch.nn.ModuleList(convs)
    def forward(s, x):
        x = x0 = torch.relu(s.convs[0].lin(x))
        for l, conv in enumerate(s.convs[1:]):
            x = conv(x, x0)
            if l < len(s.convs) - 2: x = torch.relu(x)
        return x

class DegreeScalerAggregation(torch.nn.Module):
    # The buffers of PyG's DegreeScalerAggregation (train_norm=False): the
    # mean degree (used by linear scalers only) and mean log-degree.
    def __init__(s):
        super().__init__()
        s.register_buffer("avg_deg_lin", torch.zeros(1))
        s.register_buffer("avg_deg_log", torch.zeros(1))

class PNAConv(torch.nn.Module):
    # PyG's PNAConv: aggregators mean, min, max, std; scalers identity,
    # amplification, attenuation; towers 1, one pre and post layer.
    def __init__(s, i, o, avg_log, enc=None):
        super().__init__()
        if enc is not None: s.enc = torch.nn.Linear(enc, i)
        s.aggr_module = DegreeScalerAggregation()
        s.aggr_module.avg_deg_log.fill_(avg_log)  # the checkpoint's value replaces it
        s.pre_nns = torch.nn.ModuleList([torch.nn.Sequential(torch.nn.Linear(2 * i, i))])
        s.post_nns = torch.nn.ModuleList([torch.nn.Sequential(torch.nn.Linear(13 * i, o))])
        s.lin = torch.nn.Linear(o, o)
    def forward(s, x):
        if hasattr(s, "enc"): x = s.enc(x)
        m = s.pre_nns[0](torch.cat([x[dst], x[src]], -1))
        cnt = scatter_sum(torch.ones(len(dst)), dst, N)
        c = cnt.clamp(min=1)[:, None]
        mean = scatter_sum(m, dst, N) / c
        mean2 = scatter_sum(m * m, dst, N) / c
        idx = dst[:, None].expand_as(m)
        mx = torch.full((N, m.shape[1]), -float("inf")).scatter_reduce(0, idx, m, "amax", include_self=True)
        mn = torch.full((N, m.shape[1]), float("inf")).scatter_reduce(0, idx, m, "amin", include_self=True)
        mx = torch.where(cnt[:, None] > 0, mx, torch.zeros_like(mx))
        mn = torch.where(cnt[:, None] > 0, mn, torch.zeros_like(mn))
        std = (mean2 - mean * mean).clamp(min=STD_FLOOR).sqrt()
        std = std.masked_fill(std <= STD_FLOOR ** 0.5, 0.0)
        a = torch.cat([mean, mn, mx, std], -1)
        ld = torch.log(cnt.clamp(min=1) + 1)[:, None]
        avg_log = s.aggr_module.avg_deg_log
        a = torch.cat([a, a * (ld / avg_log), a * (avg_log / ld)], -1)
        return s.lin(s.post_nns[0](torch.cat([x, a], -1)))

class JKLayer(torch.nn.Module):
    def __init__(s, i, h, head=None):
        super().__init__()
        s.conv = torch.nn.Linear(i, h)
        if head is not None: s.lin = torch.nn.Linear(*head)

class GCNJK(torch.nn.Module):
    # PyG's BasicGNN(GCNConv) with jk="cat": ReLU after every layer, then
    # the classifier over the concatenation.
    def __init__(s, c):
        super().__init__()
        L, H = c["layers"], c["hidden"]
        s.convs = torch.nn.ModuleList([JKLayer(c["in"] if l == 0 else H, H, (L * H, c["out"]) if l == L - 1 else None) for l in range(L)])
    def forward(s, x):
        norm, hs = gcn_norm(), []
        for conv in s.convs:
            h = conv.conv.weight
            x = torch.relu(scatter_sum((x @ h.t())[src_l] * norm[:, None], dst_l, N) + conv.conv.bias)
            hs.append(x)
        return s.convs[-1].lin(torch.cat(hs, -1))

class Net(torch.nn.Module):
    def __init__(s, c):
        super().__init__()
        dims, convs = c["in"], []
        for l in range(c["layers"]):
            last = l == c["layers"] - 1
            o = c["out"] if last else c["hidden"]
            if c["kind"] == "sage": conv = SAGEConv(dims, o); dims = o
            elif c["kind"] == "gcn": conv = GCNConv(dims, o); dims = o
            elif c["kind"] == "gin": conv = GINConv(dims, c["hidden"], o); dims = o
            elif c["kind"] == "pna":
                conv = PNAConv(c["hidden"] if l == 0 else dims, o, c["avg_log_degree"], dims if l == 0 else None); dims = o
            else:
                heads = c.get("out_heads", 1) if last else c.get("heads", 1)
                conv = GATConv(dims, o, heads, not last); dims = o if last else heads * o
            convs.append(conv)
        s.convs = torch.nn.ModuleList(convs)
        s.act = torch.nn.functional.elu if c["kind"] == "gat" else torch.relu
        s.dropout = c.get("dropout", 0.0)
    def forward(s, x):
        for l, conv in enumerate(s.convs):
            x = torch.nn.functional.dropout(x, s.dropout, s.training)
            x = conv(x)
            if l < len(s.convs) - 1: x = s.act(x)
        return x


# PyG 2.3's StdAggregation floor on the variance: sqrt above it, 0 at or
# below (a discontinuity; torch_check.py moves it by float32's rounding of
# the variance to tell that apart from a real mismatch).
STD_FLOOR = 1e-5


def build(cfg):
    return {"appnp": APPNP, "gcnii": GCNII, "gcn-jk": GCNJK}.get(cfg["kind"], Net)(cfg)

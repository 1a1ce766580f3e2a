# Loads a graphmill checkpoint into plain PyTorch modules named and shaped
# as PyTorch Geometric's (convs.{i}.lin_l/lin_r for SAGEConv, lin + bias for
# GCNConv, lin + att_src/att_dst + bias for GATConv), with
# load_state_dict(strict=True), runs them on the dataset and compares the
# logits with graphmill's. Usage: torch_check.py CKPT DATASET_DIR LOGITS.npy
import json, os, struct, sys
import numpy as np
import torch

ckpt, ddir, logits_path = sys.argv[1:4]

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

sd, meta = load_safetensors(ckpt)
cfg = json.loads(meta["graphmill_config"])
indptr = np.load(os.path.join(ddir, "indptr.npy"))
indices = np.load(os.path.join(ddir, "indices.npy"))
x = torch.from_numpy(np.load(os.path.join(ddir, "features.npy")).astype(np.float32))
if meta.get("normalize_features", "false") == "true":
    s = x.sum(1, keepdim=True)
    x = torch.where(s != 0, x / torch.where(s != 0, s, torch.ones_like(s)), x)
N = x.shape[0]
dst = torch.from_numpy(np.repeat(np.arange(N), np.diff(indptr)).astype(np.int64))
src = torch.from_numpy(indices.astype(np.int64))
loops = torch.arange(N)
keep = src != dst
src_l = torch.cat([src[keep], loops]); dst_l = torch.cat([dst[keep], loops])

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

class Net(torch.nn.Module):
    def __init__(s, c):
        super().__init__()
        dims, convs = c["in"], []
        for l in range(c["layers"]):
            last = l == c["layers"] - 1
            o = c["out"] if last else c["hidden"]
            if c["kind"] == "sage": conv = SAGEConv(dims, o); dims = o
            elif c["kind"] == "gcn": conv = GCNConv(dims, o); dims = o
            else:
                heads = c.get("out_heads", 1) if last else c.get("heads", 1)
                conv = GATConv(dims, o, heads, not last); dims = o if last else heads * o
            convs.append(conv)
        s.convs = torch.nn.ModuleList(convs)
        s.act = torch.nn.functional.elu if c["kind"] == "gat" else torch.relu
    def forward(s, x):
        for l, conv in enumerate(s.convs):
            x = conv(x)
            if l < len(s.convs) - 1: x = s.act(x)
        return x

net = APPNP(cfg) if cfg["kind"] == "appnp" else Net(cfg)
net.load_state_dict(sd, strict=True)
with torch.no_grad():
    out = net(x).numpy()
ours = np.load(logits_path)
err = np.abs(out - ours).max()
assert out.shape == ours.shape, (out.shape, ours.shape)
assert np.allclose(out, ours, rtol=1e-3, atol=1e-4), f"max abs difference {err}"
print(f"ok {cfg['kind']}: max abs difference {err:.2e}")

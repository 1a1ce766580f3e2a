#!/usr/bin/env python3
"""GraphSAGE in plain PyTorch, trained on graphmill minibatches.

The model is a few lines of torch.nn mirroring PyG's SAGEConv (mean
aggregation, lin_l with bias on the neighbours, lin_r without on the root),
so its state_dict has PyG's names and loads graphmill checkpoints (see
load_checkpoint.py). Sampling runs in a `graphmill serve sampler` process
that the Loader starts (the `graphmill` program must be on PATH); batches
arrive as numpy views of the received bytes and become tensors without a
copy (batch.torch()).

With no arguments it trains on the built-in Cora with graphmill's own
GraphSAGE settings (`graphmill train --model sage`: fanouts 25,10, batches
of 64 seeds, hidden 64, dropout 0.5, Adam lr 0.01, weight decay 5e-4, 50
epochs, row-normalised features, the best validation epoch's model), on the
very minibatches `graphmill train --model sage --seed SEED` samples, and
prints `test accuracy: NN.N%`.
"""

import argparse
import copy
import os
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn

# the package next to this example (python/), installed or not
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import graphmill  # noqa: E402
import graphmill.torch as gt  # noqa: E402


def mean_aggregate(x_src, edge_index, num_dst):
    """Mean of the source rows over every destination's in-edges (PyG's
    aggr="mean": a destination with no edges gets zeros)."""
    src, dst = edge_index
    out = torch.zeros(num_dst, x_src.shape[1], dtype=x_src.dtype, device=x_src.device)
    out.index_add_(0, dst, x_src[src])
    deg = torch.bincount(dst, minlength=num_dst).clamp_(min=1).to(x_src.dtype)
    return out / deg[:, None]


class SAGEConv(nn.Module):
    """PyG's SAGEConv (mean): lin_l(mean of neighbours) + lin_r(root)."""

    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.lin_l = nn.Linear(in_channels, out_channels, bias=True)
        self.lin_r = nn.Linear(in_channels, out_channels, bias=False)
        # Glorot weights and a zero bias, as graphmill initialises SAGEConv
        nn.init.xavier_uniform_(self.lin_l.weight)
        nn.init.xavier_uniform_(self.lin_r.weight)
        nn.init.zeros_(self.lin_l.bias)

    def forward(self, x, edge_index, size=None):
        num_dst = x.shape[0] if size is None else size[1]
        return self.lin_l(mean_aggregate(x, edge_index, num_dst)) + self.lin_r(x[:num_dst])


class SAGE(nn.Module):
    """Layers of SAGEConv with dropout on every layer's input and ReLU in
    between (graphmill's and PyG's GraphSAGE)."""

    def __init__(self, in_channels, hidden, out_channels, num_layers=2, dropout=0.5):
        super().__init__()
        dims = [in_channels] + [hidden] * (num_layers - 1) + [out_channels]
        self.convs = nn.ModuleList(SAGEConv(a, b) for a, b in zip(dims[:-1], dims[1:]))
        self.dropout = dropout

    def forward(self, x, adjs):
        """adjs: [(edge_index, e_id, size)] per layer, input layer first (a
        graphmill batch's .adjs, or PyG NeighborSampler's)."""
        for i, (edge_index, _, size) in enumerate(adjs):
            x = F.dropout(x, self.dropout, self.training)
            x = self.convs[i](x, edge_index, size)
            if i < len(self.convs) - 1:
                x = F.relu(x)
        return x

    @torch.no_grad()
    def full_graph(self, x, edge_index):
        """Inference on the whole graph (every neighbour, every layer)."""
        n = x.shape[0]
        return self.forward(x, [(edge_index, None, (n, n))] * len(self.convs))


def normalize_rows(x):
    """Row-normalise features (PyG's NormalizeFeatures; all-zero rows stay
    zero), as graphmill train does by default."""
    x = x.float()
    s = x.sum(1, keepdim=True)
    return x / torch.where(s == 0, torch.ones_like(s), s)


def accuracy(logits, y):
    return (logits.argmax(1) == y).float().mean().item()


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dataset", default="cora", help='dataset directory, or "cora" (built-in)')
    p.add_argument("--sampler", default=None, help="address of a running 'graphmill serve sampler' (default: start one)")
    p.add_argument("--epochs", type=int, default=50)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--fanouts", default="25,10")
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--dropout", type=float, default=0.5)
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--weight-decay", type=float, default=5e-4)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default="cpu", help='"cpu" or "cuda" (batches are staged on the device by the Loader)')
    p.add_argument("--save", default=None, help="write the best model's state_dict (PyG names) to this .pt file")
    p.add_argument("--quiet", action="store_true")
    a = p.parse_args(argv)
    torch.manual_seed(a.seed)
    device = torch.device(a.device)

    ds = graphmill.open_dataset(a.dataset)
    fanouts = [int(f) for f in a.fanouts.split(",")]
    # Full-graph evaluation tensors (memory-mapped dataset -> torch, no copy
    # until normalisation).
    x_all = normalize_rows(gt.features(ds)).to(device)
    y_all = gt.tensor(ds.labels).long().to(device)
    ei_all = torch.from_numpy(ds.edge_index()).to(device)
    val_idx = gt.tensor(ds.val_idx).long().to(device)
    test_idx = gt.tensor(ds.test_idx).long().to(device)

    model = SAGE(ds.feature_dim, a.hidden, ds.num_classes, num_layers=len(fanouts), dropout=a.dropout).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=a.lr, weight_decay=a.weight_decay)
    # train_loader_seed: the minibatches `graphmill train --model sage --seed SEED` samples
    kw = dict(split="train", fanouts=fanouts, batch_size=a.batch_size, shuffle=True, seed=graphmill.train_loader_seed(a.seed),
              device=a.device if device.type != "cpu" else None)
    loader = graphmill.Loader(a.sampler, **kw) if a.sampler else graphmill.Loader(dataset=ds.dir, **kw)
    best = (-1.0, 0.0, None)
    t0 = time.perf_counter()
    with loader:
        for epoch in range(a.epochs):
            model.train()
            total, n = 0.0, 0
            for b in loader:
                t = b if isinstance(b, gt.TorchBatch) else b.torch()  # zero-copy views on the CPU
                out = model(normalize_rows(t.x), t.adjs)
                loss = F.cross_entropy(out, t.y.long())
                opt.zero_grad()
                loss.backward()
                opt.step()
                total += loss.item() * t.batch_size
                n += t.batch_size
            model.eval()
            logits = model.full_graph(x_all, ei_all)
            va, te = accuracy(logits[val_idx], y_all[val_idx]), accuracy(logits[test_idx], y_all[test_idx])
            if va > best[0]:
                best = (va, te, copy.deepcopy(model.state_dict()))
            if not a.quiet:
                print(f"epoch {epoch + 1:3d}  loss {total / max(n, 1):.4f}  val {va:.1%}  test {te:.1%}")
    if a.save:
        torch.save(best[2], a.save)
    print(f"best val accuracy: {best[0]:.1%}  ({time.perf_counter() - t0:.1f} s)")
    print(f"test accuracy: {100 * best[1]:.1f}%")
    return best[1]


if __name__ == "__main__":
    main()

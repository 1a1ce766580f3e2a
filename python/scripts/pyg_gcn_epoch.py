"""Times PyG's GCN on a graphmill dataset, full graph, one step per epoch:
the peer of 'graphmill bench graph --dataset cora --threads 1' (Kipf and
Welling's settings: 2 layers, hidden 16, dropout 0.5, Adam lr 0.01, weight
decay 5e-4; GCNConv adds self-loops and normalises symmetrically).

    GLIBC_TUNABLES=glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=68719476736 \\
        PYTHONPATH=python python python/scripts/pyg_gcn_epoch.py --dataset cora --epochs 200

Prints one JSON object: the median and quartiles of the milliseconds per
epoch over the epochs after the first 10 (warm-up), torch's thread count
and versions. Without the glibc tunables torch 1.13 maps every large
tensor afresh and PyG runs several times slower (see ../shared/wheels).
"""

import argparse
import json
import statistics
import time

import numpy as np
import torch
import torch.nn.functional as F
import torch_geometric
from torch_geometric.nn import GCNConv

from graphmill.dataset import open_dataset


class GCN(torch.nn.Module):
    def __init__(self, fin, hidden, classes):
        super().__init__()
        self.conv1 = GCNConv(fin, hidden, cached=True)
        self.conv2 = GCNConv(hidden, classes, cached=True)

    def forward(self, x, edge_index):
        x = F.dropout(x, p=0.5, training=self.training)
        x = F.relu(self.conv1(x, edge_index))
        x = F.dropout(x, p=0.5, training=self.training)
        return self.conv2(x, edge_index)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dataset", default="cora", help='a graphmill dataset directory or "cora"')
    ap.add_argument("--epochs", type=int, default=200)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--binary", default=None, help="the graphmill program (to materialise a built-in dataset)")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    d = open_dataset(a.dataset, mmap_mode="c", binary=a.binary)
    x = torch.from_numpy(np.ascontiguousarray(d.features_float32()))
    ei = torch.from_numpy(np.ascontiguousarray(d.edge_index()).astype(np.int64))
    y = torch.from_numpy(np.asarray(d.labels).astype(np.int64))
    train = torch.from_numpy(np.asarray(d.train_idx).astype(np.int64))
    classes = int(y.max()) + 1
    model = GCN(x.shape[1], 16, classes)
    opt = torch.optim.Adam([
        dict(params=model.conv1.parameters(), weight_decay=5e-4),
        dict(params=model.conv2.parameters(), weight_decay=0)], lr=0.01)
    model.train()
    times = []
    for _ in range(a.epochs):
        t0 = time.perf_counter()
        opt.zero_grad()
        out = model(x, ei)
        loss = F.cross_entropy(out[train], y[train])
        loss.backward()
        opt.step()
        times.append((time.perf_counter() - t0) * 1e3)
    steady = times[10:] if len(times) > 20 else times
    q = statistics.quantiles(steady, n=4)
    print(json.dumps({"model": "gcn", "dataset": a.dataset, "epochs": a.epochs, "threads": torch.get_num_threads(),
                      "ms_per_epoch": statistics.median(steady), "ms_q1": q[0], "ms_q3": q[2],
                      "torch": torch.__version__, "torch_geometric": torch_geometric.__version__}))


if __name__ == "__main__":
    main()

"""GNNAutoScale on a plain PyTorch GCN, with graphmill's partitioner and
batches of parts: the model's forward has one extra line (push_and_pull),
and its accuracy matches full-graph training.

    python3 python/examples/gas_gcn.py                 # Cora
    python3 python/examples/gas_gcn.py --dataset citeseer

It trains the same two-layer GCN (Kipf & Welling: 16 hidden, dropout 0.5,
Adam lr 0.01, weight decay 5e-4 on the first layer, 200 epochs, model
selected on validation accuracy) on the full graph and with GNNAutoScale
(parts of the graph per batch, the halo's hidden rows from a history),
over several seeds, and prints both mean test accuracies; the last line
is GAS's.
"""

import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import graphmill  # noqa: E402
import graphmill.gas  # noqa: E402
from graphmill import _cli  # noqa: E402
from graphmill.torch import History, push_and_pull  # noqa: E402

# GNNAutoScale's Planetoid settings: 40 parts, 10 per batch.
PARTS, PARTS_PER_BATCH = 40, 10


def load(name):
    """A dataset directory: the built-in Cora, or a Planetoid dataset
    imported from $GRAPHMILL_DATA (../shared/data) into a temporary one."""
    if name == "cora":
        return graphmill.open_dataset(_cli.resolve_dataset("cora"))
    if os.path.isdir(name):
        return graphmill.open_dataset(name)
    root = os.environ.get("GRAPHMILL_DATA") or os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "data")
    out = os.path.join(tempfile.mkdtemp(prefix="gas-gcn-"), name)
    r = subprocess.run([_cli.find_binary(), "data", "import", "--format", "planetoid", "--src", os.path.join(root, "planetoid"),
                        "--name", name, "--out", out], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"gas_gcn.py: cannot import {name} from {os.path.join(root, 'planetoid')} "
                 f"(set GRAPHMILL_DATA to the folder holding planetoid/, or give a dataset directory): "
                 f"{(r.stderr or r.stdout).strip().splitlines()[-1:]}")
    return graphmill.open_dataset(out)


def gcn_weights(edge_index, num_nodes):
    """GCN's normalisation with self-loops over the whole graph:
    1/sqrt(deg(s) deg(d)), deg counting the self-loop."""
    deg = torch.bincount(edge_index[1], minlength=num_nodes).float() + 1
    return deg.rsqrt()


def propagate(h, edge_index, dinv, n_id, n_out):
    """Σ over in-edges (and a self-loop) of dinv[s] dinv[d] h[s], for the
    first n_out rows (local ids; n_id maps them to global ones)."""
    src, dst = edge_index
    w = dinv[n_id[src]] * dinv[n_id[dst]]
    out = torch.zeros(n_out, h.shape[1], dtype=h.dtype)
    out.index_add_(0, dst, h[src] * w[:, None])
    self_w = dinv[n_id[:n_out]] ** 2
    return out + h[:n_out] * self_w[:, None]


def sparse_dropout(x, p, training):
    """Dropout on the non-zero entries of bag-of-words features (Kipf &
    Welling's sparse dropout: the same distribution as dense dropout, at
    the cost of the non-zeros only), as a sparse tensor for the product."""
    xs = x if x.is_sparse else x.to_sparse()
    if not training:
        return xs
    return torch.sparse_coo_tensor(xs.indices(), F.dropout(xs.values(), p), xs.shape).coalesce()


class SparseLinear(torch.nn.Linear):
    """torch.nn.Linear over a sparse input."""

    def forward(self, x):
        return torch.sparse.mm(x, self.weight.t()) + self.bias


class GCN(torch.nn.Module):
    """A plain two-layer GCN. Given a GAS batch (batch_size, n_id) its
    hidden layer goes through push_and_pull: the batch's own rows are
    pushed to the history, the halo's rows pulled from it."""

    def __init__(self, num_nodes, dim, hidden, classes, dinv):
        super().__init__()
        self.lin1 = SparseLinear(dim, hidden)
        self.lin2 = torch.nn.Linear(hidden, classes)
        self.history = History(num_nodes, hidden)
        self.dinv = dinv

    def forward(self, x, edge_index, batch_size=None, n_id=None):
        full = n_id is None
        n = x.shape[0]
        ids = torch.arange(n) if full else n_id
        h = propagate(self.lin1(sparse_dropout(x, 0.5, self.training)), edge_index, self.dinv, ids, n).relu()
        if not full:
            h = push_and_pull(self.history, h, batch_size, n_id)  # the one GAS line
        h = F.dropout(h, 0.5, self.training)
        n_out = n if full else batch_size
        return propagate(self.lin2(h), edge_index, self.dinv, ids, n_out)


def run(ds, seed, gas, epochs=200):
    torch.manual_seed(seed)
    x = torch.from_numpy(np.asarray(ds.features_float32(), dtype=np.float32).copy())
    x = x / x.sum(1, keepdim=True).clamp(min=1)  # row-normalised, as Kipf & Welling
    xs = x.to_sparse()  # the whole graph's rows, for full-graph steps and evaluation
    y = torch.from_numpy(np.asarray(ds.labels, dtype=np.int64))
    ei = torch.from_numpy(ds.edge_index())
    dinv = gcn_weights(ei, ds.num_nodes)
    model = GCN(ds.num_nodes, x.shape[1], 16, ds.num_classes, dinv)
    opt = torch.optim.Adam([dict(params=model.lin1.parameters(), weight_decay=5e-4),
                            dict(params=model.lin2.parameters(), weight_decay=0)], lr=0.01)
    train = torch.zeros(ds.num_nodes, dtype=torch.bool)
    train[torch.from_numpy(np.asarray(ds.train_idx, dtype=np.int64))] = True
    val = torch.from_numpy(np.asarray(ds.val_idx, dtype=np.int64))
    test = torch.from_numpy(np.asarray(ds.test_idx, dtype=np.int64))
    loader = graphmill.gas.Loader((ei, x, y), num_parts=PARTS, batch_size=PARTS_PER_BATCH, shuffle=True, seed=seed) if gas else None
    if gas:
        with torch.no_grad():  # GAS fills the histories once before training
            model.eval()
            model.history.push(propagate(model.lin1(xs), ei, dinv, torch.arange(len(x)), len(x)).relu())
    best_val, best_test = -1.0, 0.0
    for _ in range(epochs):
        model.train()
        if gas:
            for b in loader:
                m = train[b.n_id[:b.batch_size]]
                if not m.any():
                    continue
                opt.zero_grad()
                out = model(b.x, b.edge_index, b.batch_size, b.n_id)
                F.cross_entropy(out[m], b.y[:b.batch_size][m]).backward()
                opt.step()
        else:
            opt.zero_grad()
            out = model(xs, ei)
            F.cross_entropy(out[train], y[train]).backward()
            opt.step()
        model.eval()
        with torch.no_grad():
            pred = model(xs, ei).argmax(1)
        v = float((pred[val] == y[val]).float().mean())
        if v > best_val:
            best_val, best_test = v, float((pred[test] == y[test]).float().mean())
    return 100 * best_test


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dataset", default="cora", help="cora (built in), citeseer or pubmed (Planetoid files in $GRAPHMILL_DATA), or a dataset directory")
    ap.add_argument("--seeds", type=int, default=5, help="runs per mode (default 5)")
    ap.add_argument("--epochs", type=int, default=200)
    a = ap.parse_args()
    ds = load(a.dataset)
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    res = {}
    for gas in (False, True):
        accs = [run(ds, s, gas, a.epochs) for s in range(a.seeds)]
        res[gas] = float(np.mean(accs))
        print(f"{'GAS' if gas else 'full-graph'} GCN on {ds.name}: {' '.join(f'{v:.1f}' for v in accs)}")
    print(f"full-graph test accuracy: {res[False]:.1f}")
    print(f"GAS vs full graph: {res[True] - res[False]:+.1f} points")
    print(f"test accuracy: {res[True]:.1f}")


if __name__ == "__main__":
    main()

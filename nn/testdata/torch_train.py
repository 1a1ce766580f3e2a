# Trains a model of torch_models.py in plain PyTorch with graphmill's
# full-mode settings (Glorot initialisation, dropout on every layer's
# input, Adam with L2 weight decay, the model of the best validation
# accuracy kept) and prints its
# test accuracy per seed as JSON: the reference graphmill's GIN and PNA are
# compared with. Usage: torch_train.py DATASET_DIR CONFIG_JSON SEEDS...
# where CONFIG_JSON holds the model config (graphmill's nn.Config) plus
# "epochs", "lr", "weight_decay" and "normalize" (row-normalise the
# features; default true).
import json, os, sys
import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_models as tm

ddir, cfg = sys.argv[1], json.loads(sys.argv[2])
torch.set_num_threads(1)  # more threads only contend on the scatters here
x = tm.setup(ddir, cfg.get("normalize", True))
y = torch.from_numpy(np.load(os.path.join(ddir, "labels.npy")).astype(np.int64))
idx = {k: torch.from_numpy(np.load(os.path.join(ddir, k + "_idx.npy")).astype(np.int64)) for k in ("train", "val", "test")}
cfg["in"], cfg["out"] = x.shape[1], int(y.max()) + 1
if cfg["kind"] == "pna":
    deg = torch.bincount(tm.dst, minlength=tm.N).float()
    cfg["avg_log_degree"] = float(torch.log(deg + 1).mean())
out, vals = [], []
for seed in map(int, sys.argv[3:]):
    torch.manual_seed(seed)
    net = tm.build(cfg)
    # graphmill's initialisation (nn.Init): Glorot weights, zero biases.
    for mod in net.modules():
        if isinstance(mod, torch.nn.Linear):
            torch.nn.init.xavier_uniform_(mod.weight)
            if mod.bias is not None:
                torch.nn.init.zeros_(mod.bias)
    opt = torch.optim.Adam(net.parameters(), lr=cfg["lr"], weight_decay=cfg["weight_decay"])
    best, test = -1.0, 0.0
    for epoch in range(cfg["epochs"]):
        net.train(); opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(net(x)[idx["train"]], y[idx["train"]])
        loss.backward(); opt.step()
        net.eval()
        with torch.no_grad():
            pred = net(x).argmax(1)
        val = (pred[idx["val"]] == y[idx["val"]]).float().mean().item()
        if val > best:
            best, test = val, (pred[idx["test"]] == y[idx["test"]]).float().mean().item()
    out.append(test)
    vals.append(best)
print(json.dumps({"test_acc": out, "best_val_acc": vals}))

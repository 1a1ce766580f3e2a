#!/usr/bin/env python3
"""Loads a graphmill GraphSAGE checkpoint into the plain-PyTorch module of
sage_pyg_style.py and evaluates it on the whole graph.

graphmill checkpoints are safetensors files with PyG's parameter names
(convs.{i}.lin_l.weight, convs.{i}.lin_l.bias, convs.{i}.lin_r.weight), so
load_state_dict(strict=True) takes them as they are.

    graphmill train --model sage --save sage.safetensors
    python3 load_checkpoint.py sage.safetensors [--dataset cora]

With no checkpoint it runs that graphmill train command first (the
`graphmill` program must be on PATH). It prints the test accuracy PyTorch
computes next to the one graphmill recorded in the checkpoint.
"""

import argparse
import os
import subprocess
import sys
import tempfile

import torch

# the package next to this example (python/), installed or not, and sage_pyg_style.py
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)
import graphmill  # noqa: E402
import graphmill.torch as gt  # noqa: E402
from sage_pyg_style import SAGE, accuracy, normalize_rows  # noqa: E402


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("checkpoint", nargs="?", help="a graphmill .safetensors checkpoint of a sage model")
    p.add_argument("--dataset", default="cora")
    a = p.parse_args(argv)
    tmp = None
    if a.checkpoint is None:
        tmp = tempfile.TemporaryDirectory()
        a.checkpoint = os.path.join(tmp.name, "sage.safetensors")
        exe = graphmill._cli.find_binary()
        print(f"training: graphmill train --model sage --dataset {a.dataset} --save {a.checkpoint}")
        subprocess.run([exe, "train", "--model", "sage", "--dataset", a.dataset, "--quiet", "--save", a.checkpoint], check=True)
    state, cfg = gt.load_state_dict(a.checkpoint)
    if cfg.get("kind") != "sage":
        raise SystemExit(f"{a.checkpoint} holds a {cfg.get('kind')} model; this example builds GraphSAGE")
    model = SAGE(cfg["in"], cfg["hidden"], cfg["out"], num_layers=cfg["layers"], dropout=cfg["dropout"])
    model.load_state_dict(state, strict=True)
    model.eval()

    ds = graphmill.open_dataset(a.dataset)
    x = gt.features(ds)
    # graphmill train --save records how training read the features; a
    # checkpoint without the key gets GraphSAGE's default (row-normalised),
    # as graphmill's own loader assumes.
    norm = cfg["_metadata"].get("normalize_features")
    if norm is None:
        print(f"{a.checkpoint} does not record normalize_features: assuming GraphSAGE's default (true)", file=sys.stderr)
    if norm in (None, "true"):
        x = normalize_rows(x)
    logits = model.full_graph(x.float(), torch.from_numpy(ds.edge_index()))
    y = gt.tensor(ds.labels).long()
    test = gt.tensor(ds.test_idx).long()
    acc = accuracy(logits[test], y[test])
    rec = cfg["_metadata"].get("test_acc")
    print(f"graphmill recorded test accuracy: {100 * float(rec):.1f}%" if rec else "graphmill recorded no test accuracy")
    print(f"test accuracy: {100 * acc:.1f}%")
    if tmp:
        tmp.cleanup()
    return acc, rec


if __name__ == "__main__":
    main()

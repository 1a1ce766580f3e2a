"""The Python side of ``graphmill bench python``: receive minibatches from a
sampler service, convert them to torch tensors, and report the rate and
the copies made.

    python3 -m graphmill.bench --addr 127.0.0.1:7070 --batches 50 --json

Modes (``--features``): ``frame`` has the service send the feature rows
inside each gRPC message (x is a view of the message); ``shm`` the same
payloads through shared memory (the frames carry offset and length; x is
a view of the shared mapping); ``local`` has it send
none and gathers x from the dataset's memory map in this process
(``--dataset``); ``none`` receives blocks and ids only. With ``--pyg`` it
also times PyG's NeighborLoader on the same graph when torch_geometric is
importable (it is not in Debian; reported as skipped otherwise).
"""

import argparse
import json
import statistics
import sys
import time



def _inside(t, lo, hi):
    p = t.data_ptr()
    return lo <= p and p + t.numel() * t.element_size() <= hi


def run_client(addr, fanouts, batch_size, batches, features="frame", dataset=None, seed=1, credits=4, split="train"):
    import torch  # noqa: F401

    import graphmill

    feat = {"frame": True, "shm": True, "local": "local", "none": False}[features]
    ld = graphmill.Loader(addr, split=split, fanouts=fanouts, batch_size=batch_size, shuffle=True, seed=seed,
                          features=feat, local_dataset=dataset, credits=credits, shm=features == "shm")
    times = []
    copies = 0
    arrays = 0
    frame_bytes = 0
    n_id = 0
    convert = 0.0
    got = 0
    try:
        while got < batches:
            for b in ld:
                t0 = time.perf_counter()
                t = b.torch()
                convert += time.perf_counter() - t0
                lo = b.buffer.ctypes.data
                hi = lo + len(b.buffer)
                ts = [t.n_id, t.y] + [a for blk in t.blocks for a in (blk.indptr, blk.indices)]
                if features in ("frame", "shm"):
                    ts.append(t.x)
                for x in ts:
                    if x is not None:
                        arrays += 1
                        copies += 0 if _inside(x, lo, hi) else 1
                if features == "local":
                    # gathered here (the work the Go loader does too), not a copy of received bytes;
                    # its tensor must share the gathered array's memory
                    arrays += 1
                    copies += 0 if t.x.data_ptr() == b.x.ctypes.data else 1
                n_id += len(b.n_id)
                times.append(time.perf_counter())
                got += 1
                if got >= batches:
                    break
        frame_bytes = ld.bytes_received  # payloads: the frames and the rows after them
    finally:
        ld.close()
    # the rate between the first and the last batch: no connection set-up
    span = times[-1] - times[0] if len(times) > 1 else float("nan")
    return {
        "features": features,
        "transport": ld.transport,
        "batches": got,
        "batches_per_s": (len(times) - 1) / span if len(times) > 1 else 0.0,
        "frame_mib_per_batch": frame_bytes / got / 2 ** 20 if got else 0.0,
        "input_nodes_per_batch": n_id / got if got else 0.0,
        "torch_convert_ms_per_batch": 1000 * convert / got if got else 0.0,
        "arrays_checked": arrays,
        "copies_per_batch": copies / got if got else 0.0,
    }


def _pyg_data(dataset):
    """(dataset, its PyG Data, the training seeds), or a "skipped" report
    when PyG is not importable."""
    try:
        import torch
        from torch_geometric.data import Data
    except ImportError as e:
        return None, {"skipped": f"PyG is not importable ({e.name or e}); Debian does not package it"}, None
    import graphmill
    import graphmill.torch as gt

    ds = graphmill.open_dataset(dataset)
    data = Data(x=gt.features(ds), y=gt.tensor(ds.labels).long(), edge_index=torch.from_numpy(ds.edge_index()),
                num_nodes=ds.num_nodes)
    return ds, data, gt.tensor(ds.train_idx).long()


def run_pyg(dataset, fanouts, batch_size, batches, seed=1):
    ds, data, seeds = _pyg_data(dataset)
    if ds is None:
        return data
    import torch
    from torch_geometric.loader import NeighborLoader

    torch.manual_seed(seed)
    times = []
    try:
        for b in NeighborLoader(data, num_neighbors=list(fanouts), batch_size=batch_size, input_nodes=seeds,
                                shuffle=True):
            times.append(time.perf_counter())
            if len(times) >= batches:
                break
    except ImportError as e:  # PyG without pyg-lib and torch-sparse cannot sample
        return {"skipped": f"PyG's NeighborLoader cannot sample here: {e}"}
    span = times[-1] - times[0]
    return {"batches": len(times), "batches_per_s": (len(times) - 1) / span if span > 0 else 0.0}


def _sage(dim, hidden, classes, layers=2):
    """PyG's GraphSAGE with trim_to_layer: the model a PyG user runs on
    either loader."""
    import torch
    from torch_geometric.nn import SAGEConv
    from torch_geometric.utils import trim_to_layer

    class SAGE(torch.nn.Module):
        def __init__(self):
            super().__init__()
            dims = [dim] + [hidden] * (layers - 1) + [classes]
            self.convs = torch.nn.ModuleList([SAGEConv(a, b) for a, b in zip(dims, dims[1:])])

        def forward(self, x, edge_index, nsn, nse):
            for i, conv in enumerate(self.convs):
                x, edge_index, _ = trim_to_layer(i, nsn, nse, x, edge_index)
                x = conv(x, edge_index)
                if i < len(self.convs) - 1:
                    x = x.relu()
            return x

    return SAGE()


def _sage_trainer(ds, hidden, seed, device=None):
    """(model, optimizer): the PyG GraphSAGE both loaders feed, seeded."""
    import torch

    torch.manual_seed(seed)
    m = _sage(ds.feature_dim, hidden, max(ds.num_classes, 2))
    if device is not None:
        m = m.to(device)
    return m, torch.optim.Adam(m.parameters(), lr=0.003)


def _sage_step(m, opt, b):
    """One training step of the model on a PyG-layout batch."""
    import torch

    opt.zero_grad()
    out = m(b.x, b.edge_index, b.num_sampled_nodes, b.num_sampled_edges)[:b.batch_size]
    torch.nn.functional.cross_entropy(out, b.y[:b.batch_size]).backward()
    opt.step()


def run_dropin(dataset, fanouts, batch_size, batches, seed=1, rounds=3, epoch_batches=8, hidden=256, workers=2,
               x_in_memory=True, pace=None):
    """graphmill.NeighborLoader against PyG's NeighborLoader on the same
    PyG Data and seeds, alternating, ``rounds`` times: batches/s of each
    loader alone (``vs_pyg_loader``: the median of each round's ratio),
    then ``epoch_batches`` training steps of the same PyG GraphSAGE
    (trim_to_layer) on each (``vs_pyg_epoch``: PyG's time over ours).
    ``pace``, when given, is called at the start of each round, this
    process idle, and returns the batches/s of graphmill's Go loader timed
    then (by ``graphmill bench python``): ``vs_go_loader`` is the median of
    the rounds' ratios of ours to it."""
    ds, data, seeds = _pyg_data(dataset)
    if ds is None:
        return data
    import torch
    from torch_geometric.loader import NeighborLoader as PygLoader

    if x_in_memory:
        data.x = data.x.clone()  # as a PyG user has it: loaded whole, not a memory map

    import graphmill

    torch.manual_seed(seed)
    t0 = time.perf_counter()
    ours = graphmill.NeighborLoader(data, num_neighbors=list(fanouts), batch_size=batch_size, input_nodes=seeds,
                                    shuffle=True, seed=seed, num_workers=workers)
    setup_ours = time.perf_counter() - t0
    t0 = time.perf_counter()
    pyg_missing = None
    try:
        pyg = PygLoader(data, num_neighbors=list(fanouts), batch_size=batch_size, input_nodes=seeds, shuffle=True)
        next(iter(pyg))
    except ImportError as e:  # PyG without pyg-lib and torch-sparse cannot sample: ours alone
        pyg, pyg_missing = None, f"PyG's NeighborLoader cannot sample here: {e}"
    setup_pyg = time.perf_counter() - t0

    def rate(loader, n):
        times = []
        for _ in range(-(-n // max(len(loader), 1)) + 1):
            it = iter(loader)
            try:
                for b in it:
                    times.append(time.perf_counter())
                    if len(times) > n:
                        return n / (times[-1] - times[0])
            finally:
                # ours: the epoch's stream ends now, so that its service
                # prepares nothing more while the other loader is timed
                getattr(it, "close", lambda: None)()
        return (len(times) - 1) / (times[-1] - times[0])

    def epoch(loader, n):
        model, opt = _sage_trainer(ds, hidden, seed)
        it = iter(loader)
        next(it)  # the first batch (the loader's start) is not timed
        for _ in range(2):  # nor the first steps (the process's heap grows)
            _sage_step(model, opt, next(it))
        t0 = time.perf_counter()
        for _ in range(n):
            _sage_step(model, opt, next(it))
        return (time.perf_counter() - t0) / n

    out = {"rounds": [], "setup_s": {"graphmill": setup_ours, "pyg": setup_pyg}, "x_in_memory": bool(x_in_memory),
           "service_gather": ours._x_file is not None}
    try:
        # Warm-up, not counted, for both: first touches of the features,
        # the caches and (ours) every payload slot of the shared segment
        # that the batches in flight take (the Go loader's side has its
        # own).
        rate(ours, 10)
        if pyg is not None:
            rate(pyg, 10)
        for _ in range(rounds):
            r = {}
            if pace is not None:
                r["go_loader_batches_per_s"] = go = pace()
            r["graphmill_batches_per_s"] = a = rate(ours, batches)
            if pace is not None:
                r["vs_go_loader"] = a / go
            if pyg is not None:
                r["pyg_batches_per_s"] = b = rate(pyg, batches)
                r["ratio"] = a / b
            out["rounds"].append(r)
        if pace is not None:
            out["vs_go_loader"] = statistics.median([r["vs_go_loader"] for r in out["rounds"]])
        out["graphmill_batches_per_s"] = max(r["graphmill_batches_per_s"] for r in out["rounds"])
        if pyg is None:
            out["pyg"] = {"skipped": pyg_missing}
            out["graphmill_step_s"] = epoch(ours, epoch_batches)
            return out
        # Twice each, in both orders (the later of two runs was up to 1.5x
        # faster, whichever loader it was); the faster of each.
        ea, eb = epoch(ours, epoch_batches), epoch(pyg, epoch_batches)
        eb, ea = min(eb, epoch(pyg, epoch_batches)), min(ea, epoch(ours, epoch_batches))
    finally:
        ours.close()
    out.update({
        "pyg_batches_per_s": max(r["pyg_batches_per_s"] for r in out["rounds"]),
        "vs_pyg_loader": statistics.median([r["ratio"] for r in out["rounds"]]),
        "graphmill_step_s": ea, "pyg_step_s": eb, "vs_pyg_epoch": eb / ea,
        "epoch_batches": epoch_batches, "hidden": hidden, "torch_threads": torch.get_num_threads(),
    })
    return out


def run_dropin_device(dataset, fanouts, batch_size, batches, device, caches=("10%", "30%"), seed=1, rounds=2,
                      epoch_batches=8, hidden=256, workers=2):
    """graphmill.NeighborLoader with batches on ``device`` (a GPU), without
    a feature cache and with each budget of ``caches``, against PyG's
    NeighborLoader followed by ``batch.to(device)`` where PyG can sample
    (it needs pyg-lib or torch-sparse). For each: batches/s of the loader
    alone, each batch waited for on the device; the time per training
    step of the same PyG GraphSAGE on the device; and the step on one
    batch already there, repeated (``compute_step_s``: the ceiling no
    loader beats)."""
    ds, data, seeds = _pyg_data(dataset)
    if ds is None:
        return data
    import torch

    import graphmill

    dev = torch.device(device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        return {"skipped": f"device {device}: PyTorch sees no CUDA device"}
    data.x = data.x.clone()
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)

    def rate(batches_of, n):
        times = []
        for b in batches_of():
            sync()  # the batch is usable on the device
            times.append(time.perf_counter())
            if len(times) > n:
                break
        return (len(times) - 1) / (times[-1] - times[0])

    def epoch(batches_of, n):
        m, opt = _sage_trainer(ds, hidden, seed, dev)
        it = iter(batches_of())
        _sage_step(m, opt, next(it))  # the first batch (the loader's start, the kernels' first run) is not timed
        sync()
        t0 = time.perf_counter()
        for _ in range(n):
            _sage_step(m, opt, next(it))
        sync()
        return (time.perf_counter() - t0) / n

    out = {"device": str(dev), "gpu": torch.cuda.get_device_name(dev) if dev.type == "cuda" else None,
           "torch": torch.__version__, "loaders": []}
    for cache in [None] + list(caches):
        t0 = time.perf_counter()
        ld = graphmill.NeighborLoader(data, num_neighbors=list(fanouts), batch_size=batch_size, input_nodes=seeds,
                                      shuffle=True, seed=seed, num_workers=workers, device=dev, feature_cache=cache)
        setup = time.perf_counter() - t0

        def ours():
            while True:
                yield from ld

        try:
            rate(ours, 5)
            if ld.feature_cache is not None:
                ld.feature_cache.reset_stats()
            r = max(rate(ours, batches) for _ in range(rounds))
            e = epoch(ours, epoch_batches)
            if cache is None:
                m, opt = _sage_trainer(ds, hidden, seed, dev)
                b = next(iter(ld))
                for _ in range(2):
                    _sage_step(m, opt, b)
                sync()
                t0 = time.perf_counter()
                for _ in range(epoch_batches):
                    _sage_step(m, opt, b)
                sync()
                out["compute_step_s"] = (time.perf_counter() - t0) / epoch_batches
            rec = {"feature_cache": cache or "none", "setup_s": setup, "batches_per_s": r, "step_s": e}
            if ld.feature_cache is not None:
                st = ld.feature_cache.stats
                rec.update(hit_rate=st.hit_rate, mib_to_device_per_batch=ld.feature_cache.bytes_per_batch() / 2 ** 20,
                           cache_mib=ld.feature_cache.budget_bytes / 2 ** 20)
            out["loaders"].append(rec)
        finally:
            ld.close()
    try:
        from torch_geometric.loader import NeighborLoader as PygLoader

        pyg = PygLoader(data, num_neighbors=list(fanouts), batch_size=batch_size, input_nodes=seeds, shuffle=True)

        def theirs():
            while True:
                for b in pyg:
                    yield b.to(dev)

        rate(theirs, 5)
        out["pyg"] = {"batches_per_s": max(rate(theirs, batches) for _ in range(rounds)),
                      "step_s": epoch(theirs, epoch_batches)}
    except Exception as e:  # PyG without pyg-lib and torch-sparse cannot sample
        out["pyg"] = {"skipped": f"{type(e).__name__}: {e}"}
    if "batches_per_s" in out["pyg"]:
        for rec in out["loaders"]:
            rec["vs_pyg_loader"] = rec["batches_per_s"] / out["pyg"]["batches_per_s"]
            rec["vs_pyg_epoch"] = out["pyg"]["step_s"] / rec["step_s"]
    for rec in out["loaders"]:
        rec["compute_over_step"] = out["compute_step_s"] / rec["step_s"]
    return out


PACE_LINE = "graphmill-bench pace"


def _pace():
    """Asks graphmill bench python (on stdout) to time its Go loader now,
    and returns the batches/s it answers on stdin."""
    print(PACE_LINE, flush=True)
    line = sys.stdin.readline()
    if not line:
        raise RuntimeError("--paced: stdin closed before the Go loader's rate came")
    return float(line)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--addr", help="sampler service address (not with --dropin)")
    p.add_argument("--fanouts", default="25,10")
    p.add_argument("--batch-size", type=int, default=1024)
    p.add_argument("--batches", type=int, default=50)
    p.add_argument("--features", default="frame", choices=["frame", "shm", "local", "none"])
    p.add_argument("--dataset", default=None, help="dataset directory (for --features local and --pyg)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--credits", type=int, default=4)
    p.add_argument("--pyg", action="store_true", help="also time PyG's NeighborLoader on --dataset")
    p.add_argument("--dropin", action="store_true", help="time graphmill.NeighborLoader against PyG's on --dataset instead")
    p.add_argument("--rounds", type=int, default=3, help="with --dropin: alternations of the two loaders")
    p.add_argument("--epoch-batches", type=int, default=8, help="with --dropin: training steps timed on each loader")
    p.add_argument("--workers", type=int, default=2, help="with --dropin: the sampler service's workers")
    p.add_argument("--x-mapped", action="store_true", help="with --dropin: x stays the dataset's memory map (default: a tensor in memory)")
    p.add_argument("--device", default="cpu", help="with --dropin: where batches go (cuda: the GPU comparison, run_dropin_device)")
    p.add_argument("--caches", default="10%,30%", help="with --dropin --device cuda: FeatureCache budgets to time besides none")
    p.add_argument("--paced", action="store_true",
                   help="with --dropin: before each round, print a line \"graphmill-bench pace\" and read the Go "
                        "loader's batches/s from stdin (graphmill bench python times it then): vs_go_loader")
    p.add_argument("--json", action="store_true")
    a = p.parse_args(argv)
    fanouts = [int(f) for f in a.fanouts.split(",")]
    if a.dropin and a.device != "cpu":
        out = run_dropin_device(a.dataset, fanouts, a.batch_size, a.batches, a.device,
                                [c for c in a.caches.split(",") if c], a.seed, max(1, a.rounds), a.epoch_batches,
                                workers=a.workers)
        json.dump(out, sys.stdout) if a.json else print(out)
        if a.json:
            print()
        return
    if a.dropin:
        out = run_dropin(a.dataset, fanouts, a.batch_size, a.batches, a.seed, a.rounds, a.epoch_batches, workers=a.workers,
                         x_in_memory=not a.x_mapped, pace=_pace if a.paced else None)
        json.dump(out, sys.stdout) if a.json else print(out)
        if a.json:
            print()
        return
    out = run_client(a.addr, fanouts, a.batch_size, a.batches, a.features, a.dataset, a.seed, a.credits)
    if a.pyg:
        out["pyg"] = run_pyg(a.dataset, fanouts, a.batch_size, a.batches, a.seed) if a.dataset else {"skipped": "no --dataset"}
    if a.json:
        json.dump(out, sys.stdout)
        print()
    else:
        for k, v in out.items():
            print(f"{k:28s} {v:.3f}" if isinstance(v, float) else f"{k:28s} {v}")


if __name__ == "__main__":
    main()

"""Where graphmill.NeighborLoader spends a batch, for several worker counts:
the service's rate alone (sampling, no conversion), the loader's rate and
the time in each batch's conversion, and a PyG GraphSAGE step fed by it
(with the time the step waited for its batch). One JSON line per setting.

    python3 python/scripts/neighbor_profile.py DATASET_DIR [--device cuda]

The figures in docs/benchmarks.md ("On a GPU") came from this script on a
1M-node generated graph (graphmill data generate --nodes 1M --edges 20M
--feature-dim 100 --seed 1). Needs torch_geometric (for the model)."""
import argparse
import json
import threading
import time

import torch

import graphmill
import graphmill.bench as gb


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("dataset")
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--settings", default="2:2,4:4,4:8,8:8,8:16,8:8:30%",
                   help="service workers:gather workers[:cache budget], comma-separated")
    p.add_argument("--batches", type=int, default=100)
    a = p.parse_args()
    ds, data, seeds = gb._pyg_data(a.dataset)
    data.x = data.x.clone()
    dev = torch.device(a.device)
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    for setting in a.settings.split(","):
        nw, gw, *cache = setting.split(":")
        ld = graphmill.NeighborLoader(data, [25, 10], batch_size=1024, input_nodes=seeds, shuffle=True, seed=1,
                                      num_workers=int(nw), gather_workers=int(gw), device=dev,
                                      feature_cache=cache[0] if cache else None)
        conv = [0.0, 0]
        lock = threading.Lock()
        orig = ld._convert

        def timed(mb, orig=orig):
            t0 = time.perf_counter()
            r = orig(mb)
            with lock:
                conv[0] += time.perf_counter() - t0
                conv[1] += 1
            return r

        ld._convert = timed
        n, t0 = 0, None
        while n < a.batches + 10:  # the service alone, over epochs
            for _ in ld.loader._decoded():
                n += 1
                if n == 10:
                    t0 = time.perf_counter()
                if n == a.batches + 10:
                    break
        service = a.batches / (time.perf_counter() - t0)

        def batches():
            while True:
                yield from ld

        it = batches()
        for _ in range(10):
            next(it)
        conv[:] = [0.0, 0]
        sync()
        t0 = time.perf_counter()
        for _ in range(a.batches):
            next(it)
            sync()
        rate = a.batches / (time.perf_counter() - t0)
        convert_ms = 1000 * conv[0] / max(conv[1], 1)
        m, opt = gb._sage_trainer(ds, 256, 1, dev)
        steps, wait = a.batches // 2, 0.0
        for i in range(steps + 10):
            if i == 10:
                sync()
                t0, wait = time.perf_counter(), 0.0
            tw = time.perf_counter()
            b = next(it)
            wait += time.perf_counter() - tw
            gb._sage_step(m, opt, b)
        sync()
        step = (time.perf_counter() - t0) / steps
        print(json.dumps(dict(device=str(dev), service_workers=int(nw), gather_workers=int(gw),
                              cache=cache[0] if cache else None, service_batches_per_s=service,
                              loader_batches_per_s=rate, convert_ms=convert_ms, step_ms=1000 * step,
                              wait_ms=1000 * wait / steps)), flush=True)
        ld.close()


if __name__ == "__main__":
    main()

"""A sampler service written in Python for the client's protocol tests: it
serves the graphmill.v1.Sampler API over a native dataset with a simple
numpy neighbour sampler, and can misbehave on request (drop a frame, stall,
fail) to exercise the client's checks. The real service is 'graphmill
serve sampler'; the end-to-end tests use that."""

import threading
import time
from concurrent import futures

import grpc
import numpy as np

from graphmill import wire
from graphmill.v1 import sampler_pb2 as pb
from graphmill.v1 import sampler_pb2_grpc as pbg


def sample(ds, seeds, fanouts, rng):
    """Blocks (input layer first) and n_id for seeds, DGL/PyG style."""
    nodes = np.asarray(seeds, np.int64)
    blocks = []
    for fo in fanouts:
        pos = {int(v): i for i, v in enumerate(nodes)}
        src = list(nodes)
        indptr = [0]
        indices = []
        for v in nodes:
            nb = ds.indices[ds.indptr[v]:ds.indptr[v + 1]]
            if fo >= 0 and len(nb) > fo:
                nb = rng.choice(nb, fo, replace=False)
            for u in nb:
                u = int(u)
                if u not in pos:
                    pos[u] = len(src)
                    src.append(u)
                indices.append(pos[u])
            indptr.append(len(indices))
        blocks.append(wire.Block(len(src), len(nodes), np.array(indptr, np.int64), np.array(indices, np.int32)))
        nodes = np.array(src, np.int64)
    return nodes, blocks[::-1]


def align_payload(f):
    """Sets f.pad as the Go server does, so the minibatch starts at a
    multiple of 16 in the serialized frame."""
    mb = f.minibatch
    f.minibatch = b""
    head = f.ByteSize()
    f.minibatch = mb
    n = len(mb)
    vlen = 1
    while n >= 0x80:
        n >>= 7
        vlen += 1
    base = head + 1 + vlen
    if base % 16:
        p = (16 - (base + 2) % 16) % 16 or 16
        f.pad = b"\0" * p
        return base + 2 + p
    return base


class FakeSampler(pbg.SamplerServicer):
    def __init__(self, ds, drop=None, stall=None, fail=None, heartbeat=None):
        self.ds = ds
        self.drop = drop  # batch index whose frame is skipped
        self.stall = stall  # batch index before which the server goes silent
        self.fail = fail  # batch index at which the stream fails
        self.heartbeat = heartbeat
        self.max_outstanding = 0
        self.streams = 0

    def Info(self, request, context):
        ds = self.ds
        return pb.InfoReply(name=ds.name, num_nodes=ds.num_nodes, num_edges=ds.num_edges,
                            feature_dim=ds.feature_dim, num_classes=ds.num_classes,
                            split_sizes={k: len(v) for k, v in ds.splits.items()}, version="fake")

    def Stream(self, request_iterator, context):
        self.streams += 1
        first = next(request_iterator)
        req = first.start
        ds = self.ds
        if req.split not in ds.splits:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"sampler: no split {req.split!r}")
        if req.batch_size == 0:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "sampler: batch size 0; must be positive")
        credits = [req.initial_credits]
        cv = threading.Condition()

        def pump():
            try:
                for m in request_iterator:
                    if m.HasField("credit"):
                        with cv:
                            credits[0] += m.credit.frames
                            cv.notify()
            except grpc.RpcError:
                pass  # the client went away
            with cv:
                credits[0] = -(1 << 30)  # client closed
                cv.notify()

        threading.Thread(target=pump, daemon=True).start()
        seeds = np.asarray(ds.splits[req.split], np.int64)
        if req.shuffle:
            seeds = np.random.default_rng([req.seed, req.epoch]).permutation(seeds)
        rng = np.random.default_rng([req.seed, req.epoch, 1])
        seq = 0
        sent = 0
        bs = req.batch_size
        for b in req.batches:
            if self.fail is not None and b == self.fail:
                context.abort(grpc.StatusCode.INTERNAL, f"sampler: reading features of batch {b}: disk on fire")
            if self.stall is not None and b == self.stall:
                time.sleep(30)
            with cv:
                while credits[0] == 0:
                    cv.wait()
                if credits[0] < 0:
                    return
                credits[0] -= 1
                self.max_outstanding = max(self.max_outstanding, req.initial_credits - credits[0])
            s = seeds[b * bs:(b + 1) * bs]
            n_id, blocks = sample(ds, s, req.fanouts, rng)
            x = np.asarray(ds.features[n_id]) if req.with_features else None
            y = np.asarray(ds.labels[s]) if req.with_labels else None
            frame = wire.encode_batch(n_id, blocks, len(s), x=x, y=y, sender=req.sender, epoch=req.epoch, sequence=b)
            f = pb.Frame(sender=req.sender, epoch=req.epoch, sequence=seq, kind=pb.Frame.KIND_BATCH, batch=b,
                         minibatch=frame)
            align_payload(f)
            seq += 1
            if self.drop is not None and b == self.drop:
                continue
            sent += 1
            yield f
        yield pb.Frame(sender=req.sender, epoch=req.epoch, sequence=seq, kind=pb.Frame.KIND_END, batch_count=sent)
        with cv:
            while credits[0] >= 0:
                if not cv.wait(10):
                    return


def serve(ds, **kw):
    """Starts a FakeSampler on a free loopback port; returns (server, addr, servicer)."""
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    svc = FakeSampler(ds, **kw)
    pbg.add_SamplerServicer_to_server(svc, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    return server, f"127.0.0.1:{port}", svc

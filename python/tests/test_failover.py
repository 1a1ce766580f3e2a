"""Several sampler services behind one Loader: the receiver's state machine
(graphmill._stream) and a sampler killed mid-epoch, reported and recovered."""

import logging
import signal

import numpy as np
import pytest

import graphmill
from graphmill._stream import KIND_BATCH, KIND_END, KIND_HEARTBEAT, AllLost, ProtocolError, Receiver
from graphmill.loader import SamplerServer


def fr(sender, seq, kind, batch=0, count=0, epoch=0):
    return {"sender": sender, "epoch": epoch, "sequence": seq, "kind": kind, "batch": batch, "batch_count": count}


def test_receiver_deals_orders_and_reassigns():
    r = Receiver(0, 5, 2, credits=2, deadline=10, now=0)
    assert r.starts() == [[0, 2, 4], [1, 3]]
    r.frame(1, fr(1, 0, KIND_BATCH, 1), "b1", 1)
    assert r.take() is None and r.waiting() == 0  # batch 0 first
    r.frame(0, fr(0, 0, KIND_BATCH, 0), "b0", 1)
    assert r.take() == (0, "b0") and r.take() == (1, "b1")
    # sampler 1 dies owing batch 3: it goes to sampler 0, with a message
    moved = r.lost(1, "killed")
    assert moved == {0: [3]}
    assert (0, "assign", [3]) in r.outbox()
    r.frame(0, fr(0, 1, KIND_BATCH, 2), "b2", 2)
    r.frame(0, fr(0, 2, KIND_HEARTBEAT), None, 2)
    r.frame(0, fr(0, 3, KIND_BATCH, 3), "b3", 3)
    assert r.take() == (2, "b2")  # its credit back: sampler 0 may send one more
    r.frame(0, fr(0, 4, KIND_BATCH, 4), "b4", 3)
    r.frame(0, fr(0, 5, KIND_END, count=4), None, 3)
    assert [r.take() for _ in range(2)] == [(3, "b3"), (4, "b4")] and r.done()


@pytest.mark.parametrize("frame,msg", [
    (fr(0, 1, KIND_BATCH, 0), "sequence 1 where 0"),
    (fr(1, 0, KIND_BATCH, 0), "signed as sender 1"),
    (fr(0, 0, KIND_BATCH, 0, epoch=3), "epoch 3"),
    (fr(0, 0, KIND_BATCH, 1), "assigned to sampler 1"),
    (fr(0, 0, KIND_BATCH, 9), "of an epoch of 4"),
    (fr(0, 0, KIND_END, count=1), "ended with 1"),
    (fr(0, 0, KIND_END, count=0), "without sending batch 0"),
    (fr(0, 0, 7), "unknown kind"),
])
def test_receiver_refuses(frame, msg):
    r = Receiver(0, 4, 2, credits=1, deadline=0, now=0)
    with pytest.raises(ProtocolError, match=msg):
        r.frame(0, frame, "p", 0)


def test_receiver_credit_and_deadline():
    r = Receiver(0, 4, 2, credits=1, deadline=5, now=0)
    r.frame(0, fr(0, 0, KIND_BATCH, 0), "b0", 0)
    with pytest.raises(ProtocolError, match="without a credit"):
        r.frame(0, fr(0, 1, KIND_BATCH, 2), "b2", 0)
    assert r.silent(4) == [] and r.silent(6) == [0, 1]
    r.lost(0, "a")
    with pytest.raises(AllLost, match="sampler 0: a; sampler 1: b"):
        r.lost(1, "b")


def test_sampler_killed_among_three(gm, cora_dir, caplog):
    """Three services; one killed mid-epoch: every batch arrives once, in
    order, as one service alone would send it; the loss is logged with where
    its batches went and counted; the next epoch runs on the two left."""
    kw = dict(split="train", fanouts=[5, 5], batch_size=8, seed=4, features=False, credits=1)
    with graphmill.Loader(dataset=cora_dir, **kw) as one:
        want = [[b.n_id.tolist() for b in one] for _ in range(2)]
    servers = [SamplerServer(cora_dir, binary=gm) for _ in range(3)]
    try:
        with graphmill.Loader(",".join(s.addr for s in servers), **kw) as ld, caplog.at_level(logging.WARNING, "graphmill"):
            got = []
            for i, b in enumerate(ld):
                got.append(b.n_id.tolist())
                if i == 4:
                    servers[1].proc.send_signal(signal.SIGKILL)
            assert got == want[0]
            assert [b.n_id.tolist() for b in ld] == want[1]
            st = ld.stats()
            assert st["failovers"] == 1 and st["lost"] == [servers[1].addr]
        lines = [r.getMessage() for r in caplog.records]
        assert any(f"({servers[1].addr}) lost" in l for l in lines), lines
        assert any("reassigned to sampler" in l and servers[1].addr not in l for l in lines), lines
    finally:
        for s in servers:
            s.close()

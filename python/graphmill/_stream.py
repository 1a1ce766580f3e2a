"""The trainer's side of the sampler stream protocol (docs/wire.md, "The
sampler service stream"), as a state machine with no sockets, threads or
clocks inside: the Python twin of Go's ``dist/stream.Receiver``.

An epoch's batches are dealt to the senders (batch i to sender i mod n);
frames are checked (sender, epoch, sequence, owner, credit, END counts);
batches are handed out in index order; credits keep at most ``credits``
frames per sender waiting; a lost sender's unsent batches are reassigned
to the survivors (round robin), so every batch arrives exactly once.
"""

KIND_BATCH, KIND_END, KIND_HEARTBEAT = 1, 2, 3


class AllLost(Exception):
    """Every sender of the epoch was lost."""


class ProtocolError(Exception):
    """A sender broke the protocol: give it up (``Receiver.lost``)."""


class _Sender:
    __slots__ = ("alive", "cause", "seq", "batches", "credit", "assigned", "known", "heard", "ended")

    def __init__(self, share, credits, now):
        self.alive, self.cause = True, None
        self.seq = self.batches = 0
        self.credit = credits
        self.assigned = list(share)
        self.known = [len(share)]  # batches known after its Start and each Assign
        self.heard = now
        self.ended = False


class Receiver:
    """One epoch of ``num_batches`` over ``senders`` streams.

    ``starts()`` gives each sender's share for its EpochRequest; feed every
    frame to ``frame(s, fields, payload, now)``; ``lost(s, cause)`` when a
    stream fails; ``take()`` returns the next batch in order (or None);
    ``outbox()`` the (sender, "credit", n) and (sender, "assign", batches)
    messages to send; ``silent(now)`` the senders past the deadline that
    still owe batches."""

    def __init__(self, epoch, num_batches, senders, credits, deadline, now):
        if senders < 1:
            raise ValueError("no senders")
        if num_batches < 0 or credits < 1:
            raise ValueError(f"{num_batches} batches, {credits} credits")
        self.epoch, self.n, self.credits, self.deadline = epoch, num_batches, credits, deadline
        self.owner = [i % senders for i in range(num_batches)]
        self.got = [False] * num_batches
        self.buf = {}
        self.next = 0
        self.out = []
        self.senders = [_Sender(range(s, num_batches, senders), credits, now) for s in range(senders)]

    def starts(self):
        return [list(st.assigned) for st in self.senders]

    def alive(self, s):
        return self.senders[s].alive

    def done(self):
        return self.next == self.n

    def frame(self, s, f, payload, now):
        """Takes a frame (parse_frame's dict) from sender s; raises
        ProtocolError naming what is wrong."""
        st = self.senders[s]
        if not st.alive:
            return  # a late frame of a sender given up
        st.heard = now
        if f["sender"] != s:
            raise ProtocolError(f"sent a frame signed as sender {f['sender']}")
        if f["epoch"] != self.epoch:
            raise ProtocolError(f"sent a frame of epoch {f['epoch']} during epoch {self.epoch}")
        if f["sequence"] != st.seq:
            raise ProtocolError(f"sent frame sequence {f['sequence']} where {st.seq} was due (a frame was lost or repeated)")
        st.seq += 1
        kind = f["kind"]
        if kind == KIND_HEARTBEAT:
            return
        if kind == KIND_BATCH:
            b = f["batch"]
            if b >= self.n:
                raise ProtocolError(f"sent batch {b} of an epoch of {self.n}")
            if self.owner[b] != s:
                raise ProtocolError(f"sent batch {b}, assigned to sampler {self.owner[b]}")
            if self.got[b]:
                raise ProtocolError(f"sent batch {b} twice")
            if st.credit <= 0:
                raise ProtocolError(f"sent batch {b} without a credit")
            self.got[b] = True
            self.buf[b] = payload
            st.batches += 1
            st.credit -= 1
            st.ended = False
            return
        if kind == KIND_END:
            count = f["batch_count"]
            if count != st.batches:
                raise ProtocolError(f"ended with {count} batches sent, but {st.batches} arrived")
            # It knew at least the smallest share holding `count` batches; an
            # Assign still on its way follows in a later END.
            j = 0
            while j + 1 < len(st.known) and st.known[j] < count:
                j += 1
            for b in st.assigned[:st.known[j]]:
                if not self.got[b]:
                    raise ProtocolError(f"ended without sending batch {b}")
            st.ended = j == len(st.known) - 1
            return
        raise ProtocolError(f"sent a frame of unknown kind {kind}")

    def lost(self, s, cause):
        """Gives up sender s. Returns {survivor: reassigned batches}; raises
        AllLost when batches are left and no sender survives."""
        st = self.senders[s]
        if not st.alive:
            return {}
        st.alive, st.cause = False, cause
        unsent = [b for b in st.assigned if not self.got[b]]
        alive = [q for q, x in enumerate(self.senders) if x.alive]
        if not unsent:
            return {}
        if not alive:
            causes = "; ".join(f"sampler {q}: {x.cause}" for q, x in enumerate(self.senders))
            raise AllLost(f"every sampler was lost with {len(unsent)} batches of epoch {self.epoch} undelivered ({causes})")
        shares = {}
        for i, b in enumerate(unsent):
            q = alive[i % len(alive)]
            shares.setdefault(q, []).append(b)
            self.owner[b] = q
        for q, share in shares.items():
            x = self.senders[q]
            x.assigned.extend(share)
            x.known.append(len(x.assigned))
            x.ended = False
            self.out.append((q, "assign", share))
        return shares

    def take(self):
        """The next batch (index, payload) in order, or None while it has
        not arrived (its sender then gets a credit if it has none)."""
        if self.next >= self.n:
            return None
        if self.next not in self.buf:
            st = self.senders[self.owner[self.next]]
            if st.alive and st.credit <= 0:
                st.credit += 1
                self.out.append((self.owner[self.next], "credit", 1))
            return None
        i = self.next
        p = self.buf.pop(i)
        self.next += 1
        st = self.senders[self.owner[i]]
        if st.alive:
            st.credit += 1
            self.out.append((self.owner[i], "credit", 1))
        return i, p

    def waiting(self):
        """The sender of the batch awaited next (-1 when done)."""
        return -1 if self.next >= self.n else self.owner[self.next]

    def owes(self, s):
        """Whether sender s has assigned batches not yet received."""
        return any(not self.got[b] for b in self.senders[s].assigned)

    def silent(self, now):
        """Live senders silent past the deadline that still owe batches."""
        if not self.deadline:
            return []
        return [s for s, st in enumerate(self.senders) if st.alive and now - st.heard > self.deadline and self.owes(s)]

    def outbox(self):
        out, self.out = self.out, []
        return out

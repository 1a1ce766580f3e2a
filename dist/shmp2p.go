package dist

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"
)

// Messages through shared memory: every ordered pair of ranks on one
// host (i→j) has a single-producer single-consumer byte ring in the
// host's segment. A message is the same frame TCP carries (the 32-byte
// header, then the payload), streamed through the ring when larger; on
// the receiving rank a drain goroutine copies every ring's bytes out into
// the same queues the TCP reader fills (per-tag mailboxes for Send, the
// collective queue for collectives run over the mesh when ranks span
// hosts), so a sender never waits on the receiver calling Recv. Each rank has two futex bells with
// sleeper counts: its inbox (rung by senders when its drainer sleeps) and
// its space bell (rung by receivers when it waits for room in a ring).

const (
	shmP2PCtlLen   = 128
	shmInboxBell   = 0 // + 4: its sleepers
	shmSpaceBell   = 64
	shmRingHdr     = 128 // tail (the producer's line), head at +64
	shmMsgHdr      = headerLen
	shmMaxP2PBytes = 1 << 40
)

func (s *shmSeg) u32(off int) *atomic.Uint32 {
	return (*atomic.Uint32)(unsafe.Pointer(&s.mem[off]))
}

// ringOf returns the ring from rank from to rank to.
func (s *shmSeg) ringOf(from, to int) (tail, head *atomic.Uint64, buf []byte) {
	off := s.rings + (from*s.n+to)*(shmRingHdr+s.ringLen)
	return s.u64(off), s.u64(off + 64), s.mem[off+shmRingHdr : off+shmRingHdr+s.ringLen]
}

// bellOf returns the offset of rank r's bell which (inbox or space).
func (s *shmSeg) bellOf(r, which int) int { return s.p2pCtl + r*shmP2PCtlLen + which }

// wakeIf rings the bell at off when someone sleeps on it.
func (s *shmSeg) wakeIf(off int) {
	if s.u32(off+4).Load() > 0 {
		s.u32(off).Add(1)
		futexWake(&s.mem[off])
	}
}

// sleepOn sleeps on the bell at off for at most d unless ready holds.
func (s *shmSeg) sleepOn(off int, ready func() bool, d time.Duration) {
	s.u32(off + 4).Add(1)
	b := s.u32(off).Load()
	if !ready() {
		futexWait(&s.mem[off], b, d)
	}
	s.u32(off + 4).Add(^uint32(0))
}

// ringWrite writes one frame into the ring to rank to (a rank on this
// host). Its callers send to one rank one at a time (the single
// producer).
// ringLink is the shared-memory ring to a rank on this host.
type ringLink struct {
	g  *TCP
	to int
}

func (l ringLink) direct() bool { return true }

func (l ringLink) write(ctx context.Context, h header, data []byte) error {
	return l.g.ringWrite(ctx, l.to, h, data)
}

func (g *TCP) ringWrite(ctx context.Context, to int, h header, data []byte) error {
	p := g.peers[to]
	p.rmu.Lock()
	defer p.rmu.Unlock()
	s := g.seg
	lt := s.local[to]
	tail, head, buf := s.ringOf(s.rank, lt)
	var hdr [shmMsgHdr]byte
	h.n = uint64(len(data))
	h.put(hdr[:])
	inbox, space := s.bellOf(lt, shmInboxBell), s.bellOf(s.rank, shmSpaceBell)
	R := uint64(len(buf))
	t := tail.Load() // only this rank moves it
	hasRoom := func() bool { return t-head.Load() < R }
	var start time.Time
	for _, part := range [][]byte{hdr[:], data} {
		for len(part) > 0 {
			free := int(R - (t - head.Load()))
			if free == 0 {
				if start.IsZero() {
					start = time.Now()
				}
				select {
				case <-g.failed:
					return g.failErr
				case <-ctx.Done():
					return ctx.Err()
				default:
				}
				if g.closing.Load() {
					return fmt.Errorf("the group is closed")
				}
				if w := time.Since(start); w > g.opts.OpTimeout {
					err := fmt.Errorf("rank %d took nothing from its ring within %v", to, g.opts.OpTimeout)
					g.fail(err)
					return err
				} else if w < 200*time.Microsecond {
					runtime.Gosched()
					osYield()
				} else {
					s.sleepOn(space, hasRoom, 5*time.Millisecond)
				}
				continue
			}
			k := min(free, len(part))
			pos := int(t % R)
			n1 := copy(buf[pos:], part[:k])
			copy(buf, part[n1:k])
			t += uint64(k)
			tail.Store(t)
			s.wakeIf(inbox)
			part = part[k:]
		}
	}
	return nil
}

// inflight is a message being copied out of a ring.
type inflight struct {
	h    header
	hdr  [shmMsgHdr]byte
	got  int // header bytes read
	msg  []byte
	fill int
}

// shmDrain copies incoming messages into the mailboxes until the group
// closes or fails.
func (g *TCP) shmDrain() {
	defer g.wg.Done()
	s := g.seg
	st := make([]inflight, s.n)
	inbox := s.bellOf(s.rank, shmInboxBell)
	pending := func() bool {
		for j := range s.n {
			if j != s.rank {
				if tail, head, _ := s.ringOf(j, s.rank); tail.Load() != head.Load() {
					return true
				}
			}
		}
		return false
	}
	idle := 0
	for {
		select {
		case <-g.closeCh:
			return
		case <-g.failed:
			return
		default:
		}
		moved := false
		for j := range s.n {
			if j != s.rank && g.drainRing(j, &st[j]) {
				moved = true
			}
		}
		switch {
		case moved:
			idle = 0
		case idle < 64:
			idle++
			spinPause()
		case idle < 96:
			idle++
			runtime.Gosched()
		default:
			s.sleepOn(inbox, pending, 20*time.Millisecond)
		}
	}
}

// drainRing copies what local rank j has written so far; it reports
// whether there was anything.
func (g *TCP) drainRing(j int, f *inflight) bool {
	s := g.seg
	p := g.peers[s.global[j]]
	tail, head, buf := s.ringOf(j, s.rank)
	h, t := head.Load(), tail.Load()
	if h == t {
		return false
	}
	R := uint64(len(buf))
	take := func(dst []byte) int {
		k := int(min(uint64(len(dst)), t-h))
		pos := int(h % R)
		n1 := copy(dst[:k], buf[pos:])
		copy(dst[n1:k], buf)
		h += uint64(k)
		return k
	}
	for h < t {
		if f.got < shmMsgHdr {
			f.got += take(f.hdr[f.got:])
			if f.got < shmMsgHdr {
				break
			}
			f.h.get(f.hdr[:])
			if (f.h.kind != fData && f.h.kind != fP2P) || f.h.n > shmMaxP2PBytes {
				g.fail(fmt.Errorf("rank %d sent a corrupt message (kind %d, %d bytes)", p.rank, f.h.kind, f.h.n))
				return true
			}
			f.msg, f.fill = make([]byte, f.h.n), 0
		}
		f.fill += take(f.msg[f.fill:])
		if f.fill == len(f.msg) {
			fr := &frame{h: f.h, data: f.msg}
			if f.h.kind == fData {
				p.coll.push(fr)
			} else {
				p.mailbox(f.h.tag).push(fr)
			}
			*f = inflight{}
		}
	}
	head.Store(h)
	s.wakeIf(s.bellOf(j, shmSpaceBell))
	return true
}

package dist

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/graphmill/graphmill/tensor"
)

// The shared-memory transport. When every rank of a group runs on one
// host (same boot, host name, user and namespaces), the ranks map one
// segment of /dev/shm and run their collectives through it instead of
// loopback TCP; the TCP mesh stays up beside it for point-to-point
// messages, heartbeats and failure reports, so a rank that dies or
// breaks still fails every other rank within seconds.
//
// The segment holds, per rank, a control line (three step counters and
// the descriptor of the collective the rank is in) and two data slots
// (double buffering). Every collective is a sequence of steps that all
// ranks take in lockstep; step t uses slot parity t%2:
//
//  1. a rank writes its slot for step t once every rank has left step
//     t-2 (depart >= t-1), then raises its arrive counter to t+1;
//  2. once every rank has arrived, each reads what it needs (checking
//     first that the others run the same collective), and for large
//     reductions writes the reduced slice it owns back into its own slot
//     and raises reduced;
//  3. once every rank has reduced, each copies the others' slices out
//     and raises depart.
//
// Waiting spins briefly, then yields, then sleeps on a futex word (the
// bell) that every counter update rings when someone sleeps; every wait
// also watches the group's failure, the caller's context and the
// operation deadline.

// How many short busy waits (tens of nanoseconds each) precede yielding
// adapts, as adaptive mutexes do: a wait that ends while spinning allows
// twice its spins next time, a wait that has to yield halves the budget
// (a peer that is not running, e.g. on the same processor, is not helped
// by spinning). The budget stays within [shmSpinsMin, shmSpinsMax], or
// at most shmSpinsBusy when there are more local ranks than processors
// (Open MPI, likewise, polls only when not oversubscribed). A rank sleeps
// on the futex after 300 µs of yielding.
const shmSpinsMin, shmSpinsBusy, shmSpinsMax = 16, 64, 2048

const (
	shmMagic    = 0x316d6873_6c6d7267 // "grmlshm1"
	shmBellOff  = 64
	shmSleepOff = 128
	shmCtrlOff  = 256
	shmCtrlLen  = 256
	// counters in a rank's control block (one cache line each; the
	// descriptors share arrive's line, as readers need both)
	shmArrive  = 0
	shmDesc    = 8 // two descriptors (parity) of three words
	shmReduced = 64
	shmDepart  = 128
)

// shmSeg is one rank's view of the group's segment.
type shmSeg struct {
	mem  []byte
	n    int
	rank int
	slot int
	data int
	step uint64
	// seenAll is one more than the last step at which this rank saw
	// every rank arrive: every rank had then left the step before.
	seenAll  uint64
	spins    int // short busy waits before yielding (adapts)
	maxSpins int
	close    func() error

	// point-to-point rings (see shmp2p.go)
	p2pCtl, rings, ringLen int
	// global[i] is the rank of local index i; local[rank] its index
	// (-1: on another host)
	global, local []int
}

// shmLayout returns the offsets and total size of a segment for n ranks
// with slots of slot bytes and point-to-point rings of ring bytes.
func shmLayout(n, slot, ring int) (data, p2pCtl, rings, total int) {
	data = (shmCtrlOff + n*shmCtrlLen + 4095) &^ 4095
	p2pCtl = data + 2*n*slot
	rings = p2pCtl + (n*shmP2PCtlLen+4095)&^4095
	return data, p2pCtl, rings, rings + n*n*(shmRingHdr+ring)
}

// shmRingBytes chooses the ring size: the wanted size, at most 12 MiB of
// rings in all (with the slots' 48 MiB, under the 64 MiB /dev/shm a
// Docker container gets by default), whole pages.
func shmRingBytes(n, want int) int {
	s := max(min(want, (12<<20)/(n*n)), 4096)
	return (s + 4095) &^ 4095
}

// shmSlotBytes chooses the slot size: the wanted size, at most 48 MiB of
// slots in all, whole 4 KiB pages, and room for an N×N size table.
func shmSlotBytes(n, want int) int {
	s := min(want, (48<<20)/(2*n))
	s = max(s, 64*n, 4096)
	return (s + 4095) &^ 4095
}

func (s *shmSeg) u64(off int) *atomic.Uint64 {
	return (*atomic.Uint64)(unsafe.Pointer(&s.mem[off]))
}

func (s *shmSeg) ctr(r, which int) *atomic.Uint64 {
	return s.u64(shmCtrlOff + r*shmCtrlLen + which)
}

func (s *shmSeg) bell() *atomic.Uint32 {
	return (*atomic.Uint32)(unsafe.Pointer(&s.mem[shmBellOff]))
}

func (s *shmSeg) sleepers() *atomic.Uint32 {
	return (*atomic.Uint32)(unsafe.Pointer(&s.mem[shmSleepOff]))
}

// slotOf returns rank r's slot for step t.
func (s *shmSeg) slotOf(t uint64, r int) []byte {
	off := s.data + (int(t%2)*s.n+r)*s.slot
	return s.mem[off : off+s.slot : off+s.slot]
}

// ring wakes the sleepers after a counter update. Waiters count
// themselves in sleepers before they read the bell and recheck their
// condition, so a waiter either sees the update or is woken (the bell
// changes, so its futex wait returns at once if it has not begun).
func (s *shmSeg) ring() {
	if s.sleepers().Load() > 0 {
		s.bell().Add(1)
		futexWake(&s.mem[shmBellOff])
	}
}

// post raises this rank's counter to v.
func (s *shmSeg) post(which int, v uint64) {
	s.ctr(s.rank, which).Store(v)
	s.ring()
}

// arrive publishes the call's descriptor for step t and raises arrive.
func (s *shmSeg) arrive(c *call, t uint64) {
	d := c.words()
	base := shmCtrlOff + s.rank*shmCtrlLen + shmDesc + int(t%2)*24
	// plain stores, published by arrive's atomic store after them (one
	// transfer of the line to a polling reader, not four)
	for i, w := range d {
		*(*uint64)(unsafe.Pointer(&s.mem[base+8*i])) = w
	}
	s.post(shmArrive, t+1)
}

// checkDesc compares rank j's descriptor for step t with the call.
func (g *TCP) checkDesc(c *call, j int, t uint64) error {
	s := g.shm
	base := shmCtrlOff + j*shmCtrlLen + shmDesc + int(t%2)*24
	w := func(i int) uint64 { return *(*uint64)(unsafe.Pointer(&s.mem[base+8*i])) }
	d := [3]uint64{w(0), w(1), w(2)} // after the acquiring load of arrive
	if d == c.words() {
		return nil
	}
	err := c.mismatch(g.rank, j, descFromWords(d))
	if err == nil { // all-to-all-v: counts differ by rank
		return nil
	}
	g.fail(err)
	return err
}

// await waits until counter which of every rank (only, when >= 0) is at
// least v, checking the descriptors when which is arrive.
func (g *TCP) await(c *call, which int, v uint64, only int) error {
	s := g.shm
	lo, hi := 0, s.n
	if only >= 0 {
		lo, hi = only, only+1
	}
	next := lo // first rank not yet seen
	ready := func() bool {
		for ; next < hi; next++ {
			if next == s.rank {
				continue
			}
			if s.ctr(next, which).Load() < v {
				return false
			}
			if which == shmArrive {
				if err := g.checkDesc(c, next, v-1); err != nil {
					c.shmErr = err
					return true
				}
			}
		}
		return true
	}
	if which == shmArrive && only < 0 {
		defer func() { s.seenAll = max(s.seenAll, v) }()
	}
	if ready() {
		return c.takeShmErr()
	}
	var t0 time.Time
	for i := 1; ; i++ {
		if i <= s.spins {
			spinPause()
		} else {
			if t0.IsZero() {
				t0 = time.Now()
				// the peer was not there in time: spin less next time
				s.spins = max(shmSpinsMin, s.spins/2)
			}
			if err := g.shmCheck(c, next); err != nil {
				return err
			}
			if waited := time.Since(t0); waited < 300*time.Microsecond {
				runtime.Gosched()
				osYield()
			} else {
				s.sleepers().Add(1)
				b := s.bell().Load()
				if !ready() {
					futexWait(&s.mem[shmBellOff], b, 5*time.Millisecond)
				}
				s.sleepers().Add(^uint32(0))
			}
		}
		if ready() {
			if i <= s.spins {
				// caught while spinning: allow twice that next time
				s.spins = min(s.maxSpins, max(s.spins, 2*i))
			}
			return c.takeShmErr()
		}
	}
}

func (c *call) takeShmErr() error {
	err := c.shmErr
	c.shmErr = nil
	return err
}

// shmCheck reports a broken group, a cancelled context or the deadline.
func (g *TCP) shmCheck(c *call, waitingFor int) error {
	select {
	case <-g.failed:
		return fmt.Errorf("%v: %w", c, g.failErr)
	case <-c.ctx.Done():
		err := fmt.Errorf("%v: %w", c, c.ctx.Err())
		g.fail(err)
		return err
	default:
	}
	if time.Since(c.start) > g.opts.OpTimeout {
		err := fmt.Errorf("%v: nothing from rank %d within %v (does it run the same collectives?)", c, waitingFor, g.opts.OpTimeout)
		g.fail(err)
		return err
	}
	if g.closing.Load() {
		return fmt.Errorf("%v: the group is closed", c)
	}
	return nil
}

// stepBegin starts a step: it waits until this rank may write its slot.
func (g *TCP) stepBegin(c *call) (uint64, error) {
	s := g.shm
	t := s.step
	s.step++
	if t >= 2 && s.seenAll < t { // else every rank arrived at t-1, so left t-2
		if err := g.await(c, shmDepart, t-1, -1); err != nil {
			return t, err
		}
	}
	return t, nil
}

// shmReduce sets dst to the reduction of the slots' ranges [lo, hi) in
// rank order (the same bits on every rank whichever rank computes them).
func (g *TCP) shmReduce(c *call, t uint64, dst []byte, lo, hi int) {
	s := g.shm
	copy(dst, s.slotOf(t, 0)[lo:hi])
	for j := 1; j < s.n; j++ {
		reduceInto(dst, s.slotOf(t, j)[lo:hi], c.dtype, c.op)
	}
}

// shmAllReduce: up to SmallBytes every rank reduces the whole buffer
// from every slot (one synchronisation); above, every rank reduces its
// 1/N slice of each slot-sized chunk in place and copies the others'
// slices out (reduce-scatter + all-gather through the segment).
func (g *TCP) shmAllReduce(c *call, buf []byte) error {
	s := g.shm
	es := c.dtype.Size()
	if len(buf) <= min(g.opts.SmallBytes, s.slot) {
		t, err := g.stepBegin(c)
		if err != nil {
			return err
		}
		copy(s.slotOf(t, s.rank), buf)
		s.arrive(c, t)
		if err := g.await(c, shmArrive, t+1, -1); err != nil {
			return err
		}
		g.shmReduce(c, t, buf, 0, len(buf))
		s.post(shmDepart, t+1)
		return nil
	}
	step := s.slot / es * es
	for off := 0; off < len(buf); off += step {
		chunk := buf[off:min(len(buf), off+step)]
		t, err := g.stepBegin(c)
		if err != nil {
			return err
		}
		mine := s.slotOf(t, s.rank)
		ne := len(chunk) / es
		slice := func(j int) (int, int) { return j * ne / s.n * es, (j + 1) * ne / s.n * es }
		lo, hi := slice(s.rank)
		// the others need every slice of ours but our own
		copy(mine[:lo], chunk[:lo])
		copy(mine[hi:len(chunk)], chunk[hi:])
		s.arrive(c, t)
		if err := g.await(c, shmArrive, t+1, -1); err != nil {
			return err
		}
		// The owner reduces its slice in place in the caller's buffer,
		// starting from its own values and adding the others' in rank
		// order after it: each element is reduced by one rank in one
		// fixed order. Then it publishes the result in its slot.
		for k := 1; k < s.n; k++ {
			reduceInto(chunk[lo:hi], s.slotOf(t, (s.rank+k)%s.n)[lo:hi], c.dtype, c.op)
		}
		copy(mine[lo:hi], chunk[lo:hi])
		s.post(shmReduced, t+1)
		if err := g.await(c, shmReduced, t+1, -1); err != nil {
			return err
		}
		for k := 1; k < s.n; k++ {
			j := (s.rank + k) % s.n
			lo, hi := slice(j)
			copy(chunk[lo:hi], s.slotOf(t, j)[lo:hi])
		}
		s.post(shmDepart, t+1)
	}
	return nil
}

// shmReduceScatter: per step, every rank writes the same element range
// of each of its N blocks and reduces the range of its own block.
func (g *TCP) shmReduceScatter(c *call, sb, rb []byte) error {
	s := g.shm
	es := c.dtype.Size()
	m := len(rb) / es
	per := max(1, s.slot/(s.n*es)) // elements of each block per step
	for o := 0; o < m; o += per {
		e := min(per, m-o)
		t, err := g.stepBegin(c)
		if err != nil {
			return err
		}
		mine := s.slotOf(t, s.rank)
		for j := 0; j < s.n; j++ {
			copy(mine[j*e*es:(j+1)*e*es], sb[(j*m+o)*es:(j*m+o+e)*es])
		}
		s.arrive(c, t)
		if err := g.await(c, shmArrive, t+1, -1); err != nil {
			return err
		}
		lo := s.rank * e * es
		g.shmReduce(c, t, rb[o*es:(o+e)*es], lo, lo+e*es)
		s.post(shmDepart, t+1)
	}
	return nil
}

// shmAllGather: per step every rank writes a chunk of its block and reads
// everyone's.
func (g *TCP) shmAllGather(c *call, sb, rb []byte) error {
	s := g.shm
	es := c.dtype.Size()
	step := s.slot / es * es
	m := len(sb)
	for off := 0; off < m; off += step {
		k := min(step, m-off)
		t, err := g.stepBegin(c)
		if err != nil {
			return err
		}
		copy(s.slotOf(t, s.rank), sb[off:off+k])
		s.arrive(c, t)
		if err := g.await(c, shmArrive, t+1, -1); err != nil {
			return err
		}
		for j := 0; j < s.n; j++ {
			if j != s.rank {
				copy(rb[j*m+off:j*m+off+k], s.slotOf(t, j)[:k])
			}
		}
		s.post(shmDepart, t+1)
	}
	return nil
}

// shmBroadcast: per step the root writes a chunk; the others copy it.
func (g *TCP) shmBroadcast(c *call, buf []byte, root int) error {
	s := g.shm
	step := s.slot / c.dtype.Size() * c.dtype.Size()
	for off := 0; off == 0 || off < len(buf); off += step {
		chunk := buf[off:min(len(buf), off+step)]
		t, err := g.stepBegin(c)
		if err != nil {
			return err
		}
		if s.rank == root {
			copy(s.slotOf(t, s.rank), chunk)
			s.arrive(c, t)
		} else {
			s.arrive(c, t)
			if err := g.await(c, shmArrive, t+1, root); err != nil {
				return err
			}
			copy(chunk, s.slotOf(t, root))
		}
		s.post(shmDepart, t+1)
		if len(buf) == 0 {
			break
		}
	}
	return nil
}

// shmBarrier: one step without data.
func (g *TCP) shmBarrier(c *call) error {
	s := g.shm
	t, err := g.stepBegin(c)
	if err != nil {
		return err
	}
	s.arrive(c, t)
	if err := g.await(c, shmArrive, t+1, -1); err != nil {
		return err
	}
	s.post(shmDepart, t+1)
	return nil
}

// shmAllToAllV: a step exchanges the N×N byte counts, then each step
// moves up to slot/(N-1) bytes of every pair's message through the
// sender's slot (a sub-slot per receiver).
func (g *TCP) shmAllToAllV(c *call, send [][]byte, out [][]byte) error {
	s := g.shm
	n := s.n
	t, err := g.stepBegin(c)
	if err != nil {
		return err
	}
	mine := s.slotOf(t, s.rank)
	for p := range n {
		*(*uint64)(unsafe.Pointer(&mine[8*p])) = uint64(len(send[p]))
	}
	s.arrive(c, t)
	if err := g.await(c, shmArrive, t+1, -1); err != nil {
		return err
	}
	longest := 0
	for j := range n {
		sl := s.slotOf(t, j)
		for p := range n {
			l := int(*(*uint64)(unsafe.Pointer(&sl[8*p])))
			if p != j {
				longest = max(longest, l)
			}
			if p == s.rank && j != s.rank {
				if l > 1<<40 {
					err := fmt.Errorf("%v: rank %d announced %d bytes: corrupt", c, j, l)
					g.fail(err)
					return err
				}
				out[j] = make([]byte, l)
			}
		}
	}
	s.post(shmDepart, t+1)
	// sender r's sub-slot for rank p (no sub-slot for itself)
	q := s.slot / (n - 1) &^ 63
	sub := func(b []byte, r, p int) []byte {
		if p > r {
			p--
		}
		return b[p*q : (p+1)*q]
	}
	for o := 0; o < longest; o += q {
		t, err := g.stepBegin(c)
		if err != nil {
			return err
		}
		mine := s.slotOf(t, s.rank)
		for p := range n {
			if p != s.rank && o < len(send[p]) {
				copy(sub(mine, s.rank, p), send[p][o:])
			}
		}
		s.arrive(c, t)
		if err := g.await(c, shmArrive, t+1, -1); err != nil {
			return err
		}
		for j := range n {
			if j != s.rank && o < len(out[j]) {
				copy(out[j][o:], sub(s.slotOf(t, j), j, s.rank))
			}
		}
		s.post(shmDepart, t+1)
	}
	return nil
}

// reduceF32 adds src to dst with the vector kernel (y += 1·x is exactly
// y + x, fused or not).
func reduceF32(d, s []float32) { tensor.Axpy(1, s, d) }

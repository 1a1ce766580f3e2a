package dist

import (
	"context"
	"fmt"
)

func mod(a, n int) int { return ((a % n) + n) % n }

// algorithms move a collective's data, once TCP's collective methods have
// checked the arguments and numbered the call: over the mesh's links
// (mesh: the schedules of schedule.go, direct exchanges and trees) or
// through the shared-memory segment of ranks on one host (segment, shm.go).
// Every method runs in a group of at least two ranks.
type algorithms interface {
	allReduce(c *call, buf []byte, es, n int) error
	// reduceScatter reduces sb (n elements) into this rank's block rb (m).
	reduceScatter(c *call, sb, rb []byte, es, n, m int) error
	// allGather fills rb (n elements, this rank's block of m already in).
	allGather(c *call, sb, rb []byte, es, n, m int) error
	broadcast(c *call, buf []byte, es, root int) error
	allToAllV(c *call, send, out [][]byte) error
	barrier(c *call) error
}

// algos returns the group's algorithms: through the segment when the ranks
// share one, else over the mesh.
func (g *TCP) algos() algorithms {
	if g.shm != nil {
		return segment{g}
	}
	return mesh{g}
}

// segment runs the collectives through the shared-memory segment.
type segment struct{ g *TCP }

func (a segment) allReduce(c *call, buf []byte, _, _ int) error { return a.g.shmAllReduce(c, buf) }
func (a segment) reduceScatter(c *call, sb, rb []byte, _, _, m int) error {
	if m == 0 {
		return a.g.shmBarrier(c)
	}
	return a.g.shmReduceScatter(c, sb, rb)
}
func (a segment) allGather(c *call, sb, rb []byte, _, _, m int) error {
	if m == 0 {
		return a.g.shmBarrier(c)
	}
	return a.g.shmAllGather(c, sb, rb)
}
func (a segment) broadcast(c *call, buf []byte, _, root int) error {
	return a.g.shmBroadcast(c, buf, root)
}
func (a segment) allToAllV(c *call, send, out [][]byte) error { return a.g.shmAllToAllV(c, send, out) }
func (a segment) barrier(c *call) error                       { return a.g.shmBarrier(c) }

// mesh runs the collectives over the links between every pair of ranks.
type mesh struct{ g *TCP }

// chunks cuts b into pieces of at most the chunk size, whole elements each.
func (g *TCP) chunks(b []byte, es int) [][]byte {
	step := max(es, g.opts.ChunkBytes/es*es)
	var out [][]byte
	for len(b) > 0 {
		k := min(len(b), step)
		out = append(out, b[:k:k])
		b = b[k:]
	}
	return out
}

// AllReduce reduces data over all ranks in place: recursive doubling up
// to SmallBytes, else the pipelined ring. For a given size the algorithm
// and the order of additions are fixed, so the result is bitwise the same
// on every rank and in every run.
func (g *TCP) AllReduce(ctx context.Context, data any, op Op) error {
	buf, dt, n, err := view(data)
	if err != nil {
		return err
	}
	if dt == Bytes || op < Sum || op > Max {
		return fmt.Errorf("dist: all-reduce needs float32, float64 or int64 and sum, mean or max (got %s, %s)", dt, op)
	}
	c, err := g.begin(ctx, KindAllReduce, dt, op, n)
	if err != nil {
		return err
	}
	if g.size > 1 {
		err = g.algos().allReduce(c, buf, dt.Size(), n)
	}
	if err = g.end(c, err); err != nil {
		return err
	}
	if op == Mean {
		finishMean(buf, dt, g.size)
	}
	return nil
}

func (a mesh) allReduce(c *call, buf []byte, es, n int) error {
	if len(buf) <= a.g.opts.SmallBytes {
		return a.g.recursiveDoubling(c, buf)
	}
	return a.g.ring(c, buf, es, n, true, true)
}

// recursiveDoubling runs doublingSchedule on buf.
func (g *TCP) recursiveDoubling(c *call, buf []byte) error {
	for _, a := range doublingSchedule(g.rank, g.size) {
		if a.kind == actSend {
			if err := g.sendNow(c, a.peer, buf); err != nil {
				return err
			}
			continue
		}
		if err := g.recvInto(c, a, buf); err != nil {
			return err
		}
	}
	return nil
}

// ring runs ringSchedule on n elements of es bytes in buf, segment j being
// elements [j·n/N, (j+1)·n/N). Segments are cut into chunks, and each
// chunk is passed on as soon as it is reduced, so sending, receiving and
// reducing overlap.
func (g *TCP) ring(c *call, buf []byte, es, n int, doRS, doAG bool) error {
	N := g.size
	seg := func(j int) []byte { return buf[j*n/N*es : (j+1)*n/N*es] }
	for _, a := range ringSchedule(g.rank, N, doRS, doAG) {
		for _, ch := range g.chunks(seg(a.seg), es) {
			if a.kind == actSend {
				g.sendAsync(c, a.peer, ch)
				continue
			}
			if err := g.recvInto(c, a, ch); err != nil {
				return err
			}
			if a.forward >= 0 {
				g.sendAsync(c, a.forward, ch)
			}
		}
	}
	return nil
}

// recvInto receives len(b) bytes from a.peer and reduces them into b or
// copies them over it (a.kind).
func (g *TCP) recvInto(c *call, a action, b []byte) error {
	f, err := g.recv(c, a.peer, len(b))
	if err != nil {
		return err
	}
	if a.kind == actRecvReduce {
		reduceInto(b, f.data, c.dtype, c.op)
	} else {
		copy(b, f.data)
	}
	g.release(f)
	return nil
}

// ReduceScatter reduces send over all ranks and leaves block Rank() in
// recv: directly (one message to each rank, summed in rank order) up to
// SmallBytes, else by the ring's reduce-scatter phase.
func (g *TCP) ReduceScatter(ctx context.Context, send, recv any, op Op) error {
	sb, dt, n, err := view(send)
	if err != nil {
		return err
	}
	rb, dt2, m, err := view(recv)
	if err != nil {
		return err
	}
	if dt != dt2 || dt == Bytes || n != m*g.size || op < Sum || op > Max {
		return fmt.Errorf("dist: reduce-scatter needs send of %d×len(recv) elements of one numeric type and sum, mean or max (got %s×%d, %s×%d, %s)", g.size, dt, n, dt2, m, op)
	}
	c, err := g.begin(ctx, KindReduceScatter, dt, op, n)
	if err != nil {
		return err
	}
	if g.size == 1 {
		copy(rb, sb)
	} else {
		err = g.algos().reduceScatter(c, sb, rb, dt.Size(), n, m)
	}
	if err = g.end(c, err); err != nil {
		return err
	}
	if op == Mean {
		finishMean(rb, dt, g.size)
	}
	return nil
}

func (a mesh) reduceScatter(c *call, sb, rb []byte, es, n, m int) error {
	g := a.g
	block := func(b []byte, j int) []byte { return b[j*m*es : (j+1)*m*es] }
	if len(sb) > g.opts.SmallBytes {
		tmp := make([]byte, len(sb))
		copy(tmp, sb)
		err := g.ring(c, tmp, es, n, true, false)
		if err == nil {
			copy(rb, block(tmp, g.rank))
		}
		return err
	}
	for j := 1; j < g.size; j++ {
		to := (g.rank + j) % g.size
		g.sendAsync(c, to, block(sb, to))
	}
	frames := make([]*frame, g.size)
	defer func() {
		for _, f := range frames {
			if f != nil {
				g.release(f)
			}
		}
	}()
	for j := 1; j < g.size; j++ {
		from := mod(g.rank-j, g.size)
		f, err := g.recv(c, from, m*es)
		if err != nil {
			return err
		}
		frames[from] = f
	}
	for j := 0; j < g.size; j++ {
		src := block(sb, j)
		if j != g.rank {
			src = frames[j].data
		}
		if j == 0 {
			copy(rb, src)
		} else {
			reduceInto(rb, src, c.dtype, c.op)
		}
	}
	return nil
}

// AllGather concatenates every rank's send into recv: directly up to
// SmallBytes in all, else by the ring.
func (g *TCP) AllGather(ctx context.Context, send, recv any) error {
	sb, dt, m, err := view(send)
	if err != nil {
		return err
	}
	rb, dt2, n, err := view(recv)
	if err != nil {
		return err
	}
	if dt != dt2 || n != m*g.size {
		return fmt.Errorf("dist: all-gather needs recv of %d×len(send) elements of send's type (got %s×%d, %s×%d)", g.size, dt, m, dt2, n)
	}
	c, err := g.begin(ctx, KindAllGather, dt, 0, m)
	if err != nil {
		return err
	}
	copy(rb[g.rank*m*dt.Size():], sb)
	if g.size > 1 {
		err = g.algos().allGather(c, sb, rb, dt.Size(), n, m)
	}
	return g.end(c, err)
}

func (a mesh) allGather(c *call, sb, rb []byte, es, n, m int) error {
	g := a.g
	if len(rb) > g.opts.SmallBytes {
		return g.ring(c, rb, es, n, false, true)
	}
	for j := 1; j < g.size; j++ {
		g.sendAsync(c, (g.rank+j)%g.size, sb)
	}
	for j := 1; j < g.size; j++ {
		from := mod(g.rank-j, g.size)
		f, err := g.recv(c, from, m*es)
		if err != nil {
			return err
		}
		copy(rb[from*m*es:], f.data)
		g.release(f)
	}
	return nil
}

// Broadcast copies root's data to every rank: a binomial tree up to
// SmallBytes, else a pipelined chain.
func (g *TCP) Broadcast(ctx context.Context, data any, root int) error {
	buf, dt, n, err := view(data)
	if err != nil {
		return err
	}
	if root < 0 || root >= g.size {
		return fmt.Errorf("dist: broadcast from rank %d in a group of %d", root, g.size)
	}
	c, err := g.begin(ctx, KindBroadcast, dt, Op(root+1), n)
	if err != nil {
		return err
	}
	if g.size > 1 {
		err = g.algos().broadcast(c, buf, dt.Size(), root)
	}
	return g.end(c, err)
}

func (a mesh) broadcast(c *call, buf []byte, es, root int) error {
	g := a.g
	N := g.size
	v := mod(g.rank-root, N)
	if len(buf) <= g.opts.SmallBytes {
		mask := 1
		for mask < N {
			if v&mask != 0 {
				f, err := g.recv(c, (v-mask+root)%N, len(buf))
				if err != nil {
					return err
				}
				copy(buf, f.data)
				g.release(f)
				break
			}
			mask <<= 1
		}
		for mask >>= 1; mask > 0; mask >>= 1 {
			if v+mask < N {
				if err := g.sendNow(c, (v+mask+root)%N, buf); err != nil {
					return err
				}
			}
		}
		return nil
	}
	next, prev := (g.rank+1)%N, (g.rank-1+N)%N
	for _, ch := range g.chunks(buf, es) {
		if v > 0 {
			f, err := g.recv(c, prev, len(ch))
			if err != nil {
				return err
			}
			copy(ch, f.data)
			g.release(f)
		}
		if v < N-1 {
			g.sendAsync(c, next, ch)
		}
	}
	return nil
}

// AllToAllV sends send[p] to rank p and returns what every rank sent here.
func (g *TCP) AllToAllV(ctx context.Context, send [][]byte) ([][]byte, error) {
	if len(send) != g.size {
		return nil, fmt.Errorf("dist: all-to-all-v with %d buffers in a group of %d", len(send), g.size)
	}
	c, err := g.begin(ctx, KindAllToAllV, Bytes, 0, 0)
	if err != nil {
		return nil, err
	}
	out := make([][]byte, g.size)
	out[g.rank] = send[g.rank]
	if g.size > 1 {
		err = g.algos().allToAllV(c, send, out)
	}
	if err = g.end(c, err); err != nil {
		return nil, err
	}
	return out, nil
}

func (a mesh) allToAllV(c *call, send, out [][]byte) error {
	g := a.g
	for j := 1; j < g.size; j++ {
		to := (g.rank + j) % g.size
		g.sendAsync(c, to, send[to])
	}
	for j := 1; j < g.size; j++ {
		from := mod(g.rank-j, g.size)
		f, err := g.recv(c, from, -1)
		if err != nil {
			return err
		}
		if f.pooled != nil {
			out[from] = append([]byte(nil), f.data...)
			g.release(f)
		} else {
			out[from] = f.data
		}
	}
	return nil
}

// Barrier returns once every rank has entered it (dissemination: log2 N
// rounds of empty messages).
func (g *TCP) Barrier(ctx context.Context) error {
	c, err := g.begin(ctx, KindBarrier, Bytes, 0, 0)
	if err != nil {
		return err
	}
	if g.size > 1 {
		err = g.algos().barrier(c)
	}
	return g.end(c, err)
}

func (a mesh) barrier(c *call) error {
	g := a.g
	for k := 1; k < g.size; k <<= 1 {
		if err := g.sendNow(c, (g.rank+k)%g.size, nil); err != nil {
			return err
		}
		f, err := g.recv(c, mod(g.rank-k, g.size), 0)
		if err != nil {
			return err
		}
		g.release(f)
	}
	return nil
}

var _ Comm = (*TCP)(nil)

package dist

import (
	"context"
	"fmt"
)

func mod(a, n int) int { return ((a % n) + n) % n }

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
	if g.shm != nil {
		err = g.shmAllReduce(c, buf)
	} else if g.size > 1 {
		if len(buf) <= g.opts.SmallBytes {
			err = g.recursiveDoubling(c, buf)
		} else {
			err = g.ring(c, buf, dt.Size(), n, true, true)
		}
	}
	if err = g.end(c, err); err != nil {
		return err
	}
	if op == Mean {
		finishMean(buf, dt, g.size)
	}
	return nil
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
	es := dt.Size()
	block := func(b []byte, j int) []byte { return b[j*m*es : (j+1)*m*es] }
	switch {
	case g.size == 1:
		copy(rb, sb)
	case g.shm != nil && m == 0:
		err = g.shmBarrier(c)
	case g.shm != nil:
		err = g.shmReduceScatter(c, sb, rb)
	case len(sb) <= g.opts.SmallBytes:
		for j := 1; j < g.size; j++ {
			to := (g.rank + j) % g.size
			g.sendAsync(c, to, block(sb, to))
		}
		frames := make([]*frame, g.size)
		for j := 1; j < g.size && err == nil; j++ {
			from := mod(g.rank-j, g.size)
			frames[from], err = g.recv(c, from, m*es)
		}
		if err == nil {
			first := true
			for j := 0; j < g.size; j++ {
				src := block(sb, j)
				if j != g.rank {
					src = frames[j].data
				}
				if first {
					copy(rb, src)
					first = false
				} else {
					reduceInto(rb, src, dt, op)
				}
			}
		}
		for _, f := range frames {
			if f != nil {
				g.release(f)
			}
		}
	default:
		tmp := make([]byte, len(sb))
		copy(tmp, sb)
		if err = g.ring(c, tmp, es, n, true, false); err == nil {
			copy(rb, block(tmp, g.rank))
		}
	}
	if err = g.end(c, err); err != nil {
		return err
	}
	if op == Mean {
		finishMean(rb, dt, g.size)
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
	es := dt.Size()
	copy(rb[g.rank*m*es:], sb)
	switch {
	case g.size == 1:
	case g.shm != nil && m == 0:
		err = g.shmBarrier(c)
	case g.shm != nil:
		err = g.shmAllGather(c, sb, rb)
	case len(rb) <= g.opts.SmallBytes:
		for j := 1; j < g.size; j++ {
			g.sendAsync(c, (g.rank+j)%g.size, sb)
		}
		for j := 1; j < g.size; j++ {
			from := mod(g.rank-j, g.size)
			f, e := g.recv(c, from, m*es)
			if e != nil {
				err = e
				break
			}
			copy(rb[from*m*es:], f.data)
			g.release(f)
		}
	default:
		err = g.ring(c, rb, es, n, false, true)
	}
	return g.end(c, err)
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
	N := g.size
	v := mod(g.rank-root, N)
	switch {
	case N == 1:
	case g.shm != nil:
		err = g.shmBroadcast(c, buf, root)
	case len(buf) <= g.opts.SmallBytes:
		mask := 1
		for mask < N {
			if v&mask != 0 {
				var f *frame
				if f, err = g.recv(c, (v-mask+root)%N, len(buf)); err != nil {
					break
				}
				copy(buf, f.data)
				g.release(f)
				break
			}
			mask <<= 1
		}
		for mask >>= 1; mask > 0 && err == nil; mask >>= 1 {
			if v+mask < N {
				err = g.sendNow(c, (v+mask+root)%N, buf)
			}
		}
	default:
		next, prev := (g.rank+1)%N, (g.rank-1+N)%N
		for _, ch := range g.chunks(buf, dt.Size()) {
			if v > 0 {
				var f *frame
				if f, err = g.recv(c, prev, len(ch)); err != nil {
					break
				}
				copy(ch, f.data)
				g.release(f)
			}
			if v < N-1 {
				g.sendAsync(c, next, ch)
			}
		}
	}
	return g.end(c, err)
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
	if g.shm != nil {
		if err = g.end(c, g.shmAllToAllV(c, send, out)); err != nil {
			return nil, err
		}
		return out, nil
	}
	for j := 1; j < g.size; j++ {
		to := (g.rank + j) % g.size
		g.sendAsync(c, to, send[to])
	}
	for j := 1; j < g.size; j++ {
		from := mod(g.rank-j, g.size)
		f, e := g.recv(c, from, -1)
		if e != nil {
			err = e
			break
		}
		if f.pooled != nil {
			out[from] = append([]byte(nil), f.data...)
			g.release(f)
		} else {
			out[from] = f.data
		}
	}
	if err = g.end(c, err); err != nil {
		return nil, err
	}
	return out, nil
}

// Barrier returns once every rank has entered it (dissemination: log2 N
// rounds of empty messages).
func (g *TCP) Barrier(ctx context.Context) error {
	c, err := g.begin(ctx, KindBarrier, Bytes, 0, 0)
	if err != nil {
		return err
	}
	if g.shm != nil {
		return g.end(c, g.shmBarrier(c))
	}
	for k := 1; k < g.size && err == nil; k <<= 1 {
		if err = g.sendNow(c, (g.rank+k)%g.size, nil); err != nil {
			break
		}
		var f *frame
		if f, err = g.recv(c, mod(g.rank-k, g.size), 0); err == nil {
			g.release(f)
		}
	}
	return g.end(c, err)
}

var _ Comm = (*TCP)(nil)

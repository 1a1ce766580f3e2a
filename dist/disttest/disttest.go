// Package disttest is the conformance suite every dist.Comm backend
// passes: each rank calls Run with its own Comm, and every check is
// verified on every rank against values it can compute alone. The pure-Go
// backend runs it with ranks as goroutines (go test ./dist); the Open MPI
// backend under mpirun (see dist/mpi).
package disttest

import (
	"bytes"
	"context"
	"fmt"
	"hash/fnv"
	"math"
	"unsafe"

	"github.com/graphmill/graphmill/dist"
)

// Sizes are the element counts the reductions are checked at: empty, one,
// odd, around the small/large switch of the TCP backend, and several
// chunks.
var Sizes = []int{0, 1, 7, 1000, 16383, 16385, 100003, 1 << 20}

// Run checks every collective on this rank. All ranks must call it.
func Run(ctx context.Context, c dist.Comm) error {
	checks := []struct {
		name string
		f    func(context.Context, dist.Comm) error
	}{
		{"all-reduce", allReduce},
		{"bitwise determinism", determinism},
		{"reduce-scatter", reduceScatter},
		{"all-gather", allGather},
		{"broadcast", broadcast},
		{"all-to-all-v", allToAllV},
		{"barrier", barrier},
		{"send/recv", sendRecv},
	}
	for _, ch := range checks {
		if err := ch.f(ctx, c); err != nil {
			return fmt.Errorf("rank %d of %d: %s: %w", c.Rank(), c.Size(), ch.name, err)
		}
	}
	return nil
}

// val is rank r's element i: small integers, so sums are exact.
func val(r, i int) int64 { return int64((r + 1) * (i%97 - 40)) }

func allReduce(ctx context.Context, c dist.Comm) error {
	N, r := c.Size(), c.Rank()
	tri := int64(N * (N + 1) / 2)
	for _, n := range Sizes {
		for _, op := range []dist.Op{dist.Sum, dist.Mean, dist.Max} {
			f32 := make([]float32, n)
			f64 := make([]float64, n)
			i64 := make([]int64, n)
			for i := range n {
				f32[i], f64[i], i64[i] = float32(val(r, i)), float64(val(r, i)), val(r, i)
			}
			for _, buf := range []any{f32, f64, i64} {
				if err := c.AllReduce(ctx, buf, op); err != nil {
					return err
				}
			}
			for i := range n {
				b := int64(i%97 - 40)
				var want int64
				switch op {
				case dist.Sum, dist.Mean:
					want = b * tri
				case dist.Max:
					want = max(b, b*int64(N))
				}
				w32, w64, wi := float32(want), float64(want), want
				if op == dist.Mean {
					w32, w64, wi = float32(want)/float32(N), float64(want)/float64(N), want/int64(N)
				}
				if f32[i] != w32 || f64[i] != w64 || i64[i] != wi {
					return fmt.Errorf("%s of %d elements: element %d is %v/%v/%v (float32/float64/int64), want %v/%v/%v", op, n, i, f32[i], f64[i], i64[i], w32, w64, wi)
				}
			}
		}
	}
	return nil
}

// determinism: non-integer values, whose sum depends on the order of
// additions, come out bitwise the same on every rank and on a second run.
func determinism(ctx context.Context, c dist.Comm) error {
	for _, n := range []int{1000, 300001} {
		in := make([]float32, n)
		for i := range in {
			in[i] = float32(math.Sin(float64(i*(c.Rank()+3)))) * 1e3 / float32(i%13+1)
		}
		a := append([]float32(nil), in...)
		b := append([]float32(nil), in...)
		if err := c.AllReduce(ctx, a, dist.Sum); err != nil {
			return err
		}
		if err := c.AllReduce(ctx, b, dist.Sum); err != nil {
			return err
		}
		ha, hb := hash(a), hash(b)
		if ha != hb {
			return fmt.Errorf("%d elements: two runs differ", n)
		}
		all := make([]int64, c.Size())
		if err := c.AllGather(ctx, []int64{int64(ha)}, all); err != nil {
			return err
		}
		for p, h := range all {
			if uint64(h) != ha {
				return fmt.Errorf("%d elements: rank %d's result differs from rank %d's", n, p, c.Rank())
			}
		}
	}
	return nil
}

func hash(x []float32) uint64 {
	h := fnv.New64a()
	if len(x) > 0 {
		h.Write(unsafe.Slice((*byte)(unsafe.Pointer(&x[0])), 4*len(x)))
	}
	return h.Sum64()
}

func reduceScatter(ctx context.Context, c dist.Comm) error {
	N, r := c.Size(), c.Rank()
	for _, m := range []int{0, 1, 5, 3000, 70001} {
		send := make([]float64, N*m)
		for i := range send {
			send[i] = float64(val(r, i))
		}
		recv := make([]float64, m)
		if err := c.ReduceScatter(ctx, send, recv, dist.Sum); err != nil {
			return err
		}
		for i := range m {
			j := r*m + i
			want := float64(int64(j%97-40) * int64(N*(N+1)/2))
			if recv[i] != want {
				return fmt.Errorf("block of %d: element %d is %v, want %v", m, i, recv[i], want)
			}
		}
	}
	return nil
}

func allGather(ctx context.Context, c dist.Comm) error {
	N, r := c.Size(), c.Rank()
	for _, m := range []int{0, 1, 9, 5000, 200001} {
		send := make([]byte, m)
		for i := range send {
			send[i] = byte(r*31 + i)
		}
		recv := make([]byte, N*m)
		if err := c.AllGather(ctx, send, recv); err != nil {
			return err
		}
		for p := range N {
			for i := range m {
				if recv[p*m+i] != byte(p*31+i) {
					return fmt.Errorf("%d bytes per rank: byte %d of rank %d's block is %d, want %d", m, i, p, recv[p*m+i], byte(p*31+i))
				}
			}
		}
		f := make([]float32, 3)
		for i := range f {
			f[i] = float32(r*10 + i)
		}
		fr := make([]float32, 3*N)
		if err := c.AllGather(ctx, f, fr); err != nil {
			return err
		}
		for i, v := range fr {
			if v != float32(i/3*10+i%3) {
				return fmt.Errorf("float32 all-gather: element %d is %v", i, v)
			}
		}
	}
	return nil
}

func broadcast(ctx context.Context, c dist.Comm) error {
	for root := range c.Size() {
		for _, n := range []int{0, 1, 100, 20000, 500001} {
			buf := make([]int64, n)
			if c.Rank() == root {
				for i := range buf {
					buf[i] = int64(i*root + 7)
				}
			}
			if err := c.Broadcast(ctx, buf, root); err != nil {
				return err
			}
			for i, v := range buf {
				if v != int64(i*root+7) {
					return fmt.Errorf("root %d, %d elements: element %d is %d", root, n, i, v)
				}
			}
		}
	}
	return nil
}

func msg(from, to, round int) []byte {
	n := ((from*7 + to*13 + round*5) % 11) * 997
	if round == 2 {
		n = 0
	}
	if round == 3 && from == 0 {
		n = 3<<20 + to
	}
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(from*17 + to*3 + i + round)
	}
	return b
}

func allToAllV(ctx context.Context, c dist.Comm) error {
	N, r := c.Size(), c.Rank()
	for round := range 4 {
		send := make([][]byte, N)
		for p := range N {
			send[p] = msg(r, p, round)
		}
		got, err := c.AllToAllV(ctx, send)
		if err != nil {
			return err
		}
		for p := range N {
			if !bytes.Equal(got[p], msg(p, r, round)) {
				return fmt.Errorf("round %d: from rank %d got %d bytes, want %d (or different bytes)", round, p, len(got[p]), len(msg(p, r, round)))
			}
		}
	}
	return nil
}

func barrier(ctx context.Context, c dist.Comm) error {
	for range 3 {
		if err := c.Barrier(ctx); err != nil {
			return err
		}
	}
	return nil
}

func sendRecv(ctx context.Context, c dist.Comm) error {
	N, r := c.Size(), c.Rank()
	if N == 1 {
		return nil
	}
	next, prev := (r+1)%N, (r-1+N)%N
	// Two tags sent in one order, received in the other; one large.
	if err := c.Send(ctx, next, 1, msg(r, next, 0)); err != nil {
		return err
	}
	if err := c.Send(ctx, next, 2, msg(r, next, 3)); err != nil {
		return err
	}
	b, err := c.Recv(ctx, prev, 2)
	if err != nil {
		return err
	}
	if !bytes.Equal(b, msg(prev, r, 3)) {
		return fmt.Errorf("tag 2 from rank %d: %d bytes, want %d", prev, len(b), len(msg(prev, r, 3)))
	}
	b, err = c.Recv(ctx, prev, 1)
	if err != nil {
		return err
	}
	if !bytes.Equal(b, msg(prev, r, 0)) {
		return fmt.Errorf("tag 1 from rank %d: %d bytes, want %d", prev, len(b), len(msg(prev, r, 0)))
	}
	return c.Barrier(ctx)
}

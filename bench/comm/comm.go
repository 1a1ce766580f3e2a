// Package comm is the harness behind "graphmill bench comm": it times
// all-reduce and all-to-all-v on one rank of a group (every rank runs
// Measure; rank 0's figures are the result) and measures the machine's
// loopback ceilings.
package comm

import (
	"context"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/graphmill/graphmill/dist"
)

// Point is one timed collective at one size.
type Point struct {
	Backend string  `json:"backend"`
	Ranks   int     `json:"ranks"`
	Op      string  `json:"op"`
	Bytes   int64   `json:"bytes"`
	Iters   int     `json:"iters"`
	Seconds float64 `json:"seconds_per_op"`
	// LatencyUs is the time of one operation in microseconds.
	LatencyUs float64 `json:"latency_us"`
	// BusGBps is the bus bandwidth as nccl-tests define it: all-reduce
	// 2(N−1)/N · bytes / time, all-to-all (N−1)/N · bytes / time.
	BusGBps float64 `json:"bus_gbps"`
	// Transport is how the pure-Go backend's ranks talked ("shared
	// memory", "tcp (...)").
	Transport string `json:"transport,omitempty"`
}

// Blocking is implemented by backends with a plain blocking all-reduce
// (Open MPI's MPI_Allreduce), which Measure times instead of AllReduce.
type Blocking interface {
	AllReduceBlocking(data []float32, op dist.Op) error
}

// Measure times all-reduce (float32 sum) and all-to-all-v (bytes/N to
// every rank) at each size, each for about budget, and returns rank 0's
// figures (nil on other ranks).
func Measure(ctx context.Context, c dist.Comm, backend string, sizes []int64, budget time.Duration) ([]Point, error) {
	N := c.Size()
	var out []Point
	for _, size := range sizes {
		buf := make([]float32, size/4)
		for i := range buf {
			buf[i] = float32(i%7) * 0.5
		}
		allreduce := func() error {
			if b, ok := c.(Blocking); ok {
				return b.AllReduceBlocking(buf, dist.Sum)
			}
			return c.AllReduce(ctx, buf, dist.Sum)
		}
		send := make([][]byte, N)
		for p := range send {
			send[p] = make([]byte, size/int64(N))
		}
		a2a := func() error { _, err := c.AllToAllV(ctx, send); return err }
		for _, op := range []struct {
			name   string
			f      func() error
			factor float64
		}{{"all-reduce", allreduce, 2 * float64(N-1) / float64(N)}, {"all-to-all-v", a2a, float64(N-1) / float64(N)}} {
			secs, iters, err := timeOp(ctx, c, op.f, budget)
			if err != nil {
				return nil, fmt.Errorf("%s of %d bytes: %w", op.name, size, err)
			}
			if c.Rank() == 0 {
				out = append(out, Point{Backend: backend, Ranks: N, Op: op.name, Bytes: size, Iters: iters, Seconds: secs,
					LatencyUs: secs * 1e6, BusGBps: op.factor * float64(size) / secs / 1e9})
			}
		}
	}
	return out, nil
}

// Rounds is how many timed rounds timeOp runs; the fastest counts (the
// machine's other load only ever slows a round down).
const Rounds = 3

// timeOp runs f once to warm up, lets rank 0 choose an iteration count
// that fills budget/Rounds, and times that many runs between barriers,
// Rounds times; it returns the fastest round's time per run.
func timeOp(ctx context.Context, c dist.Comm, f func() error, budget time.Duration) (float64, int, error) {
	if err := f(); err != nil {
		return 0, 0, err
	}
	if err := c.Barrier(ctx); err != nil {
		return 0, 0, err
	}
	t := time.Now()
	if err := f(); err != nil {
		return 0, 0, err
	}
	iters := []int64{int64(min(2000, max(3, int(budget/Rounds/max(time.Since(t), time.Microsecond)))))}
	if err := c.Broadcast(ctx, iters, 0); err != nil {
		return 0, 0, err
	}
	best := 0.0
	for round := range Rounds {
		if err := c.Barrier(ctx); err != nil {
			return 0, 0, err
		}
		t = time.Now()
		for range iters[0] {
			if err := f(); err != nil {
				return 0, 0, err
			}
		}
		if err := c.Barrier(ctx); err != nil {
			return 0, 0, err
		}
		if s := time.Since(t).Seconds() / float64(iters[0]); round == 0 || s < best {
			best = s
		}
	}
	return best, int(iters[0]), nil
}

// LoopbackGBps streams size-byte writes through a loopback TCP connection
// for about d and returns the rate: the ceiling of any TCP transport on
// this machine.
func LoopbackGBps(size int, d time.Duration) (float64, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	got := make(chan int64, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- 0
			return
		}
		defer c.Close()
		n, _ := io.CopyBuffer(io.Discard, c, make([]byte, 1<<20))
		got <- n
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		return 0, err
	}
	buf := make([]byte, size)
	t := time.Now()
	for time.Since(t) < d {
		if _, err := c.Write(buf); err != nil {
			return 0, err
		}
	}
	c.Close()
	n := <-got
	return float64(n) / time.Since(t).Seconds() / 1e9, nil
}

// CopyGBps is the rate of copying a size-byte buffer in memory.
func CopyGBps(size int, d time.Duration) float64 {
	a, b := make([]byte, size), make([]byte, size)
	copy(b, a)
	t := time.Now()
	n := 0
	for time.Since(t) < d {
		copy(b, a)
		n++
	}
	return float64(n) * float64(size) / time.Since(t).Seconds() / 1e9
}

// Package dist is graphmill's distributed runtime: rank resolution from
// the environment of existing launchers (torchrun, Kubeflow, Open MPI,
// MPICH, SLURM, Kubernetes Indexed Jobs), a rendezvous store on rank 0,
// authenticated connections between ranks, and the collectives
// distributed training needs behind one interface, Comm.
//
// The default backend (NewTCP, Join) is pure Go over TCP: a full mesh of
// connections, a bandwidth-optimal pipelined ring (reduce-scatter then
// all-gather) for large buffers and recursive doubling for small ones,
// with a fixed reduction order, so results are bitwise identical run to
// run and on every rank. Package dist/mpi puts Open MPI behind the same
// interface (build tag mpi). Package dist/disttest is the conformance
// suite both pass.
//
// Nothing hangs: every collective and receive has a deadline; every
// message carries the collective's sequence number, kind, type and size,
// so a rank calling a different collective is an error naming both; a
// rank that dies or whose link is cut makes every other rank fail within
// seconds naming it (heartbeats detect silent links); and a failing rank
// tells the others why before it leaves.
//
//	info, distributed, err := dist.Resolve(os.Getenv, dist.NoOverrides())
//	c, err := dist.Join(ctx, info, dist.Options{Security: sec})
//	defer c.Close()
//	err = c.AllReduce(ctx, grads, dist.Sum) // grads []float32, on every rank
package dist

import (
	"context"
	"fmt"
	"unsafe"
)

// Op is a reduction.
type Op uint8

// The reductions.
const (
	Sum Op = iota + 1
	Mean
	Max
)

func (o Op) String() string {
	switch o {
	case Sum:
		return "sum"
	case Mean:
		return "mean"
	case Max:
		return "max"
	}
	return fmt.Sprintf("op(%d)", uint8(o))
}

// DType is an element type of a collective's buffer.
type DType uint8

// The element types.
const (
	Bytes DType = iota + 1
	Float32
	Float64
	Int64
)

func (d DType) String() string {
	switch d {
	case Bytes:
		return "bytes"
	case Float32:
		return "float32"
	case Float64:
		return "float64"
	case Int64:
		return "int64"
	}
	return fmt.Sprintf("dtype(%d)", uint8(d))
}

// Size returns the bytes of one element.
func (d DType) Size() int {
	switch d {
	case Float32:
		return 4
	case Float64, Int64:
		return 8
	}
	return 1
}

// Comm is a process group's collectives and point-to-point messages.
// Buffers are []float32, []float64 or []int64 (reductions), or also
// []byte (broadcast, all-gather). Every rank must call the same
// collectives in the same order with the same sizes; a mismatch is an
// error on every rank, naming both calls. After any error the group is
// broken: close it and exit. A Comm is used by one goroutine at a time.
type Comm interface {
	Rank() int
	Size() int
	// AllReduce reduces data over all ranks in place.
	AllReduce(ctx context.Context, data any, op Op) error
	// ReduceScatter reduces send (Size() blocks of len(recv) elements)
	// over all ranks and leaves block Rank() of the result in recv.
	ReduceScatter(ctx context.Context, send, recv any, op Op) error
	// AllGather concatenates every rank's send into recv (Size() blocks
	// of len(send) elements, rank order).
	AllGather(ctx context.Context, send, recv any) error
	// Broadcast copies root's data to every rank's data.
	Broadcast(ctx context.Context, data any, root int) error
	// AllToAllV sends send[p] to rank p and returns what each rank sent
	// to this one (byte counts may differ per pair; send[Rank()] is
	// returned as is).
	AllToAllV(ctx context.Context, send [][]byte) ([][]byte, error)
	// Barrier returns once every rank has entered it.
	Barrier(ctx context.Context) error
	// Send delivers data to rank to under tag; Recv returns the next
	// message from rank from under tag (messages with one tag from one
	// rank arrive in order). Send may return before the message is
	// received; data must not change until it returns.
	Send(ctx context.Context, to int, tag uint32, data []byte) error
	Recv(ctx context.Context, from int, tag uint32) ([]byte, error)
	// Close leaves the group (after the others have left or a short
	// grace period).
	Close() error
}

// view returns the bytes, element type and element count of a buffer.
func view(data any) ([]byte, DType, int, error) {
	switch d := data.(type) {
	case []float32:
		return asBytes(d, 4), Float32, len(d), nil
	case []float64:
		return asBytes(d, 8), Float64, len(d), nil
	case []int64:
		return asBytes(d, 8), Int64, len(d), nil
	case []byte:
		return d, Bytes, len(d), nil
	}
	return nil, 0, 0, fmt.Errorf("dist: unsupported buffer type %T (want []float32, []float64, []int64 or []byte)", data)
}

func asBytes[T any](s []T, size int) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*size)
}

func asT[T any](b []byte, size int) []T {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Slice((*T)(unsafe.Pointer(&b[0])), len(b)/size)
}

// reduceInto combines src into dst element-wise (dst = dst op src).
// Sum and Mean add (Mean divides at the end); addition and max are
// commutative, so both partners of a pairwise exchange get the same bits.
func reduceInto(dst, src []byte, dt DType, op Op) {
	switch dt {
	case Float32:
		if op == Max {
			reduceT(asT[float32](dst, 4), asT[float32](src, 4), op)
		} else {
			reduceF32(asT[float32](dst, 4), asT[float32](src, 4)[:len(dst)/4])
		}
	case Float64:
		reduceT(asT[float64](dst, 8), asT[float64](src, 8), op)
	case Int64:
		reduceT(asT[int64](dst, 8), asT[int64](src, 8), op)
	}
}

// reduceT is reduceInto on typed slices.
func reduceT[T float32 | float64 | int64](d, s []T, op Op) {
	s = s[:len(d)]
	if op == Max {
		for i, v := range s {
			d[i] = max(d[i], v)
		}
		return
	}
	for i, v := range s {
		d[i] += v
	}
}

// finishMean divides a sum by n in place (integer division for int64).
func finishMean(b []byte, dt DType, n int) {
	switch dt {
	case Float32:
		d := asT[float32](b, 4)
		for i := range d {
			d[i] /= float32(n)
		}
	case Float64:
		d := asT[float64](b, 8)
		for i := range d {
			d[i] /= float64(n)
		}
	case Int64:
		d := asT[int64](b, 8)
		for i := range d {
			d[i] /= int64(n)
		}
	}
}

// Kind names a collective in messages and errors.
type Kind uint8

// The collectives.
const (
	KindAllReduce Kind = iota + 1
	KindReduceScatter
	KindAllGather
	KindBroadcast
	KindAllToAllV
	KindBarrier
	KindSend
)

func (k Kind) String() string {
	switch k {
	case KindAllReduce:
		return "all-reduce"
	case KindReduceScatter:
		return "reduce-scatter"
	case KindAllGather:
		return "all-gather"
	case KindBroadcast:
		return "broadcast"
	case KindAllToAllV:
		return "all-to-all-v"
	case KindBarrier:
		return "barrier"
	case KindSend:
		return "send/recv"
	}
	return fmt.Sprintf("collective(%d)", uint8(k))
}

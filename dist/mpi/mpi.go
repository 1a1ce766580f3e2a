//go:build mpi

// Package mpi puts Open MPI behind dist.Comm (build with -tags mpi; needs
// Debian's libopenmpi-dev). It is a thin cgo binding: no Go MPI module is
// obtainable. Ranks come from mpirun or srun; collectives are MPI's
// nonblocking ones (MPI_Iallreduce, ...) polled with MPI_Test, so every
// call has a deadline like the TCP backend's. MPI cannot cancel a
// collective: after a deadline or an error the group is broken, and
// Close aborts the job (MPI_Abort) instead of hanging in MPI_Finalize.
package mpi

/*
#cgo pkg-config: ompi-c
#include <mpi.h>
#include <stdlib.h>

static int gm_init(int *rank, int *size, int *provided) {
	int inited = 0;
	MPI_Initialized(&inited);
	if (!inited) {
		int rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, provided);
		if (rc != MPI_SUCCESS) return rc;
	}
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	MPI_Comm_rank(MPI_COMM_WORLD, rank);
	MPI_Comm_size(MPI_COMM_WORLD, size);
	return MPI_SUCCESS;
}
static MPI_Datatype gm_type(int t) {
	switch (t) {
	case 2: return MPI_FLOAT;
	case 3: return MPI_DOUBLE;
	case 4: return MPI_INT64_T;
	}
	return MPI_BYTE;
}
static MPI_Op gm_op(int o) { return o == 3 ? MPI_MAX : MPI_SUM; }
static int gm_allreduce(void *buf, int n, int t, int o) {
	return MPI_Allreduce(MPI_IN_PLACE, buf, n, gm_type(t), gm_op(o), MPI_COMM_WORLD);
}
static int gm_iallreduce(void *buf, int n, int t, int o, MPI_Request *r) {
	return MPI_Iallreduce(MPI_IN_PLACE, buf, n, gm_type(t), gm_op(o), MPI_COMM_WORLD, r);
}
static int gm_ireduce_scatter(const void *s, void *d, int n, int t, int o, MPI_Request *r) {
	return MPI_Ireduce_scatter_block(s, d, n, gm_type(t), gm_op(o), MPI_COMM_WORLD, r);
}
static int gm_iallgather(const void *s, void *d, int n, int t, MPI_Request *r) {
	return MPI_Iallgather(s, n, gm_type(t), d, n, gm_type(t), MPI_COMM_WORLD, r);
}
static int gm_ibcast(void *buf, int n, int t, int root, MPI_Request *r) {
	return MPI_Ibcast(buf, n, gm_type(t), root, MPI_COMM_WORLD, r);
}
static int gm_ialltoall_counts(const long long *s, long long *d, MPI_Request *r) {
	return MPI_Ialltoall(s, 1, MPI_LONG_LONG, d, 1, MPI_LONG_LONG, MPI_COMM_WORLD, r);
}
static int gm_ialltoallv(const void *s, const int *sc, const int *sd, void *d, const int *rc, const int *rd, MPI_Request *r) {
	return MPI_Ialltoallv(s, sc, sd, MPI_BYTE, d, rc, rd, MPI_BYTE, MPI_COMM_WORLD, r);
}
static int gm_ibarrier(MPI_Request *r) { return MPI_Ibarrier(MPI_COMM_WORLD, r); }
static int gm_isend(const void *buf, int n, int to, int tag, MPI_Request *r) {
	return MPI_Isend(buf, n, MPI_BYTE, to, tag, MPI_COMM_WORLD, r);
}
static int gm_iprobe(int from, int tag, int *flag, int *count) {
	MPI_Status st;
	int rc = MPI_Iprobe(from, tag, MPI_COMM_WORLD, flag, &st);
	if (rc == MPI_SUCCESS && *flag) rc = MPI_Get_count(&st, MPI_BYTE, count);
	return rc;
}
static int gm_recv(void *buf, int n, int from, int tag) {
	return MPI_Recv(buf, n, MPI_BYTE, from, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}
static int gm_test(MPI_Request *r, int *flag) { return MPI_Test(r, flag, MPI_STATUS_IGNORE); }
static int gm_tag_ub(void) {
	int *v, flag = 0;
	MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &v, &flag);
	return flag ? *v : 32767;
}
static void gm_errstr(int code, char *buf) {
	int len = 0;
	MPI_Error_string(code, buf, &len);
	buf[len] = 0;
}
static int gm_finalize(void) { return MPI_Finalize(); }
static void gm_abort(int code) { MPI_Abort(MPI_COMM_WORLD, code); }
*/
import "C"

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"sync"
	"time"
	"unsafe"

	"github.com/graphmill/graphmill/dist"
)

// Comm is the Open MPI backend over MPI_COMM_WORLD.
type Comm struct {
	rank, size int
	tagUB      int
	timeout    time.Duration
	mu         sync.Mutex
	sends      []*pendingSend
	broken     error
	closed     bool
}

type pendingSend struct {
	req C.MPI_Request
	buf unsafe.Pointer
}

var once struct {
	sync.Once
	c   *Comm
	err error
}

// Init initialises MPI (once per process) and returns the world
// communicator. opTimeout bounds every call (0: 10 minutes).
func Init(opTimeout time.Duration) (*Comm, error) {
	once.Do(func() {
		var rank, size, provided C.int
		if rc := C.gm_init(&rank, &size, &provided); rc != C.MPI_SUCCESS {
			once.err = fmt.Errorf("MPI_Init_thread: %s", errString(rc))
			return
		}
		once.c = &Comm{rank: int(rank), size: int(size), tagUB: int(C.gm_tag_ub())}
	})
	if once.err != nil {
		return nil, once.err
	}
	if opTimeout <= 0 {
		opTimeout = 10 * time.Minute
	}
	once.c.timeout = opTimeout
	return once.c, nil
}

func errString(rc C.int) string {
	buf := (*C.char)(C.malloc(1024))
	defer C.free(unsafe.Pointer(buf))
	C.gm_errstr(rc, buf)
	return C.GoString(buf)
}

// Rank returns this process's rank in MPI_COMM_WORLD.
func (c *Comm) Rank() int { return c.rank }

// Size returns the number of ranks.
func (c *Comm) Size() int { return c.size }

func typeCode(dt dist.DType) C.int {
	switch dt {
	case dist.Float32:
		return 2
	case dist.Float64:
		return 3
	case dist.Int64:
		return 4
	}
	return 1
}

func opCode(op dist.Op) C.int {
	if op == dist.Max {
		return 3
	}
	return 1
}

// buffer returns a buffer's first element, type, count and byte length.
func buffer(data any) (unsafe.Pointer, dist.DType, int, int, error) {
	switch d := data.(type) {
	case []float32:
		return ptr(d), dist.Float32, len(d), 4 * len(d), nil
	case []float64:
		return ptr(d), dist.Float64, len(d), 8 * len(d), nil
	case []int64:
		return ptr(d), dist.Int64, len(d), 8 * len(d), nil
	case []byte:
		return ptr(d), dist.Bytes, len(d), len(d), nil
	}
	return nil, 0, 0, 0, fmt.Errorf("dist/mpi: unsupported buffer type %T", data)
}

// ptr returns the first element's address (a valid dummy for empty slices).
func ptr[T any](s []T) unsafe.Pointer {
	if len(s) == 0 {
		return unsafe.Pointer(&dummy)
	}
	return unsafe.Pointer(&s[0])
}

var dummy [8]byte

func checkCount(what string, n int) error {
	if n > math.MaxInt32 {
		return fmt.Errorf("dist/mpi: %s of %d elements exceeds MPI's int count", what, n)
	}
	return nil
}

// start checks the group and takes the lock; the returned function pins
// the buffers for the duration of a nonblocking call.
func (c *Comm) start(what string) error {
	c.mu.Lock()
	if c.broken != nil {
		c.mu.Unlock()
		return fmt.Errorf("%s: the MPI group is broken: %w", what, c.broken)
	}
	c.progressSends()
	return nil
}

// wait polls req until it completes, ctx ends or the deadline passes.
// Called with c.mu held; releases it.
func (c *Comm) wait(ctx context.Context, what string, req *C.MPI_Request, rc C.int, pin *runtime.Pinner) error {
	defer c.mu.Unlock()
	defer pin.Unpin()
	if rc != C.MPI_SUCCESS {
		c.broken = fmt.Errorf("%s: %s", what, errString(rc))
		return c.broken
	}
	deadline := time.Now().Add(c.timeout)
	for spin := 0; ; spin++ {
		var flag C.int
		if rc := C.gm_test(req, &flag); rc != C.MPI_SUCCESS {
			c.broken = fmt.Errorf("%s: %s", what, errString(rc))
			return c.broken
		}
		if flag != 0 {
			return nil
		}
		if spin&1023 == 1023 {
			if err := ctx.Err(); err != nil {
				c.broken = fmt.Errorf("%s: %w", what, err)
				return c.broken
			}
			if time.Now().After(deadline) {
				c.broken = fmt.Errorf("%s: not complete within %v (a rank is gone, or calls different collectives)", what, c.timeout)
				return c.broken
			}
		}
		if spin > 4096 {
			time.Sleep(20 * time.Microsecond)
		} else {
			runtime.Gosched()
		}
	}
}

func mean(data any, n int) {
	switch d := data.(type) {
	case []float32:
		for i := range d {
			d[i] /= float32(n)
		}
	case []float64:
		for i := range d {
			d[i] /= float64(n)
		}
	case []int64:
		for i := range d {
			d[i] /= int64(n)
		}
	}
}

// AllReduce is MPI_Iallreduce in place.
func (c *Comm) AllReduce(ctx context.Context, data any, op dist.Op) error {
	p, dt, n, _, err := buffer(data)
	if err != nil {
		return err
	}
	if dt == dist.Bytes {
		return fmt.Errorf("dist/mpi: all-reduce of bytes")
	}
	if err := checkCount("all-reduce", n); err != nil {
		return err
	}
	what := fmt.Sprintf("all-reduce (%s, %s × %d)", op, dt, n)
	if err := c.start(what); err != nil {
		return err
	}
	var pin runtime.Pinner
	pin.Pin(p)
	var req C.MPI_Request
	rc := C.gm_iallreduce(p, C.int(n), typeCode(dt), opCode(op), &req)
	if err := c.wait(ctx, what, &req, rc, &pin); err != nil {
		return err
	}
	if op == dist.Mean {
		mean(data, c.size)
	}
	return nil
}

// AllReduceBlocking is plain MPI_Allreduce (sum or max) without a
// deadline: the reference the benchmark compares with.
func (c *Comm) AllReduceBlocking(data []float32, op dist.Op) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if rc := C.gm_allreduce(ptr(data), C.int(len(data)), 2, opCode(op)); rc != C.MPI_SUCCESS {
		return fmt.Errorf("MPI_Allreduce: %s", errString(rc))
	}
	return nil
}

// ReduceScatter is MPI_Ireduce_scatter_block.
func (c *Comm) ReduceScatter(ctx context.Context, send, recv any, op dist.Op) error {
	sp, dt, n, _, err := buffer(send)
	if err != nil {
		return err
	}
	rp, dt2, m, _, err := buffer(recv)
	if err != nil {
		return err
	}
	if dt != dt2 || n != m*c.size || dt == dist.Bytes {
		return fmt.Errorf("dist/mpi: reduce-scatter of %s×%d into %s×%d", dt, n, dt2, m)
	}
	if err := checkCount("reduce-scatter", n); err != nil {
		return err
	}
	what := fmt.Sprintf("reduce-scatter (%s, %s × %d)", op, dt, n)
	if err := c.start(what); err != nil {
		return err
	}
	var pin runtime.Pinner
	pin.Pin(sp)
	pin.Pin(rp)
	var req C.MPI_Request
	rc := C.gm_ireduce_scatter(sp, rp, C.int(m), typeCode(dt), opCode(op), &req)
	if err := c.wait(ctx, what, &req, rc, &pin); err != nil {
		return err
	}
	if op == dist.Mean {
		mean(recv, c.size)
	}
	return nil
}

// AllGather is MPI_Iallgather.
func (c *Comm) AllGather(ctx context.Context, send, recv any) error {
	sp, dt, m, _, err := buffer(send)
	if err != nil {
		return err
	}
	rp, dt2, n, _, err := buffer(recv)
	if err != nil {
		return err
	}
	if dt != dt2 || n != m*c.size {
		return fmt.Errorf("dist/mpi: all-gather of %s×%d into %s×%d", dt, m, dt2, n)
	}
	if err := checkCount("all-gather", n); err != nil {
		return err
	}
	what := fmt.Sprintf("all-gather (%s × %d)", dt, m)
	if err := c.start(what); err != nil {
		return err
	}
	var pin runtime.Pinner
	pin.Pin(sp)
	pin.Pin(rp)
	var req C.MPI_Request
	rc := C.gm_iallgather(sp, rp, C.int(m), typeCode(dt), &req)
	return c.wait(ctx, what, &req, rc, &pin)
}

// Broadcast is MPI_Ibcast.
func (c *Comm) Broadcast(ctx context.Context, data any, root int) error {
	p, dt, n, _, err := buffer(data)
	if err != nil {
		return err
	}
	if err := checkCount("broadcast", n); err != nil {
		return err
	}
	what := fmt.Sprintf("broadcast from rank %d (%s × %d)", root, dt, n)
	if err := c.start(what); err != nil {
		return err
	}
	var pin runtime.Pinner
	pin.Pin(p)
	var req C.MPI_Request
	rc := C.gm_ibcast(p, C.int(n), typeCode(dt), C.int(root), &req)
	return c.wait(ctx, what, &req, rc, &pin)
}

// AllToAllV exchanges the byte counts (MPI_Ialltoall), then the data
// (MPI_Ialltoallv).
func (c *Comm) AllToAllV(ctx context.Context, send [][]byte) ([][]byte, error) {
	if len(send) != c.size {
		return nil, fmt.Errorf("dist/mpi: all-to-all-v with %d buffers in a group of %d", len(send), c.size)
	}
	scount := make([]int64, c.size)
	for p, b := range send {
		scount[p] = int64(len(b))
	}
	rcount := make([]int64, c.size)
	if err := c.start("all-to-all-v counts"); err != nil {
		return nil, err
	}
	var pin runtime.Pinner
	pin.Pin(&scount[0])
	pin.Pin(&rcount[0])
	var req C.MPI_Request
	rc := C.gm_ialltoall_counts((*C.longlong)(unsafe.Pointer(&scount[0])), (*C.longlong)(unsafe.Pointer(&rcount[0])), &req)
	if err := c.wait(ctx, "all-to-all-v counts", &req, rc, &pin); err != nil {
		return nil, err
	}
	var stot, rtot int64
	for p := range c.size {
		stot += scount[p]
		rtot += rcount[p]
	}
	if stot > math.MaxInt32 || rtot > math.MaxInt32 {
		return nil, fmt.Errorf("dist/mpi: all-to-all-v of %d/%d bytes exceeds MPI's int displacements", stot, rtot)
	}
	sbuf := make([]byte, stot)
	rbuf := make([]byte, rtot)
	ints := make([]C.int, 4*c.size) // send counts, send displs, recv counts, recv displs
	var so, ro int
	for p := range c.size {
		copy(sbuf[so:], send[p])
		ints[p], ints[c.size+p] = C.int(scount[p]), C.int(so)
		ints[2*c.size+p], ints[3*c.size+p] = C.int(rcount[p]), C.int(ro)
		so += int(scount[p])
		ro += int(rcount[p])
	}
	if err := c.start("all-to-all-v"); err != nil {
		return nil, err
	}
	sp, rp := ptr(sbuf), ptr(rbuf)
	pin.Pin(sp)
	pin.Pin(rp)
	pin.Pin(&ints[0])
	n := c.size
	rc = C.gm_ialltoallv(sp, &ints[0], &ints[n], rp, &ints[2*n], &ints[3*n], &req)
	if err := c.wait(ctx, "all-to-all-v", &req, rc, &pin); err != nil {
		return nil, err
	}
	out := make([][]byte, c.size)
	ro = 0
	for p := range c.size {
		out[p] = rbuf[ro : ro+int(rcount[p]) : ro+int(rcount[p])]
		ro += int(rcount[p])
	}
	return out, nil
}

// Barrier is MPI_Ibarrier.
func (c *Comm) Barrier(ctx context.Context) error {
	if err := c.start("barrier"); err != nil {
		return err
	}
	var pin runtime.Pinner
	var req C.MPI_Request
	rc := C.gm_ibarrier(&req)
	return c.wait(ctx, "barrier", &req, rc, &pin)
}

// progressSends completes finished sends and frees their copies (with
// c.mu held).
func (c *Comm) progressSends() {
	keep := c.sends[:0]
	for _, s := range c.sends {
		var flag C.int
		C.gm_test(&s.req, &flag)
		if flag != 0 {
			C.free(s.buf)
			continue
		}
		keep = append(keep, s)
	}
	c.sends = keep
}

// Send copies data and starts MPI_Isend; it returns at once.
func (c *Comm) Send(ctx context.Context, to int, tag uint32, data []byte) error {
	if int(tag) > c.tagUB {
		return fmt.Errorf("dist/mpi: tag %d above MPI_TAG_UB %d", tag, c.tagUB)
	}
	if err := checkCount("send", len(data)); err != nil {
		return err
	}
	what := fmt.Sprintf("send to rank %d (tag %d)", to, tag)
	if err := c.start(what); err != nil {
		return err
	}
	defer c.mu.Unlock()
	s := &pendingSend{buf: C.malloc(C.size_t(max(1, len(data))))}
	copy(unsafe.Slice((*byte)(s.buf), len(data)), data)
	if rc := C.gm_isend(s.buf, C.int(len(data)), C.int(to), C.int(tag), &s.req); rc != C.MPI_SUCCESS {
		C.free(s.buf)
		c.broken = fmt.Errorf("%s: %s", what, errString(rc))
		return c.broken
	}
	c.sends = append(c.sends, s)
	return nil
}

// Recv waits (MPI_Iprobe) for a message from rank from under tag.
func (c *Comm) Recv(ctx context.Context, from int, tag uint32) ([]byte, error) {
	what := fmt.Sprintf("receive from rank %d (tag %d)", from, tag)
	deadline := time.Now().Add(c.timeout)
	for spin := 0; ; spin++ {
		if err := c.start(what); err != nil {
			return nil, err
		}
		var flag, count C.int
		rc := C.gm_iprobe(C.int(from), C.int(tag), &flag, &count)
		if rc == C.MPI_SUCCESS && flag != 0 {
			buf := make([]byte, int(count))
			rc = C.gm_recv(ptr(buf), count, C.int(from), C.int(tag))
			c.mu.Unlock()
			if rc != C.MPI_SUCCESS {
				return nil, fmt.Errorf("%s: %s", what, errString(rc))
			}
			return buf, nil
		}
		c.mu.Unlock()
		if rc != C.MPI_SUCCESS {
			return nil, fmt.Errorf("%s: %s", what, errString(rc))
		}
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%s: nothing within %v", what, c.timeout)
		}
		if spin > 1000 {
			time.Sleep(20 * time.Microsecond)
		} else {
			runtime.Gosched()
		}
	}
}

// Close completes pending sends and finalises MPI; a broken group aborts
// the job instead (MPI_Finalize would wait for the lost collective).
func (c *Comm) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	if c.broken != nil {
		C.gm_abort(1)
		return c.broken
	}
	end := time.Now().Add(10 * time.Second)
	for len(c.sends) > 0 && time.Now().Before(end) {
		c.progressSends()
		time.Sleep(time.Millisecond)
	}
	if rc := C.gm_finalize(); rc != C.MPI_SUCCESS {
		return fmt.Errorf("MPI_Finalize: %s", errString(rc))
	}
	return nil
}

var _ dist.Comm = (*Comm)(nil)

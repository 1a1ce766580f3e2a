//go:build linux

package diskio

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Kernel ABI of io_uring (include/uapi/linux/io_uring.h).
const (
	ioringOffSQRing = 0
	ioringOffCQRing = 0x8000000
	ioringOffSQEs   = 0x10000000

	ioringFeatSingleMmap = 1 << 0
	ioringFeatRWCurPos   = 1 << 3 // 5.6, the release that added IORING_OP_READ

	ioringEnterGetEvents = 1 << 0

	ioringOpRead = 22
)

type sqringOffsets struct {
	head, tail, ringMask, ringEntries, flags, dropped, array, resv1 uint32
	userAddr                                                        uint64
}

type cqringOffsets struct {
	head, tail, ringMask, ringEntries, overflow, cqes, flags, resv1 uint32
	userAddr                                                        uint64
}

// uringParams is struct io_uring_params (120 bytes).
type uringParams struct {
	sqEntries, cqEntries, flags, sqThreadCPU, sqThreadIdle, features, wqFD uint32
	resv                                                                   [3]uint32
	sqOff                                                                  sqringOffsets
	cqOff                                                                  cqringOffsets
}

// uringSQE is struct io_uring_sqe (64 bytes).
type uringSQE struct {
	opcode, flags uint8
	ioprio        uint16
	fd            int32
	off, addr     uint64
	len, rwFlags  uint32
	userData      uint64
	bufIndex      uint16
	personality   uint16
	spliceFDIn    int32
	addr3, pad2   uint64
}

// uringCQE is struct io_uring_cqe (16 bytes).
type uringCQE struct {
	userData uint64
	res      int32
	flags    uint32
}

// uringSetup is io_uring_setup; tests replace it to simulate kernels
// without io_uring.
var uringSetup = func(entries uint32, p *uringParams) (int, error) {
	fd, _, errno := unix.Syscall(unix.SYS_IO_URING_SETUP, uintptr(entries), uintptr(unsafe.Pointer(p)), 0)
	if errno != 0 {
		return -1, errno
	}
	return int(fd), nil
}

// slot is one request in flight: userData of its SQE is the slot index.
type slot struct {
	req  int
	done int
	buf  []byte // keeps the buffer referenced (and on the heap) while the kernel writes it
}

// ring is one io_uring instance, used by one ReadBatch call at a time.
type ring struct {
	fd, fileFD     int
	sqMem, cqMem   []byte
	sqeMem         []byte
	sqTail         *uint32
	sqMask         uint32
	sqArray        []uint32
	sqes           []uringSQE
	cqHead, cqTail *uint32
	cqMask         uint32
	cqes           []uringCQE
	entries        int
	slots          []slot
	free           []int
	broken         bool // a failed io_uring_enter left its state unknown
}

func newRing(f file, depth int) (_ *ring, err error) {
	var p uringParams
	fd, err := uringSetup(uint32(depth), &p)
	if err != nil {
		return nil, fmt.Errorf("io_uring_setup: %w", err)
	}
	q := &ring{fd: fd, fileFD: f.fd}
	defer func() {
		if err != nil {
			q.close()
		}
	}()
	if p.features&ioringFeatRWCurPos == 0 {
		return nil, fmt.Errorf("io_uring: kernel lacks IORING_OP_READ (features %#x)", p.features)
	}
	sqSize := int(p.sqOff.array) + int(p.sqEntries)*4
	cqSize := int(p.cqOff.cqes) + int(p.cqEntries)*int(unsafe.Sizeof(uringCQE{}))
	single := p.features&ioringFeatSingleMmap != 0 // CQ ring shares the SQ ring's mapping
	if single {
		sqSize = max(sqSize, cqSize)
	}
	mmap := func(off int64, size int) ([]byte, error) {
		m, err := unix.Mmap(fd, off, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
		if err != nil {
			err = fmt.Errorf("io_uring: mmap at %#x: %w", off, err)
		}
		return m, err
	}
	if q.sqMem, err = mmap(ioringOffSQRing, sqSize); err != nil {
		return nil, err
	}
	if q.cqMem = q.sqMem; !single {
		if q.cqMem, err = mmap(ioringOffCQRing, cqSize); err != nil {
			return nil, err
		}
	}
	if q.sqeMem, err = mmap(ioringOffSQEs, int(p.sqEntries)*int(unsafe.Sizeof(uringSQE{}))); err != nil {
		return nil, err
	}
	u32 := func(m []byte, off uint32) *uint32 { return (*uint32)(unsafe.Pointer(&m[off])) }
	q.sqTail = u32(q.sqMem, p.sqOff.tail)
	q.sqMask = *u32(q.sqMem, p.sqOff.ringMask)
	q.sqArray = unsafe.Slice(u32(q.sqMem, p.sqOff.array), p.sqEntries)
	q.sqes = unsafe.Slice((*uringSQE)(unsafe.Pointer(&q.sqeMem[0])), p.sqEntries)
	q.cqHead, q.cqTail = u32(q.cqMem, p.cqOff.head), u32(q.cqMem, p.cqOff.tail)
	q.cqMask = *u32(q.cqMem, p.cqOff.ringMask)
	q.cqes = unsafe.Slice((*uringCQE)(unsafe.Pointer(&q.cqMem[p.cqOff.cqes])), p.cqEntries)
	// At most sqEntries in flight, and the CQ ring holds at least as many
	// entries, so completions never overflow.
	q.entries = int(min(p.sqEntries, p.cqEntries))
	q.slots = make([]slot, q.entries)
	q.free = make([]int, 0, q.entries)
	return q, nil
}

func (q *ring) close() {
	if q.sqeMem != nil {
		_ = unix.Munmap(q.sqeMem)
	}
	if q.cqMem != nil && &q.cqMem[0] != &q.sqMem[0] {
		_ = unix.Munmap(q.cqMem)
	}
	if q.sqMem != nil {
		_ = unix.Munmap(q.sqMem)
	}
	q.sqeMem, q.cqMem, q.sqMem = nil, nil, nil
	if q.fd >= 0 {
		unix.Close(q.fd)
		q.fd = -1
	}
}

// push queues a read into slot s of the remainder of its request.
func (q *ring) push(s int, off int64) {
	sl := &q.slots[s]
	b := sl.buf[sl.done:]
	b = b[:min(len(b), maxRead)] // the SQE length is 32 bits; the rest follows as a short read
	tail := *q.sqTail            // only this goroutine writes the SQ tail
	i := tail & q.sqMask
	q.sqes[i] = uringSQE{
		opcode:   ioringOpRead,
		fd:       int32(q.fileFD),
		off:      uint64(off + int64(sl.done)),
		addr:     uint64(uintptr(unsafe.Pointer(unsafe.SliceData(b)))),
		len:      uint32(len(b)),
		userData: uint64(s),
	}
	q.sqArray[i] = i
	atomic.StoreUint32(q.sqTail, tail+1)
}

func (q *ring) enter(submit, wait uint32) (int, error) {
	n, _, errno := unix.Syscall6(unix.SYS_IO_URING_ENTER, uintptr(q.fd), uintptr(submit), uintptr(wait),
		ioringEnterGetEvents, 0, 0)
	if errno != 0 {
		return 0, errno
	}
	return int(n), nil
}

// run performs reqs with up to depth reads in flight on this ring.
func (q *ring) run(ctx context.Context, r *Reader, reqs []Req, depth int) error {
	// Completions are posted by task work on the submitting thread: staying
	// on one thread lets the wait in io_uring_enter run it directly.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	depth = min(depth, q.entries)
	q.free = q.free[:0]
	for s := depth - 1; s >= 0; s-- {
		q.free = append(q.free, s)
	}
	var (
		next, inflight int
		pending        uint32 // pushed, not yet accepted by io_uring_enter
		first          error
		stop           bool
	)
	release := func(s int) {
		q.slots[s] = slot{}
		q.free = append(q.free, s)
		inflight--
	}
	for {
		if !stop && ctx.Err() != nil {
			stop = true
		}
		for !stop && next < len(reqs) && len(q.free) > 0 {
			rq := &reqs[next]
			if len(rq.Buf) == 0 || rq.Off >= r.size {
				r.done(rq, 0)
				next++
				continue
			}
			s := q.free[len(q.free)-1]
			q.free = q.free[:len(q.free)-1]
			q.slots[s] = slot{req: next, buf: rq.Buf}
			q.push(s, rq.Off)
			next++
			pending++
			inflight++
		}
		if inflight == 0 {
			break
		}
		n, err := q.enter(pending, 1)
		switch err {
		case nil:
			pending -= uint32(n)
		case unix.EINTR, unix.EAGAIN, unix.EBUSY:
			// Nothing submitted; reap what completed and try again.
		default:
			q.broken = true
			return fmt.Errorf("diskio: %s: io_uring_enter: %w", r.path, err)
		}
		head, tail := *q.cqHead, atomic.LoadUint32(q.cqTail)
		for ; head != tail; head++ {
			c := q.cqes[head&q.cqMask]
			s := int(c.userData)
			sl := &q.slots[s]
			rq := &reqs[sl.req]
			switch {
			case c.res == -int32(unix.EAGAIN) || c.res == -int32(unix.EINTR):
				q.push(s, rq.Off)
				pending++
				continue
			case c.res < 0:
				if first == nil {
					first = r.errAt(rq.Off+int64(sl.done), unix.Errno(-c.res))
				}
				stop = true
				release(s)
				continue
			}
			sl.done += int(c.res)
			if c.res > 0 && sl.done < len(sl.buf) && rq.Off+int64(sl.done) < r.size {
				q.push(s, rq.Off) // short read: ask for the rest
				pending++
				continue
			}
			r.done(rq, sl.done)
			release(s)
		}
		atomic.StoreUint32(q.cqHead, head)
	}
	if first != nil {
		return first
	}
	if next < len(reqs) {
		return ctx.Err()
	}
	return nil
}

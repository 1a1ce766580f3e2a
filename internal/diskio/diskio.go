package diskio

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"unsafe"
)

// Req is one read of len(Buf) bytes at Off into Buf. After ReadBatch, N
// holds the bytes read (== len(Buf) unless the read reached end of file).
type Req struct {
	Off int64
	Buf []byte
	N   int
}

// Options configures Open.
type Options struct {
	// Depth is the number of requests in flight (0 = 64).
	Depth int
	// Direct opens the file with O_DIRECT. It falls back to buffered
	// reads when the filesystem (or the platform) refuses O_DIRECT;
	// Reader.Direct says which. Buffered reads are advised
	// POSIX_FADV_RANDOM (no readahead around each block).
	Direct bool
	// Backend is "auto" or "" (io_uring when io_uring_setup works, else
	// pread), "uring" (io_uring or an error) or "pread".
	Backend string
}

// Stats counts the requests completed and bytes read since Open.
type Stats struct {
	Reads, Bytes int64
}

// DirectAlign is the offset, length and buffer alignment O_DIRECT reads
// need, and the alignment of AlignedBuf.
const DirectAlign = 4096

const (
	defaultDepth = 64
	maxDepth     = 4096
	maxFreeRings = 8
)

// maxRead caps one system call's read (tests lower it to force short reads).
var maxRead = 1 << 30

// Reader reads blocks of one file. It is safe for concurrent use.
type Reader struct {
	path    string
	f       file
	size    int64
	depth   int
	direct  bool
	backend string

	reads, bytes atomic.Int64

	mu     sync.RWMutex // held shared by ReadBatch, exclusively by Close
	closed bool

	ringMu sync.Mutex
	rings  []*ring // idle io_uring rings, one taken per ReadBatch call
}

// Open opens path for reading with the given options.
func Open(path string, o Options) (*Reader, error) {
	depth := o.Depth
	if depth <= 0 {
		depth = defaultDepth
	}
	depth = min(depth, maxDepth)
	switch o.Backend {
	case "", "auto", "uring", "pread":
	default:
		return nil, fmt.Errorf("diskio: unknown backend %q (want auto, uring or pread)", o.Backend)
	}
	f, direct, size, err := openFile(path, o.Direct)
	if err != nil {
		return nil, err
	}
	r := &Reader{path: path, f: f, size: size, depth: depth, direct: direct, backend: "pread"}
	if o.Backend != "pread" {
		q, err := newRing(f, depth)
		switch {
		case err == nil:
			r.backend = "io_uring"
			r.rings = append(r.rings, q)
		case o.Backend == "uring":
			f.close()
			return nil, fmt.Errorf("diskio: %s: io_uring unavailable: %w", path, err)
		}
	}
	return r, nil
}

// Backend says which backend serves reads: "io_uring" or "pread".
func (r *Reader) Backend() string { return r.backend }

// Direct says whether the file was opened with O_DIRECT.
func (r *Reader) Direct() bool { return r.direct }

// Align is the alignment of offsets, lengths and buffer addresses that
// ReadBatch requires: DirectAlign when Direct, else 1.
func (r *Reader) Align() int {
	if r.direct {
		return DirectAlign
	}
	return 1
}

// Size is the file's size at Open. Reads stop there: the file is assumed
// not to change while open.
func (r *Reader) Size() int64 { return r.size }

// Depth is the number of requests ReadBatch keeps in flight.
func (r *Reader) Depth() int { return r.depth }

// Stats returns the requests completed and bytes read since Open.
func (r *Reader) Stats() Stats {
	return Stats{Reads: r.reads.Load(), Bytes: r.bytes.Load()}
}

// Close waits for running ReadBatch calls, then releases the rings and
// closes the file.
func (r *Reader) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	r.closed = true
	for _, q := range r.rings {
		q.close()
	}
	r.rings = nil
	return r.f.close()
}

// ReadBatch performs all reqs with up to Depth reads in flight and sets
// each N. A short read is continued until len(Buf) bytes or end of file.
// An error names the file and offset; after one, no further requests are
// started. On ctx cancellation ReadBatch stops starting requests, waits
// for those in flight (the kernel is writing their buffers) and returns
// ctx.Err(). With Direct, a request whose Off, len(Buf) or buffer address
// is not a multiple of Align is rejected before any read.
func (r *Reader) ReadBatch(ctx context.Context, reqs []Req) error {
	return r.readBatch(ctx, reqs, r.depth)
}

func (r *Reader) readBatch(ctx context.Context, reqs []Req, depth int) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := r.check(reqs); err != nil {
		return err
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.closed {
		return fmt.Errorf("diskio: %s: %w", r.path, os.ErrClosed)
	}
	depth = max(1, min(depth, r.depth))
	if r.backend == "io_uring" {
		if q, err := r.getRing(); err == nil {
			err = q.run(ctx, r, reqs, depth)
			r.putRing(q)
			return err
		}
		// No ring for this call (resources short): serve it with pread.
	}
	return r.preadBatch(ctx, reqs, depth)
}

func (r *Reader) check(reqs []Req) error {
	a := int64(r.Align())
	for i := range reqs {
		q := &reqs[i]
		q.N = 0
		if q.Off < 0 {
			return fmt.Errorf("diskio: %s: request %d: negative offset %d", r.path, i, q.Off)
		}
		if a == 1 || len(q.Buf) == 0 {
			continue
		}
		addr := int64(uintptr(unsafe.Pointer(unsafe.SliceData(q.Buf))))
		if q.Off%a != 0 || int64(len(q.Buf))%a != 0 || addr%a != 0 {
			return fmt.Errorf("diskio: %s: request %d (offset %d, length %d, buffer %#x) not aligned to %d bytes as O_DIRECT requires",
				r.path, i, q.Off, len(q.Buf), addr, a)
		}
	}
	return nil
}

func (r *Reader) getRing() (*ring, error) {
	r.ringMu.Lock()
	if n := len(r.rings); n > 0 {
		q := r.rings[n-1]
		r.rings = r.rings[:n-1]
		r.ringMu.Unlock()
		return q, nil
	}
	r.ringMu.Unlock()
	return newRing(r.f, r.depth)
}

func (r *Reader) putRing(q *ring) {
	r.ringMu.Lock()
	defer r.ringMu.Unlock()
	if q.broken || len(r.rings) >= maxFreeRings {
		q.close()
		return
	}
	r.rings = append(r.rings, q)
}

func (r *Reader) done(q *Req, n int) {
	q.N = n
	r.reads.Add(1)
	r.bytes.Add(int64(n))
}

func (r *Reader) errAt(off int64, err error) error {
	return fmt.Errorf("diskio: read %s at offset %d: %w", r.path, off, err)
}

// readOne reads q fully (to len(Buf) or end of file) with blocking preads.
func (r *Reader) readOne(q *Req) error {
	n := 0
	for n < len(q.Buf) && q.Off+int64(n) < r.size {
		m, err := r.f.pread(q.Buf[n:min(len(q.Buf), n+maxRead)], q.Off+int64(n))
		if err != nil {
			return r.errAt(q.Off+int64(n), err)
		}
		if m == 0 {
			break
		}
		n += m
	}
	r.done(q, n)
	return nil
}

// preadBatch runs depth goroutines that take requests by a shared index.
func (r *Reader) preadBatch(ctx context.Context, reqs []Req, depth int) error {
	var (
		next   atomic.Int64
		failed atomic.Bool
		errMu  sync.Mutex
		first  error
		wg     sync.WaitGroup
	)
	work := func() {
		for !failed.Load() && ctx.Err() == nil {
			i := next.Add(1) - 1
			if i >= int64(len(reqs)) {
				return
			}
			if err := r.readOne(&reqs[i]); err != nil {
				errMu.Lock()
				if first == nil {
					first = err
				}
				errMu.Unlock()
				failed.Store(true)
				return
			}
		}
	}
	workers := min(depth, len(reqs))
	for range workers - 1 {
		wg.Go(work)
	}
	work()
	wg.Wait()
	if first != nil {
		return first
	}
	if next.Load() < int64(len(reqs)) {
		return ctx.Err() // stopped by cancellation before taking every request
	}
	return nil
}

// AlignedBuf returns n bytes starting at a DirectAlign-byte boundary,
// usable as an O_DIRECT buffer.
func AlignedBuf(n int) []byte {
	b := make([]byte, n+DirectAlign)
	off := (DirectAlign - int(uintptr(unsafe.Pointer(unsafe.SliceData(b)))%DirectAlign)) % DirectAlign
	return b[off : off+n : off+n]
}

var errNoUring = errors.New("io_uring is not supported on this platform")

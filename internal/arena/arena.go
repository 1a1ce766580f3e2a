// Package arena hands out the short-lived working arrays of one
// computation (a partitioning run, say) from anonymous memory that is
// faulted in ahead, in bulk, and unmapped in one go when the computation
// ends.
//
// Why not the Go heap: on the virtual machines graphmill runs on, the first
// touch of a fresh 4 KiB page costs about 10 µs (a page fault that exits to
// the hypervisor), while asking the kernel to populate pages in bulk
// (MADV_POPULATE_WRITE) costs about 0.5 µs per page plus about 1.3 µs on
// first touch. A computation that starts from a cold heap (a new process,
// or after the heap was returned to the OS) pays a fault for every page it
// uses; on the graphs of a few megabytes that graphmill partitions in
// milliseconds, faults were half the time. The Go heap cannot populate
// ahead (it zeroes reused spans itself, which is what faults them in), so
// the arrays come from mappings the arena owns. No library in the Go
// ecosystem does this (the standard library's experimental arena package
// allocates from the Go heap and is not available by default), hence this
// small allocator.
//
// Memory from an arena is zeroed, holds no Go pointers (only plain data:
// integers, floats, bools) and must not be used after Free. Arrays are
// never freed one by one: the arena grows until Free, or until Release
// gives back everything handed out since a Mark (a step's temporaries), so
// it suits computations whose working set is a small multiple of their
// input. A nil *Arena is valid and allocates from the Go heap.
package arena

import (
	"sync"
	"unsafe"
)

// Plain are the element types an arena holds: no pointers, so the garbage
// collector need not see them.
type Plain interface {
	~int8 | ~uint8 | ~int16 | ~uint16 | ~int32 | ~uint32 | ~int64 | ~uint64 |
		~int | ~uint | ~float32 | ~float64 | ~bool
}

// Arena is a bump allocator over anonymous mappings. It is safe for
// concurrent use.
type Arena struct {
	mu      sync.Mutex
	regions [][]byte // every mapping, unmapped by Free
	cur     []byte   // the mapping allocations come from
	off     int      // bytes of cur handed out
	dirty   int      // bytes of cur that may hold data given back by Trim
	ready   int      // bytes of cur populated
	huge    bool     // cur is in huge pages, faulted in on touch
	handed  int64    // bytes handed out in all
	freed   bool
}

// HugeMaxRegion is the largest mapping advised into huge pages (on Linux,
// where the kernel has them); a caller that can size its arena may keep it
// under this bound. Partitioning wave (a 41 MB arena) from a cold heap
// took 20 % less time in huge pages faulted on touch than in 4 KiB pages
// populated in bulk (5 seeds each, same machine, same hour); with a
// 1M-node graph's 193 MB arena the contraction took 0.8 to 1.8 s from run
// to run in huge pages against a steady 1.0-1.1 s, the 2 MiB faults
// stalling on compaction in some runs (the kernel's "defrag" default
// compacts synchronously for advised regions).
const HugeMaxRegion = 64 << 20

const (
	// align is the alignment of every array (a cache line, so arrays that
	// different goroutines write never share one).
	align = 64
	// populateStep is the least the arena populates at a time: large
	// enough that the system call's fixed cost is amortised, small enough
	// that little is populated and never used.
	populateStep = 256 << 10
	// minRegion is the least virtual size of a mapping.
	minRegion = 4 << 20
)

// New returns an arena whose first mapping reserves sizeHint bytes of
// address space (populated only as arrays are handed out). It returns nil,
// which allocates from the Go heap, where anonymous mappings are not
// available.
func New(sizeHint int) *Arena {
	if !supported {
		return nil
	}
	a := &Arena{}
	if !a.grow(sizeHint) {
		return nil
	}
	return a
}

// grow maps a new region of at least size bytes and makes it current.
func (a *Arena) grow(size int) bool {
	size = max(size, minRegion, 2*len(a.cur))
	size = (size + pageSize - 1) &^ (pageSize - 1)
	m, huge, err := mapRegion(size)
	if err != nil {
		return false
	}
	a.regions = append(a.regions, m)
	a.cur, a.off, a.ready, a.dirty, a.huge = m, 0, 0, 0, huge
	return true
}

// Make returns a zeroed slice of n elements from a (from the Go heap if a
// is nil or cannot map more memory).
func Make[T Plain](a *Arena, n int) []T {
	s, _ := makeSlice[T](a, n, true)
	return s
}

// MakeDirty is Make without the clear: s[dirty:] is zero (fresh memory,
// or the Go heap's), s[:dirty] holds what the memory held when the arena
// handed it out before (it was given back by Release or Trim). For a
// caller that clears only what it must, where it suits it: Make clears in
// the calling goroutine, under the arena's lock. A partitioning
// contraction writes its output at an upper bound (2x 40M entries on the
// 5M-node synthetic graph's dense levels) and needs only half of it zero:
// cleared by the workers, chunk by chunk, just before they write there,
// matching and contracting a dense level of 4M entries in memory given
// back took 0.91x the time. Clearing memory that is already zero is no
// saving: on these virtual machines the first touch of a page, populated
// or not, costs microseconds (clearing every chunk whole cleared 7.5 GB
// at 1 GB/s in that run).
func MakeDirty[T Plain](a *Arena, n int) (s []T, dirty int) {
	return makeSlice[T](a, n, false)
}

// makeSlice is Make (zero) or MakeDirty.
func makeSlice[T Plain](a *Arena, n int, zero bool) ([]T, int) {
	var z T
	elem := int(unsafe.Sizeof(z))
	if a == nil || n <= 0 {
		return make([]T, n), 0
	}
	p, dirty := a.alloc(n*elem, zero)
	if p == nil {
		return make([]T, n), 0
	}
	return unsafe.Slice((*T)(p), n), (dirty + elem - 1) / elem
}

// alloc returns size bytes aligned to align, or nil, and how many of its
// first bytes may be non-zero: none if zero (it clears them), else those
// the arena handed out before.
func (a *Arena) alloc(size int, zero bool) (unsafe.Pointer, int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.freed {
		panic("arena: allocation after Free")
	}
	start := (a.off + align - 1) &^ (align - 1)
	if start+size > len(a.cur) {
		if !a.grow(size + align) {
			return nil, 0
		}
		start = 0
	}
	end := start + size
	if end > a.ready {
		// Populate ahead in steps: one system call for many arrays.
		to := min(len(a.cur), (max(end, a.ready+populateStep)+pageSize-1)&^(pageSize-1))
		if !a.huge {
			populate(a.cur[a.ready:to])
		}
		a.ready = to
	}
	dirty := 0
	if start < a.dirty {
		dirty = min(end, a.dirty) - start
		if zero {
			clear(a.cur[start : start+dirty])
			dirty = 0
		}
	}
	a.off = end
	a.handed += int64(size)
	return unsafe.Pointer(&a.cur[start]), dirty
}

// Trim gives the elements of s past its first n back to a, if s is the
// latest slice a handed out, and returns s[:n:n]. The memory given back
// is handed out again by the next Make calls, zeroed there (a memory
// clear, several times faster on these virtual machines than faulting in
// fresh pages: a huge page's first touch costs about 7 GB/s, a clear of
// memory already in place 30-50 GB/s). It suits an array written at an
// upper bound of its size and then cut to what it used. With a nil a, or
// s not the latest, only the slice is cut.
func Trim[T Plain](a *Arena, s []T, n int) []T {
	full := cap(s)
	s = s[:n:n]
	if a == nil || full == 0 {
		return s
	}
	var z T
	size := int(unsafe.Sizeof(z))
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.freed || len(a.cur) == 0 {
		return s
	}
	base := uintptr(unsafe.Pointer(&a.cur[0]))
	p := uintptr(unsafe.Pointer(unsafe.SliceData(s)))
	if p < base || p >= base+uintptr(len(a.cur)) || int(p-base)+full*size != a.off {
		return s // not from cur, or not the latest
	}
	end := int(p-base) + n*size
	a.dirty = max(a.dirty, a.off)
	a.handed -= int64(a.off - end)
	a.off = end
	return s
}

// Discard gives the whole pages inside s, an array a handed out that is no
// longer used (nor will be: its contents are lost), back to the system,
// while the arrays around it stay in use: a large array dead long before
// the arena's end. Its addresses are not handed out again. It does nothing
// on a nil arena or where s is not a's (an array from the Go heap).
func Discard[T Plain](a *Arena, s []T) {
	if a == nil || len(s) == 0 {
		return
	}
	var z T
	p := uintptr(unsafe.Pointer(unsafe.SliceData(s)))
	end := p + uintptr(len(s))*unsafe.Sizeof(z)
	lo := (p + uintptr(pageSize) - 1) &^ uintptr(pageSize-1)
	hi := end &^ uintptr(pageSize-1)
	if lo >= hi {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.freed {
		return
	}
	for _, r := range a.regions {
		base := uintptr(unsafe.Pointer(unsafe.SliceData(r)))
		if p >= base && end <= base+uintptr(len(r)) {
			discard(r[lo-base : hi-base])
			return
		}
	}
}

// A Mark is a point in an arena's allocations (Arena.Mark).
type Mark struct {
	region, off, ready int
	handed             int64
	huge               bool
}

// Mark returns the point the arena's allocations have reached, for
// Release. On a nil arena it returns the zero Mark.
func (a *Arena) Mark() Mark {
	if a == nil {
		return Mark{}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return Mark{region: len(a.regions) - 1, off: a.off, ready: a.ready, handed: a.handed, huge: a.huge}
}

// Release gives back every array handed out since m (a's Mark): they must
// no longer be used, by any goroutine, so it suits an arena that one
// computation has to itself, marked before a step whose temporaries are
// then dropped together. Regions mapped since m are unmapped (their pages
// return to the system); the rest of the memory is handed out again,
// zeroed, by the next Make calls (see Trim). Marks nest: a Release undoes
// the Marks taken after its own. On a nil arena it does nothing.
func (a *Arena) Release(m Mark) {
	if a == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.freed || m.region < 0 || m.region >= len(a.regions) {
		return
	}
	if m.region < len(a.regions)-1 {
		for _, r := range a.regions[m.region+1:] {
			unmapRegion(r)
		}
		a.regions = a.regions[:m.region+1]
		// Left for a larger region after m: anything past m.off may
		// have been handed out since, and at least m.ready is populated.
		a.cur, a.ready, a.dirty, a.huge = a.regions[m.region], m.ready, len(a.regions[m.region]), m.huge
	} else {
		a.dirty = max(a.dirty, a.off)
	}
	a.off, a.handed = m.off, m.handed
}

// Bytes returns the bytes handed out so far (array sizes, without
// alignment).
func (a *Arena) Bytes() int64 {
	if a == nil {
		return 0
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.handed
}

// Free unmaps the arena's memory: every slice it handed out becomes
// invalid. Free on a nil arena does nothing; a second Free does nothing.
func (a *Arena) Free() {
	if a == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.freed {
		return
	}
	a.freed = true
	for _, m := range a.regions {
		unmapRegion(m)
	}
	a.regions, a.cur = nil, nil
}

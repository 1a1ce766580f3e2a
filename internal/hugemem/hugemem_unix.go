//go:build linux

// Package hugemem allocates large read-mostly arrays (graphs, features)
// in anonymous memory advised for transparent huge pages, which makes random
// access 1.7-2x faster on these machines than 4 KiB pages. (File mappings
// stay on 4 KiB pages where transparent huge pages cover anonymous memory
// only, so hot arrays are copied here instead.)
package hugemem

import (
	"math"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/graphmill/graphmill/internal/arena"
)

// Alloc returns a zeroed slice of n elements, every page already
// resident (callers write all of it), in an anonymous mapping
// advised for transparent huge pages (outside the Go heap, so the garbage
// collector neither scans nor counts it), and a function that unmaps it.
// It falls back to make when the mapping fails.
func Alloc[T any](n int) ([]T, func()) {
	s, free := AllocLazy[T](n)
	Populate(s, 4)
	return s, free
}

// AllocLazy is Alloc without faulting the pages in: for a caller that
// faults them in itself (Populate) while it does other work.
func AllocLazy[T any](n int) ([]T, func()) {
	var z T
	size := n * int(unsafe.Sizeof(z))
	if size == 0 {
		return make([]T, n), func() {}
	}
	m, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		return make([]T, n), func() {}
	}
	_ = unix.Madvise(m, unix.MADV_HUGEPAGE)
	return unsafe.Slice((*T)(unsafe.Pointer(&m[0])), n), func() { _ = unix.Munmap(m) }
}

// Populate faults in every page of s, memory from AllocLazy, with
// workers goroutines on pieces of it taken front to back: with one, the
// pages come in in order, ahead of a writer that follows (pages it
// reaches first it faults in itself).
func Populate[T any](s []T, workers int) {
	var z T
	if len(s) > 0 {
		populate(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*int(unsafe.Sizeof(z))), workers)
	}
}

// populate faults every page of m (page-aligned) in now
// (MADV_POPULATE_WRITE, Linux 5.14+; older kernels refuse it and the
// pages fault in as they are written), in pieces taken in order by
// workers goroutines. Touched one at a time, a
// huge-page region took 2.3 s a GiB here (compaction on each fault) and
// 4 KiB pages 0.47 s; populated, 0.14 s on a quiet machine, and for 20 GiB
// 46 s in one call against 5.9 s in two pieces at once after other large
// runs had fragmented the free memory.
func populate(m []byte, workers int) {
	const piece = 64 << 20
	var wg sync.WaitGroup
	next := atomic.Int64{}
	for range max(workers, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				lo := int(next.Add(piece) - piece)
				if lo >= len(m) {
					return
				}
				_ = unix.Madvise(m[lo:min(lo+piece, len(m))], unix.MADV_POPULATE_WRITE)
			}
		}()
	}
	wg.Wait()
}

// hugePage is the size of a transparent huge page on x86-64 (and arm64
// with 4 KiB base pages).
const hugePage = 2 << 20

// Make returns make([]T, n, c) with the whole huge pages of its first n
// elements advised for transparent huge pages (MADV_HUGEPAGE on the Go
// heap's memory, which the garbage collector manages as usual): for large
// buffers that are allocated once, filled and then reused, such as a
// loader's minibatch arrays, whose pages then fault in 2 MiB at a time on
// first touch instead of 4 KiB. On these VMs a fresh page's first touch
// costs about 14 µs: a 26 MB buffer written page by page took 114 ms, 14
// ms in huge pages, and the first epoch of 'bench train --quick' took a
// third less CPU time. Only the first n elements are advised, so no page
// beyond what the caller fills is made resident, and at most the first
// arena.HugeMaxRegion bytes of it (the kernel compacts memory synchronously to
// fault in an advised huge page, which stalled in some runs of a 193 MB
// arena, internal/arena). Under a Go memory limit (debug.SetMemoryLimit,
// a memory-bounded run) it advises nothing: a freed buffer's range keeps
// the advice, and khugepaged may fill back in pages the scavenger returned
// to the system (what made Go 1.21.4 stop advising its heap), which a
// memory bound must not allow; without a bound that costs at most the
// advised bytes of buffers since freed.
func Make[T any](n, c int) []T {
	s := make([]T, n, c)
	if r := hugeRange(s); r != nil {
		_ = unix.Madvise(r, unix.MADV_HUGEPAGE)
	}
	return s
}

// hugeRange returns the whole huge pages of s, at most
// arena.HugeMaxRegion bytes of them (see Make), or nil where s spans
// less than two huge pages or a Go memory limit is set.
func hugeRange[T any](s []T) []byte {
	var z T
	size := uintptr(len(s)) * unsafe.Sizeof(z)
	if size < 2*hugePage || debug.SetMemoryLimit(-1) != math.MaxInt64 {
		return nil
	}
	base := unsafe.Pointer(unsafe.SliceData(s))
	p := uintptr(base)
	lo := (p + hugePage - 1) &^ (hugePage - 1)
	hi := min((p+size)&^(hugePage-1), lo+arena.HugeMaxRegion)
	return unsafe.Slice((*byte)(unsafe.Add(base, lo-p)), hi-lo)
}

// Table returns make([]T, n) for an array read at random for as long as
// its owner lives (a lookup table such as the sampler's relabelling
// array), in huge pages where it can: Make's advice, then a synchronous
// collapse of its pages into huge ones (MADV_COLLAPSE, Linux 6.1+; older
// kernels keep the advice alone). The advice only takes effect on pages
// not yet faulted in: memory the Go heap recycles from a freed buffer
// keeps the 4 KiB pages it had, and a table there misses the TLB on most
// lookups (a sampler made after another was dropped did). Fresh memory
// has nothing to collapse (the call fails, harmlessly) and takes huge
// pages as they fault in. A collapse of 40 MB costs a few milliseconds,
// once.
func Table[T any](n int) []T {
	s := Make[T](n, n)
	if r := hugeRange(s); r != nil {
		_ = unix.Madvise(r, unix.MADV_COLLAPSE)
	}
	return s
}

//go:build linux

package arena

import (
	"bytes"
	"os"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

const supported = true

var pageSize = unix.Getpagesize()

// noPopulate is set once the kernel refuses MADV_POPULATE_WRITE (Linux
// before 5.14): pages are then faulted in on first touch, as on the heap.
var noPopulate atomic.Bool

// hugePages reports whether the kernel backs memory advised
// MADV_HUGEPAGE with transparent huge pages ("always" or "madvise").
var hugePages = func() bool {
	b, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	return err == nil && (bytes.Contains(b, []byte("[always]")) || bytes.Contains(b, []byte("[madvise]")))
}()

// mapRegion reserves size bytes of private anonymous memory (address space
// only: nothing is committed until populated or touched), in huge pages
// where the kernel has them.
func mapRegion(size int) ([]byte, error) {
	m, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE|unix.MAP_NORESERVE)
	if err == nil && hugePages {
		_ = unix.Madvise(m, unix.MADV_HUGEPAGE)
	}
	return m, err
}

func unmapRegion(m []byte) { _ = unix.Munmap(m) }

// populate faults in the pages of b (page-aligned) with one system call.
// Over huge pages it does nothing: a fault maps 2 MiB, and faulting in
// only what is touched costs less than populating the upper bounds that
// contraction allocates (measured on wave: 5-10 % of partitioning).
func populate(b []byte) {
	if len(b) == 0 || hugePages || noPopulate.Load() {
		return
	}
	if err := unix.Madvise(b, unix.MADV_POPULATE_WRITE); err == unix.EINVAL {
		noPopulate.Store(true)
	}
}

//go:build linux

package arena

import (
	"sync/atomic"

	"golang.org/x/sys/unix"
)

const supported = true

var pageSize = unix.Getpagesize()

// noPopulate is set once the kernel refuses MADV_POPULATE_WRITE (Linux
// before 5.14): pages are then faulted in on first touch, as on the heap.
var noPopulate atomic.Bool

// mapRegion reserves size bytes of private anonymous memory (address space
// only: nothing is committed until populated or touched).
func mapRegion(size int) ([]byte, error) {
	return unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE|unix.MAP_NORESERVE)
}

func unmapRegion(m []byte) { _ = unix.Munmap(m) }

// populate faults in the pages of b (page-aligned) with one system call.
func populate(b []byte) {
	if len(b) == 0 || noPopulate.Load() {
		return
	}
	if err := unix.Madvise(b, unix.MADV_POPULATE_WRITE); err == unix.EINVAL {
		noPopulate.Store(true)
	}
}

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
// only: nothing is committed until populated or touched). It reports
// whether the region was advised into huge pages (small regions, where the
// kernel has them), which are then faulted in on touch, 2 MiB at a time,
// rather than populated.
func mapRegion(size int) ([]byte, bool, error) {
	m, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE|unix.MAP_NORESERVE)
	if err != nil {
		return nil, false, err
	}
	huge := hugePages && size <= HugeMaxRegion && unix.Madvise(m, unix.MADV_HUGEPAGE) == nil
	return m, huge, nil
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

// discard gives the pages of b (page-aligned) back to the system: they
// read as zeros if touched again.
func discard(b []byte) { _ = unix.Madvise(b, unix.MADV_DONTNEED) }

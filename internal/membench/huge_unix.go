//go:build linux

package membench

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// AllocHuge returns a zeroed slice of n elements in an anonymous mapping
// advised for transparent huge pages (outside the Go heap, so the garbage
// collector neither scans nor counts it), and a function that unmaps it.
// It falls back to make when the mapping fails.
func AllocHuge[T any](n int) ([]T, func()) {
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

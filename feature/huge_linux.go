//go:build linux

package feature

import "golang.org/x/sys/unix"

// allocHuge returns n zeroed bytes of anonymous memory advised for
// transparent huge pages (random row reads then miss the TLB far less),
// outside the Go heap, and the function that releases them.
func allocHuge(n int) ([]byte, func()) {
	if n == 0 {
		return nil, func() {}
	}
	m, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		return make([]byte, n), func() {}
	}
	_ = unix.Madvise(m, unix.MADV_HUGEPAGE)
	return m, func() { _ = unix.Munmap(m) }
}

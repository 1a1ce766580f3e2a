//go:build unix

package feature

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// dropMapped releases the process's resident pages wholly inside b, a
// part of a read-only file mapping (the file's pages stay in the page
// cache; a later read faults them back in). b must not be anonymous
// memory, whose pages this would zero.
func dropMapped(b []byte) {
	if len(b) == 0 {
		return
	}
	const page = 4096
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	lo := (p + page - 1) &^ (page - 1)
	hi := (p + uintptr(len(b))) &^ (page - 1)
	if hi > lo {
		_ = unix.Madvise(b[lo-p:hi-p], unix.MADV_DONTNEED)
	}
}

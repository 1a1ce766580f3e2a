package dataset

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// resident reports which of the n pages from page first of the array's
// file are in the page cache, into vec (mincore on the array's mapping,
// which starts at the file's first byte: its data is DataOffset into it).
// False everywhere when the kernel does not say.
func resident(data []byte, dataOffset, first int64, vec []byte) {
	p := unsafe.Add(unsafe.Pointer(unsafe.SliceData(data)), first*pageSize-dataOffset)
	if _, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(p), uintptr(len(vec))*pageSize, uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
		clear(vec)
	}
}

//go:build linux

package sample

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// adviseHuge asks for transparent huge pages on the 2 MiB-aligned interior
// of a freshly allocated, not yet touched table: the relabelling table is
// probed at random, and with 4 KiB pages most probes would also miss the
// TLB. The advice is only a hint; failure is harmless.
func adviseHuge(t []uint64) {
	const huge = 2 << 20
	if len(t)*8 < 2*huge {
		return
	}
	start := uintptr(unsafe.Pointer(&t[0]))
	end := start + uintptr(len(t))*8
	a := (start + huge - 1) &^ (huge - 1)
	b := end &^ (huge - 1)
	if b <= a {
		return
	}
	p := unsafe.Add(unsafe.Pointer(&t[0]), a-start)
	_ = unix.Madvise(unsafe.Slice((*byte)(p), b-a), unix.MADV_HUGEPAGE)
}

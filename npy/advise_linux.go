//go:build linux

package npy

import "golang.org/x/sys/unix"

// adviseHuge asks for transparent huge pages (Linux only; a hint).
func adviseHuge(m []byte) {
	if len(m) > 0 {
		_ = unix.Madvise(m, unix.MADV_HUGEPAGE)
	}
}

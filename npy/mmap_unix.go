//go:build unix

package npy

import (
	"os"

	"golang.org/x/sys/unix"
)

func mapFile(f *os.File, size int) ([]byte, error) {
	return unix.Mmap(int(f.Fd()), 0, size, unix.PROT_READ, unix.MAP_SHARED)
}

func unmap(m []byte) error { return unix.Munmap(m) }

func dropResident(m []byte) {
	if len(m) > 0 {
		_ = unix.Madvise(m, unix.MADV_DONTNEED)
	}
}

func adviseRandom(m []byte) {
	if len(m) > 0 {
		_ = unix.Madvise(m, unix.MADV_RANDOM)
	}
}

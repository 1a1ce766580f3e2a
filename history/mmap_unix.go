//go:build unix

package history

import (
	"os"

	"golang.org/x/sys/unix"
)

// mapShared maps the first size bytes of f for reading and writing,
// shared with the file.
func mapShared(f *os.File, size int) ([]byte, error) {
	return unix.Mmap(int(f.Fd()), 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
}

func unmapShared(m []byte) error { return unix.Munmap(m) }

//go:build !unix

package npy

import (
	"io"
	"os"
)

// mapFile reads the file into memory where mmap is unavailable.
func mapFile(f *os.File, size int) ([]byte, error) {
	b := make([]byte, size)
	_, err := io.ReadFull(io.NewSectionReader(f, 0, int64(size)), b)
	return b, err
}

func unmap([]byte) error  { return nil }
func adviseHuge([]byte)   {}
func adviseRandom([]byte) {}
func dropResident([]byte) {}

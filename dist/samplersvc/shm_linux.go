package samplersvc

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/sys/unix"
)

// openSegment opens and maps a client's shared file (see shm.go).
func openSegment(path string, size uint64, token []byte) (*segment, error) {
	if len(token) != shmTokenLen {
		return nil, fmt.Errorf("shared-memory token of %d bytes, want %d", len(token), shmTokenLen)
	}
	if size < 2*shmPage || size > shmMaxSize {
		return nil, fmt.Errorf("shared-memory size %d out of range", size)
	}
	if !strings.HasPrefix(path, "/proc/") && !strings.HasPrefix(path, "/dev/shm/") {
		return nil, fmt.Errorf("shared-memory path %q: want /proc/PID/fd/N or /dev/shm/NAME", path)
	}
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	var st unix.Stat_t
	var fs unix.Statfs_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, err
	}
	if err := unix.Fstatfs(fd, &fs); err != nil {
		unix.Close(fd)
		return nil, err
	}
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		err = errors.New("not a regular file")
	case fs.Type != unix.TMPFS_MAGIC:
		err = errors.New("not on a tmpfs")
	case st.Nlink != 0:
		err = errors.New("still linked (the client unlinks it before asking)")
	case uint64(st.Size) != size:
		err = fmt.Errorf("%d bytes, announced %d", st.Size, size)
	}
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("shared-memory file %s: %w", path, err)
	}
	mem, err := unix.Mmap(fd, 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	if subtle.ConstantTimeCompare(mem[:shmTokenLen], token) != 1 {
		unix.Munmap(mem)
		unix.Close(fd)
		return nil, fmt.Errorf("shared-memory file %s: token mismatch (another machine's file?)", path)
	}
	return &segment{mem: mem, fd: fd, id: fileID{uint64(st.Dev), st.Ino}}, nil
}

// fileID identifies a file (device and inode).
type fileID struct{ dev, ino uint64 }

// fileIdentity is the identity of the file at path (following links:
// /proc/PID/fd/N names the open file).
func fileIdentity(path string) (fileID, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return fileID{}, err
	}
	return fileID{uint64(st.Dev), st.Ino}, nil
}

// reserve backs [off, off+n) with memory, so that writing it cannot fault
// (a full tmpfs fails here instead of with SIGBUS).
func (s *segment) reserve(off, n int) error {
	return unix.Fallocate(s.fd, 0, int64(off), int64(n))
}

// close unmaps the segment.
func (s *segment) close() {
	if s.mem == nil {
		return
	}
	unix.Munmap(s.mem)
	unix.Close(s.fd)
	s.mem, s.fd = nil, -1
}

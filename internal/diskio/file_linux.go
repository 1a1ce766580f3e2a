//go:build linux

package diskio

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

type file struct{ fd int }

// openFile opens path read-only, with O_DIRECT when direct and the
// filesystem accepts it (checked by opening and by one aligned read).
func openFile(path string, direct bool) (f file, isDirect bool, size int64, err error) {
	const flags = unix.O_RDONLY | unix.O_CLOEXEC
	fd := -1
	if direct {
		fd, err = unix.Open(path, flags|unix.O_DIRECT, 0)
		switch {
		case err == nil && directWorks(fd):
			isDirect = true
		case err == nil:
			unix.Close(fd)
			fd = -1
		case !errors.Is(err, unix.EINVAL):
			return f, false, 0, &os.PathError{Op: "open", Path: path, Err: err}
		}
	}
	if fd < 0 {
		if fd, err = unix.Open(path, flags, 0); err != nil {
			return f, false, 0, &os.PathError{Op: "open", Path: path, Err: err}
		}
		// Buffered reads are batches of chosen blocks: no readahead
		// window around each.
		_ = unix.Fadvise(fd, 0, 0, unix.FADV_RANDOM)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return f, false, 0, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	return file{fd}, isDirect, st.Size, nil
}

// directWorks reports whether an aligned O_DIRECT read succeeds on fd: some
// filesystems accept the flag at open and refuse the reads.
func directWorks(fd int) bool {
	_, err := file{fd}.pread(AlignedBuf(DirectAlign), 0)
	return !errors.Is(err, unix.EINVAL)
}

func (f file) pread(b []byte, off int64) (int, error) {
	for {
		n, err := unix.Pread(f.fd, b, off)
		if err == unix.EINTR || err == unix.EAGAIN {
			continue
		}
		return n, err
	}
}

func (f file) close() error { return unix.Close(f.fd) }

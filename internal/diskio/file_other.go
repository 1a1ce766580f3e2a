//go:build !linux

package diskio

import (
	"context"
	"errors"
	"io"
	"os"
)

type file struct{ f *os.File }

// openFile opens path read-only; O_DIRECT does not exist here, so reads
// are always buffered.
func openFile(path string, _ bool) (file, bool, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return file{}, false, 0, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return file{}, false, 0, err
	}
	return file{f}, false, st.Size(), nil
}

func (f file) pread(b []byte, off int64) (int, error) {
	n, err := f.f.ReadAt(b, off)
	if errors.Is(err, io.EOF) {
		err = nil
	}
	return n, err
}

func (f file) close() error { return f.f.Close() }

// ring stands in for the io_uring ring, which exists only on Linux.
type ring struct{ broken bool }

func newRing(file, int) (*ring, error) { return nil, errNoUring }

func (*ring) run(context.Context, *Reader, []Req, int) error { return errNoUring }

func (*ring) close() {}

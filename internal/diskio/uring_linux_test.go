//go:build linux

package diskio

import (
	"context"
	"errors"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

func TestUringLayout(t *testing.T) {
	for _, tc := range []struct {
		name      string
		got, want uintptr
	}{
		{"sizeof io_uring_params", unsafe.Sizeof(uringParams{}), 120},
		{"sizeof io_sqring_offsets", unsafe.Sizeof(sqringOffsets{}), 40},
		{"sizeof io_cqring_offsets", unsafe.Sizeof(cqringOffsets{}), 40},
		{"sizeof io_uring_sqe", unsafe.Sizeof(uringSQE{}), 64},
		{"sizeof io_uring_cqe", unsafe.Sizeof(uringCQE{}), 16},
		{"params.features", unsafe.Offsetof(uringParams{}.features), 20},
		{"params.sq_off", unsafe.Offsetof(uringParams{}.sqOff), 40},
		{"params.cq_off", unsafe.Offsetof(uringParams{}.cqOff), 80},
		{"sq_off.array", unsafe.Offsetof(sqringOffsets{}.array), 24},
		{"cq_off.cqes", unsafe.Offsetof(cqringOffsets{}.cqes), 20},
		{"sqe.fd", unsafe.Offsetof(uringSQE{}.fd), 4},
		{"sqe.off", unsafe.Offsetof(uringSQE{}.off), 8},
		{"sqe.addr", unsafe.Offsetof(uringSQE{}.addr), 16},
		{"sqe.len", unsafe.Offsetof(uringSQE{}.len), 24},
		{"sqe.user_data", unsafe.Offsetof(uringSQE{}.userData), 32},
		{"sqe.buf_index", unsafe.Offsetof(uringSQE{}.bufIndex), 40},
		{"sqe.addr3", unsafe.Offsetof(uringSQE{}.addr3), 48},
		{"cqe.res", unsafe.Offsetof(uringCQE{}.res), 8},
	} {
		if tc.got != tc.want {
			t.Errorf("%s = %d, want %d", tc.name, tc.got, tc.want)
		}
	}
}

// TestUringFallback simulates a kernel where io_uring_setup fails.
func TestUringFallback(t *testing.T) {
	path, data := writeTemp(t, testSize)
	old := uringSetup
	defer func() { uringSetup = old }()
	for _, errno := range []unix.Errno{unix.ENOSYS, unix.EPERM} {
		uringSetup = func(uint32, *uringParams) (int, error) { return -1, errno }
		r, err := Open(path, Options{Backend: "auto"})
		if err != nil {
			t.Fatal(err)
		}
		if r.Backend() != "pread" {
			t.Fatalf("%v: auto chose %q", errno, r.Backend())
		}
		reqs := []Req{{Off: 10, Buf: make([]byte, 100)}}
		if err := r.ReadBatch(context.Background(), reqs); err != nil {
			t.Fatal(err)
		}
		checkReqs(t, reqs, data)
		r.Close()
		if _, err := Open(path, Options{Backend: "uring"}); !errors.Is(err, errno) {
			t.Fatalf("%v: uring backend: err = %v", errno, err)
		}
	}
}

// TestReadError reads a directory: the kernel fails each read with EISDIR,
// and the error names the path and offset.
func TestReadError(t *testing.T) {
	dir := t.TempDir()
	for _, backend := range []string{"pread", "uring"} {
		t.Run(backend, func(t *testing.T) {
			r, err := Open(dir, Options{Backend: backend})
			if err != nil {
				t.Skip(err)
			}
			defer r.Close()
			if r.Size() < 2 {
				t.Skip("directory size", r.Size())
			}
			reqs := []Req{{Off: 1, Buf: make([]byte, 1)}}
			err = r.ReadBatch(context.Background(), reqs)
			if !errors.Is(err, unix.EISDIR) || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "offset 1") {
				t.Fatalf("err = %v, want EISDIR naming %s at offset 1", err, dir)
			}
		})
	}
}

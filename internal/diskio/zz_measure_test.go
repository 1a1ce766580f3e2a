package diskio

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/graphmill/graphmill/internal/cputime"
	"golang.org/x/sys/unix"
)

func readBytesIO() int64 {
	b, _ := os.ReadFile("/proc/self/io")
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "read_bytes: "); ok {
			var n int64
			for _, c := range v {
				n = n*10 + int64(c-'0')
			}
			return n
		}
	}
	return 0
}

func TestZZMeasure(t *testing.T) {
	path := os.Getenv("DISKIO_MEASURE")
	if path == "" {
		t.Skip()
	}
	drop := func() {
		fd, _ := unix.Open(path, unix.O_RDONLY, 0)
		unix.Fadvise(fd, 0, 0, unix.FADV_DONTNEED)
		unix.Close(fd)
	}
	for _, be := range []string{"uring", "pread"} {
		r, err := Open(path, Options{Depth: 64, Direct: true, Backend: be})
		if err != nil {
			t.Fatal(err)
		}
		run := func(name string, f func() (float64, error)) {
			drop()
			c0, _ := cputime.Process()
			io0 := readBytesIO()
			t0 := time.Now()
			v, err := f()
			wall := time.Since(t0)
			c1, _ := cputime.Process()
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%-8s direct=%v %-22s %12.0f   cpu %.2f cores  (%.0f us CPU/op-unit)  device read %d MB in %.1fs",
				r.Backend(), r.Direct(), name, v, (c1-c0).Seconds()/wall.Seconds(), 0.0, (readBytesIO()-io0)>>20, wall.Seconds())
		}
		ctx := context.Background()
		run("random 4K depth 1 r/s", func() (float64, error) { return RandomReadRate(ctx, r, 1, 4096, 4*time.Second) })
		run("random 4K depth 64 r/s", func() (float64, error) { return RandomReadRate(ctx, r, 64, 4096, 5*time.Second) })
		run("seq 4MiB depth 4 B/s", func() (float64, error) { return SequentialRate(ctx, r, 4<<20, 4, 0) })
		r.Close()
	}
}

package diskio

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"
)

const testSize = 3<<20 + 1234 // not a multiple of the page size

func writeTemp(t testing.TB, size int) (string, []byte) {
	t.Helper()
	data := make([]byte, size)
	rng := rand.NewChaCha8([32]byte{1})
	_, _ = rng.Read(data)
	path := filepath.Join(t.TempDir(), "data.bin")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path, data
}

type config struct {
	name    string
	backend string
	direct  bool
}

var configs = []config{
	{"pread", "pread", false},
	{"pread-direct", "pread", true},
	{"uring", "uring", false},
	{"uring-direct", "uring", true},
}

func openTest(t *testing.T, path string, c config, depth int) *Reader {
	t.Helper()
	r, err := Open(path, Options{Depth: depth, Direct: c.direct, Backend: c.backend})
	if err != nil {
		if c.backend == "uring" {
			t.Skipf("io_uring unavailable: %v", err)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	want := map[string]string{"pread": "pread", "uring": "io_uring"}[c.backend]
	if r.Backend() != want {
		t.Fatalf("Backend() = %q, want %q", r.Backend(), want)
	}
	if c.direct != r.Direct() {
		t.Logf("Direct() = %v (filesystem or platform refused O_DIRECT)", r.Direct())
	}
	if r.Size() != int64(testSize) {
		t.Fatalf("Size() = %d, want %d", r.Size(), testSize)
	}
	return r
}

// randomReqs returns n requests of up to 4 aligned blocks (unaligned
// offsets and lengths when align is 1) anywhere in the file, some past EOF.
func randomReqs(rng *rand.Rand, n, align int, size int64) []Req {
	reqs := make([]Req, n)
	for i := range reqs {
		blk := int64(align)
		if align == 1 {
			blk = int64(1 + rng.IntN(8192))
		}
		reqs[i].Off = rng.Int64N(size/int64(align)+2) * int64(align)
		reqs[i].Buf = AlignedBuf(int(blk) * (1 + rng.IntN(4)))
	}
	return reqs
}

func checkReqs(t *testing.T, reqs []Req, data []byte) {
	t.Helper()
	size := int64(len(data))
	for i, q := range reqs {
		want := max(0, min(int64(len(q.Buf)), size-q.Off))
		if int64(q.N) != want {
			t.Fatalf("request %d (off %d len %d): N = %d, want %d", i, q.Off, len(q.Buf), q.N, want)
		}
		if q.N > 0 && !bytes.Equal(q.Buf[:q.N], data[q.Off:q.Off+int64(q.N)]) {
			t.Fatalf("request %d (off %d len %d): content differs from the file", i, q.Off, len(q.Buf))
		}
	}
}

func TestReadBatch(t *testing.T) {
	path, data := writeTemp(t, testSize)
	for _, c := range configs {
		t.Run(c.name, func(t *testing.T) {
			for _, tc := range []struct {
				name    string
				depth   int
				n       int
				maxRead int
			}{
				{"depth1", 1, 50, 0},
				{"depth64", 64, 500, 0},
				{"depth3-many", 3, 300, 0},
				{"short-reads", 16, 200, 8192}, // continuation of short reads
			} {
				t.Run(tc.name, func(t *testing.T) {
					r := openTest(t, path, c, tc.depth)
					if tc.maxRead > 0 {
						old := maxRead
						maxRead = tc.maxRead
						if r.Align() == 1 {
							maxRead = 1000 // unaligned continuations
						}
						defer func() { maxRead = old }()
					}
					reqs := randomReqs(rand.New(rand.NewPCG(uint64(tc.n), 2)), tc.n, r.Align(), r.Size())
					if err := r.ReadBatch(context.Background(), reqs); err != nil {
						t.Fatal(err)
					}
					checkReqs(t, reqs, data)
					var bytes int64
					for _, q := range reqs {
						bytes += int64(q.N)
					}
					if st := r.Stats(); st != (Stats{Reads: int64(tc.n), Bytes: bytes}) {
						t.Fatalf("Stats() = %+v, want {Reads:%d Bytes:%d}", st, tc.n, bytes)
					}
				})
			}
		})
	}
}

func TestEOF(t *testing.T) {
	path, data := writeTemp(t, testSize)
	for _, c := range configs {
		t.Run(c.name, func(t *testing.T) {
			r := openTest(t, path, c, 8)
			a := int64(r.Align())
			if a == 1 {
				a = 4096
			}
			last := int64(testSize) / a * a
			reqs := []Req{
				{Off: last, Buf: AlignedBuf(int(a))},                        // last partial block
				{Off: last - a, Buf: AlignedBuf(int(4 * a))},                // crosses EOF
				{Off: last + a, Buf: AlignedBuf(int(a))},                    // past EOF
				{Off: 0, Buf: AlignedBuf(0)},                                // empty
				{Off: last - 2*a, Buf: AlignedBuf(int(2 * a))},              // ends one block before the last
				{Off: int64(testSize) / a * a, Buf: AlignedBuf(int(2 * a))}, // same as the first, twice the length
			}
			if err := r.ReadBatch(context.Background(), reqs); err != nil {
				t.Fatal(err)
			}
			checkReqs(t, reqs, data)
			if reqs[0].N != testSize%int(a) || reqs[2].N != 0 {
				t.Fatalf("N = %d, %d; want %d, 0", reqs[0].N, reqs[2].N, testSize%int(a))
			}
		})
	}
}

func TestMisaligned(t *testing.T) {
	path, _ := writeTemp(t, testSize)
	for _, c := range configs {
		if !c.direct {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			r := openTest(t, path, c, 8)
			if !r.Direct() {
				t.Skip("O_DIRECT refused here")
			}
			if r.Align() != 4096 {
				t.Fatalf("Align() = %d, want 4096", r.Align())
			}
			buf := AlignedBuf(3 * 4096)
			for _, q := range []Req{
				{Off: 512, Buf: buf[:4096]},
				{Off: 4096, Buf: buf[:4000]},
				{Off: 4096, Buf: buf[1 : 4096+1]},
				{Off: -4096, Buf: buf[:4096]},
			} {
				reqs := []Req{{Off: 0, Buf: AlignedBuf(4096)}, q}
				err := r.ReadBatch(context.Background(), reqs)
				if err == nil || !strings.Contains(err.Error(), path) {
					t.Fatalf("off %d len %d: err = %v, want an error naming %s", q.Off, len(q.Buf), err, path)
				}
				if st := r.Stats(); st.Reads != 0 {
					t.Fatalf("a rejected batch read %d requests", st.Reads)
				}
			}
		})
	}
}

// countdownCtx is cancelled after its Err method has been called n times,
// which stops a batch part way at a repeatable point.
type countdownCtx struct {
	context.Context
	n atomic.Int64
}

func (c *countdownCtx) Err() error {
	if c.n.Add(-1) < 0 {
		return context.Canceled
	}
	return nil
}

func TestCancel(t *testing.T) {
	path, data := writeTemp(t, testSize)
	for _, c := range configs {
		t.Run(c.name, func(t *testing.T) {
			r := openTest(t, path, c, 16)
			rng := rand.New(rand.NewPCG(3, 4))
			reqs := randomReqs(rng, 2000, r.Align(), r.Size())

			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			if err := r.ReadBatch(ctx, reqs); !errors.Is(err, context.Canceled) {
				t.Fatalf("cancelled before: err = %v", err)
			}
			if st := r.Stats(); st.Reads != 0 {
				t.Fatalf("cancelled before: %d reads", st.Reads)
			}

			cd := &countdownCtx{Context: context.Background()}
			cd.n.Store(5)
			if err := r.ReadBatch(cd, reqs); !errors.Is(err, context.Canceled) {
				t.Fatalf("cancelled during: err = %v", err)
			}
			st := r.Stats()
			if st.Reads == 0 || st.Reads >= int64(len(reqs)) {
				t.Fatalf("cancelled during: %d of %d reads done", st.Reads, len(reqs))
			}
			var done []Req
			for _, q := range reqs {
				if q.N > 0 {
					done = append(done, q)
				}
			}
			checkReqs(t, done, data) // what completed is whole and right

			tctx, tcancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
			defer tcancel()
			for start := time.Now(); ; {
				err := r.ReadBatch(tctx, reqs)
				if err != nil {
					if !errors.Is(err, context.DeadlineExceeded) {
						t.Fatalf("timeout: err = %v", err)
					}
					break
				}
				if time.Since(start) > 10*time.Second {
					t.Fatal("ReadBatch kept succeeding after the deadline")
				}
			}
		})
	}
}

func TestConcurrent(t *testing.T) {
	path, data := writeTemp(t, testSize)
	for _, c := range configs {
		t.Run(c.name, func(t *testing.T) {
			r := openTest(t, path, c, 8)
			const workers, batches, n = 6, 10, 40
			var wg sync.WaitGroup
			errs := make(chan error, workers)
			results := make([][]Req, workers*batches)
			for w := range workers {
				wg.Go(func() {
					rng := rand.New(rand.NewPCG(uint64(w), 5))
					for b := range batches {
						reqs := randomReqs(rng, n, r.Align(), r.Size())
						if err := r.ReadBatch(context.Background(), reqs); err != nil {
							errs <- err
							return
						}
						results[w*batches+b] = reqs
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			for _, reqs := range results {
				checkReqs(t, reqs, data)
			}
			if st := r.Stats(); st.Reads != workers*batches*n {
				t.Fatalf("Stats().Reads = %d, want %d", st.Reads, workers*batches*n)
			}
		})
	}
}

func TestOpenErrors(t *testing.T) {
	path, _ := writeTemp(t, testSize)
	if _, err := Open(path, Options{Backend: "aio"}); err == nil {
		t.Fatal("unknown backend accepted")
	}
	missing := filepath.Join(t.TempDir(), "missing")
	if _, err := Open(missing, Options{Direct: true}); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: err = %v", err)
	}
	r, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Depth() != 64 {
		t.Fatalf("default Depth() = %d", r.Depth())
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.ReadBatch(context.Background(), []Req{{Buf: make([]byte, 10)}}); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("read after Close: err = %v", err)
	}
}

func TestAlignedBuf(t *testing.T) {
	for _, n := range []int{0, 1, 4096, 12345} {
		b := AlignedBuf(n)
		if len(b) != n || cap(b) != n {
			t.Fatalf("AlignedBuf(%d): len %d cap %d", n, len(b), cap(b))
		}
		if n > 0 && addr(b)%DirectAlign != 0 {
			t.Fatalf("AlignedBuf(%d) at %#x", n, addr(b))
		}
	}
}

func TestRates(t *testing.T) {
	path, _ := writeTemp(t, testSize)
	for _, c := range configs {
		t.Run(c.name, func(t *testing.T) {
			r := openTest(t, path, c, 16)
			rate, err := RandomReadRate(context.Background(), r, 16, 4096, 20*time.Millisecond)
			if err != nil || rate <= 0 {
				t.Fatalf("RandomReadRate = %v, %v", rate, err)
			}
			before := r.Stats().Bytes
			bps, err := SequentialRate(context.Background(), r, 1<<20, 4, 0)
			if err != nil || bps <= 0 {
				t.Fatalf("SequentialRate = %v, %v", bps, err)
			}
			if got := r.Stats().Bytes - before; got != testSize {
				t.Fatalf("SequentialRate read %d bytes, want %d", got, testSize)
			}
			if _, err := RandomReadRate(context.Background(), r, 4, 100, time.Millisecond); r.Direct() && err == nil {
				t.Fatal("unaligned block size accepted with Direct")
			}
		})
	}
}

func BenchmarkRandom4K(b *testing.B) {
	path, _ := writeTemp(b, 64<<20)
	for _, backend := range []string{"pread", "uring"} {
		b.Run(backend, func(b *testing.B) {
			r, err := Open(path, Options{Depth: 64, Backend: backend})
			if err != nil {
				b.Skip(err)
			}
			defer r.Close()
			reqs := make([]Req, 256)
			for i := range reqs {
				reqs[i].Buf = AlignedBuf(4096)
			}
			blocks := r.Size() / 4096
			b.SetBytes(int64(len(reqs)) * 4096)
			for b.Loop() {
				for i := range reqs {
					reqs[i].Off = rand.Int64N(blocks) * 4096
				}
				if err := r.ReadBatch(context.Background(), reqs); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func addr(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }

package history

import (
	"math"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestPushPull(t *testing.T) {
	for _, c := range []struct {
		name string
		opts Options
		tol  float64
	}{
		{"f32-mem", Options{}, 0},
		{"f16-mem", Options{Half: true}, 1e-3},
		{"f32-file", Options{Path: "h.bin"}, 0},
		{"f16-file", Options{Half: true, Path: "h16.bin"}, 1e-3},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.opts.Path != "" {
				c.opts.Path = filepath.Join(t.TempDir(), c.opts.Path)
			}
			s, err := New(5000, 16, c.opts)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			ids := make([]int32, 2500)
			rows := make([]float32, 2500*16)
			for i := range ids {
				ids[i] = int32((i * 2 * 7) % 5000) // even rows only, scattered
				for j := 0; j < 16; j++ {
					rows[i*16+j] = float32(i) + float32(j)/16
				}
			}
			if err := s.Push(ids, rows); err != nil {
				t.Fatal(err)
			}
			out := make([]float32, len(rows))
			if err := s.Pull(ids, out); err != nil {
				t.Fatal(err)
			}
			for i := range out {
				if d := math.Abs(float64(out[i] - rows[i])); d > c.tol*math.Abs(float64(rows[i])) {
					t.Fatalf("value %d: pulled %g, pushed %g", i, out[i], rows[i])
				}
			}
			// Untouched rows stay zero.
			z := make([]float32, 16)
			if err := s.Pull([]int32{1}, z); err != nil || z[3] != 0 {
				t.Fatalf("row 1: %v %v", z, err)
			}
		})
	}
}

func TestBadInput(t *testing.T) {
	if _, err := New(10, 0, Options{}); err == nil {
		t.Fatal("zero width accepted")
	}
	s, _ := New(10, 4, Options{})
	if err := s.Pull([]int32{10}, make([]float32, 4)); err == nil || !strings.Contains(err.Error(), "id 10") {
		t.Fatalf("out of range: %v", err)
	}
	if err := s.Push([]int32{1}, make([]float32, 3)); err == nil {
		t.Fatal("short rows accepted")
	}
	if _, err := New(math.MaxInt32*8, 1<<20, Options{}); err == nil || !strings.Contains(err.Error(), "overflows") {
		t.Fatalf("a table past the address space: %v", err)
	}
}

// TestConcurrentPullPushDisjoint runs pulls and pushes of disjoint rows at
// once (the pipelined GAS pattern) under the race detector.
func TestConcurrentPullPushDisjoint(t *testing.T) {
	s, _ := New(1000, 8, Options{Workers: 2})
	a := make([]int32, 500)
	b := make([]int32, 500)
	for i := range a {
		a[i], b[i] = int32(i), int32(500+i)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); s.Push(b, make([]float32, 500*8)) }()
	for k := 0; k < 4; k++ {
		wg.Add(1)
		go func() { defer wg.Done(); s.Pull(a, make([]float32, 500*8)) }()
	}
	wg.Wait()
}

// BenchmarkPullPush moves the rows of GAS batches (16k random nodes of a
// 1M-node table, 256 wide: 1 GiB float32, 512 MiB float16; 32 batches in
// turn, so that their rows are not in cache) through Pull and Push on
// one worker.
func BenchmarkPullPush(b *testing.B) {
	const n, dim, batch, batches = 1 << 20, 256, 16 << 10, 32
	ids := make([]int32, batch*batches)
	x := uint64(1)
	for i := range ids {
		x = x*6364136223846793005 + 1442695040888963407
		ids[i] = int32(x >> 44) // [0, 1<<20)
	}
	rows := make([]float32, batch*dim)
	for _, half := range []bool{false, true} {
		s, err := New(n, dim, Options{Half: half, Workers: 1})
		if err != nil {
			b.Fatal(err)
		}
		for q := 0; q < batches; q++ { // fault the table's pages in
			if err := s.Push(ids[q*batch:(q+1)*batch], rows); err != nil {
				b.Fatal(err)
			}
		}
		name := map[bool]string{false: "f32", true: "f16"}[half]
		for _, op := range []string{"pull", "push"} {
			b.Run(name+"-"+op, func(b *testing.B) {
				b.SetBytes(int64(batch * dim * 4))
				for i := range b.N {
					q := ids[i%batches*batch:][:batch]
					var err error
					if op == "pull" {
						err = s.Pull(q, rows)
					} else {
						err = s.Push(q, rows)
					}
					if err != nil {
						b.Fatal(err)
					}
				}
			})
		}
		s.Close()
	}
}

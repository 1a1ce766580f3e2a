package feature

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/graphmill/graphmill/dataset"
	"github.com/graphmill/graphmill/dataset/builtin"
	"github.com/graphmill/graphmill/graph"
	"github.com/graphmill/graphmill/internal/rng"
)

func randomRows(n, dim int, seed uint64) []float32 {
	r := rng.New(seed)
	x := make([]float32, n*dim)
	for i := range x {
		x[i] = r.Normalish() * 3
	}
	return x
}

// encode returns x stored as dtype, and the float32 values a gather must
// return (x itself, or x rounded through the half format).
func encode(x []float32, dtype DType) ([]byte, []float32) {
	want := make([]float32, len(x))
	switch dtype {
	case Float32:
		b := make([]byte, 4*len(x))
		for i, f := range x {
			u := math.Float32bits(f)
			b[4*i], b[4*i+1], b[4*i+2], b[4*i+3] = byte(u), byte(u>>8), byte(u>>16), byte(u>>24)
		}
		return b, x
	}
	b := make([]byte, 2*len(x))
	for i, f := range x {
		var h uint16
		if dtype == Float16 {
			h = F32ToF16(f)
			want[i] = F16ToF32(h)
		} else {
			h = F32ToBF16(f)
			want[i] = BF16ToF32(h)
		}
		b[2*i], b[2*i+1] = byte(h), byte(h>>8)
	}
	return b, want
}

func TestGather(t *testing.T) {
	const n, dim = 5000, 37
	x := randomRows(n, dim, 1)
	r := rng.New(2)
	ids := make([]int32, 20000) // large enough to gather in parallel
	for i := range ids {
		ids[i] = int32(r.IntN(n))
	}
	order := make([]int32, n)
	for i := range order {
		order[i] = int32((i * 7) % n)
	}
	for _, dtype := range []DType{Float32, Float16, BFloat16} {
		data, want := encode(x, dtype)
		for _, opts := range []Options{
			{},
			{InMemory: true, Workers: 3},
			{CacheBytes: int64(n/10*dim*dtype.Size()) + 5, CacheOrder: order, Workers: 2},
			{CacheBytes: 1 << 40, CacheOrder: order, InMemory: true},
		} {
			t.Run(fmt.Sprintf("%v/mem=%v/cache=%d", dtype, opts.InMemory, opts.CacheBytes), func(t *testing.T) {
				st, err := New(data, dtype, n, dim, opts)
				if err != nil {
					t.Fatal(err)
				}
				defer st.Close()
				out := make([]float32, len(ids)*dim)
				if err := st.Gather(context.Background(), ids, out); err != nil {
					t.Fatal(err)
				}
				for i, v := range ids {
					if !slices.Equal(out[i*dim:(i+1)*dim], want[int(v)*dim:int(v+1)*dim]) {
						t.Fatalf("row %d (node %d) differs", i, v)
					}
				}
				cs := st.CacheStats()
				if opts.CacheBytes == 0 {
					if cs.Rows != 0 || cs.Hits != 0 {
						t.Fatalf("no cache configured but stats %+v", cs)
					}
					return
				}
				wantRows := min(n, int(opts.CacheBytes)/(dim*dtype.Size()))
				if cs.Rows != wantRows || cs.Clamped != (opts.CacheBytes > int64(n*dim*dtype.Size())) {
					t.Fatalf("cache stats %+v, want %d rows", cs, wantRows)
				}
				cached := map[int32]bool{}
				for _, v := range order[:wantRows] {
					cached[v] = true
				}
				hits := 0
				for _, v := range ids {
					if cached[v] {
						hits++
					}
				}
				if cs.Hits != int64(hits) || cs.Misses != int64(len(ids)-hits) {
					t.Fatalf("hits %d misses %d, want %d and %d", cs.Hits, cs.Misses, hits, len(ids)-hits)
				}
			})
		}
	}
}

func TestGatherConcurrent(t *testing.T) {
	const n, dim = 2000, 16
	x := randomRows(n, dim, 3)
	st, err := FromFloat32(x, n, dim, Options{CacheBytes: 4096, CacheOrder: []int32{5, 6, 7}})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			ids := []int32{int32(g), 5, 6, int32(n - 1 - g)}
			out := make([]float32, len(ids)*dim)
			for k := 0; k < 100; k++ {
				if err := st.Gather(context.Background(), ids, out); err != nil {
					t.Error(err)
					return
				}
				for i, v := range ids {
					if !slices.Equal(out[i*dim:(i+1)*dim], x[int(v)*dim:int(v+1)*dim]) {
						t.Errorf("row of %d differs", v)
						return
					}
				}
			}
		}(g)
	}
	wg.Wait()
	if cs := st.CacheStats(); cs.Hits != 4*100*2 || cs.Misses != 4*100*2 {
		t.Fatalf("hits %d misses %d, want 800 each", cs.Hits, cs.Misses)
	}
}

func TestStoreErrors(t *testing.T) {
	x := randomRows(10, 4, 1)
	data, _ := encode(x, Float32)
	for _, tc := range []struct {
		name string
		fn   func() error
		want string
	}{
		{"bad length", func() error { _, err := New(data[:7], Float32, 10, 4, Options{}); return err }, "bytes"},
		{"zero dim", func() error { _, err := New(nil, Float32, 10, 0, Options{}); return err }, "dimension"},
		{"bad dtype", func() error { _, err := New(data, DType(9), 10, 4, Options{}); return err }, "dtype"},
		{"negative budget", func() error { _, err := New(data, Float32, 10, 4, Options{CacheBytes: -1}); return err }, "negative"},
		{"budget without order", func() error { _, err := New(data, Float32, 10, 4, Options{CacheBytes: 100}); return err }, "CacheOrder"},
		{"order out of range", func() error {
			_, err := New(data, Float32, 10, 4, Options{CacheBytes: 100, CacheOrder: []int32{3, 10}})
			return err
		}, "not a row"},
		{"id out of range", func() error {
			st, _ := New(data, Float32, 10, 4, Options{})
			return st.Gather(context.Background(), []int32{1, 10}, make([]float32, 8))
		}, "not a row"},
		{"negative id", func() error {
			st, _ := New(data, Float32, 10, 4, Options{})
			return st.Gather(context.Background(), []int32{-1}, make([]float32, 4))
		}, "not a row"},
		{"ids out of range far ahead, with a cache (prefetched first)", func() error {
			st, _ := New(data, Float32, 10, 4, Options{CacheBytes: 40, CacheOrder: []int32{2, 5}})
			ids := make([]int32, 64)
			ids[40], ids[50] = 1<<30, -7
			return st.Gather(context.Background(), ids, make([]float32, 4*len(ids)))
		}, "not a row"},
		{"ids out of range far ahead, float16", func() error {
			h, _ := encode(x, Float16)
			st, _ := New(h, Float16, 10, 4, Options{})
			ids := make([]int32, 64)
			ids[60] = -1 << 31
			return st.Gather(context.Background(), ids, make([]float32, 4*len(ids)))
		}, "not a row"},
		{"short output", func() error {
			st, _ := New(data, Float32, 10, 4, Options{})
			return st.Gather(context.Background(), []int32{1, 2}, make([]float32, 7))
		}, "output"},
		{"bad dtype name", func() error { _, err := ParseDType("float8"); return err }, "float8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.fn(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one mentioning %q", err, tc.want)
			}
		})
	}
	// A budget smaller than one row is no cache, not an error.
	st, err := New(data, Float32, 10, 4, Options{CacheBytes: 15, CacheOrder: []int32{1}})
	if err != nil || st.CacheStats().Rows != 0 {
		t.Fatalf("tiny budget: %v, %+v", err, st.CacheStats())
	}
}

func TestHotOrder(t *testing.T) {
	got := HotOrder([]uint32{3, 0, 7, 3, 1})
	if want := []int32{2, 0, 3, 4}; !slices.Equal(got, want) {
		t.Fatalf("HotOrder = %v, want %v", got, want)
	}
	// Node 0 is the source of 3 edges, node 2 of 2, node 1 of 1.
	g, err := graph.Build(context.Background(), 4, []int32{0, 0, 0, 2, 2, 1}, []int32{1, 2, 3, 1, 3, 3}, nil, graph.BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := DegreeOrder(g), []int32{0, 2, 1}; !slices.Equal(got, want) {
		t.Fatalf("DegreeOrder = %v, want %v", got, want)
	}
}

func TestConvertCora(t *testing.T) {
	d, err := builtin.Open(context.Background(), "cora")
	if err != nil {
		t.Skipf("cora unavailable: %v", err)
	}
	defer d.Close()
	ref, err := Open(d, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]int32, d.Meta.NumNodes)
	for i := range ids {
		ids[i] = int32(i)
	}
	x := make([]float32, len(ids)*ref.Dim())
	if err := ref.Gather(context.Background(), ids, x); err != nil {
		t.Fatal(err)
	}
	for _, dtype := range []DType{Float16, BFloat16} {
		dir := filepath.Join(t.TempDir(), "cora-"+dtype.String())
		if err := ConvertDataset(context.Background(), d, dir, dtype, false); err != nil {
			t.Fatal(err)
		}
		h, err := dataset.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		if h.Meta.FeatureDType != dtype.String() || h.Features != nil || !slices.Equal(h.Labels, d.Labels) || !slices.Equal(h.Graph.Indices, d.Graph.Indices) {
			t.Fatalf("%v copy: meta %q, other arrays not copied", dtype, h.Meta.FeatureDType)
		}
		st, err := Open(h, Options{InMemory: true})
		if err != nil {
			t.Fatal(err)
		}
		if int64(len(st.data)) != int64(len(x))*2 {
			t.Fatalf("%v store holds %d bytes, want half of %d", dtype, len(st.data), len(x)*4)
		}
		y := make([]float32, len(x))
		if err := st.Gather(context.Background(), ids, y); err != nil {
			t.Fatal(err)
		}
		for i := range x {
			want := F16ToF32(F32ToF16(x[i]))
			if dtype == BFloat16 {
				want = BF16ToF32(F32ToBF16(x[i]))
			}
			if y[i] != want {
				t.Fatalf("%v value %d: %v, want %v", dtype, i, y[i], want)
			}
		}
		st.Close()
		h.Close()
	}
}

// TestHotOrderMatchesSort: the counting sort and the comparison sort
// give the same order (ties by id), on small and on large scores.
func TestHotOrderMatchesSort(t *testing.T) {
	r := rng.New(8)
	for _, top := range []int{3, 1000, 1 << 30} {
		score := make([]uint32, 5000)
		for i := range score {
			if r.IntN(4) > 0 {
				score[i] = uint32(r.IntN(top))
			}
		}
		got := HotOrder(score)
		var want []int32
		for v, c := range score {
			if c > 0 {
				want = append(want, int32(v))
			}
		}
		slices.SortStableFunc(want, func(a, b int32) int { return int(score[b]) - int(score[a]) })
		if !slices.Equal(got, want) {
			t.Fatalf("top %d: HotOrder differs from a stable sort by score", top)
		}
	}
}

// TestGatherEach checks that GatherEach writes what Gather does and hands
// every row to done exactly once, after it is written, in ranges of a few
// KiB, on one goroutine or several.
func TestGatherEach(t *testing.T) {
	const n, dim = 5000, 37
	x := randomRows(n, dim, 4)
	r := rng.New(5)
	order := make([]int32, n)
	for i := range order {
		order[i] = int32((i * 7) % n)
	}
	for _, count := range []int{0, 1, 300, 20000} {
		ids := make([]int32, count)
		for i := range ids {
			ids[i] = int32(r.IntN(n))
		}
		for _, dtype := range []DType{Float32, Float16} {
			data, want := encode(x, dtype)
			for _, opts := range []Options{{}, {InMemory: true, Workers: 3}, {CacheBytes: 40 * dim * 4, CacheOrder: order, Workers: 2}} {
				t.Run(fmt.Sprintf("%d/%v/workers=%d/cache=%d", count, dtype, opts.Workers, opts.CacheBytes), func(t *testing.T) {
					st, err := New(data, dtype, n, dim, opts)
					if err != nil {
						t.Fatal(err)
					}
					defer st.Close()
					out := make([]float32, len(ids)*dim)
					seen := make([]int, len(ids))
					var mu sync.Mutex
					var bad error
					err = st.GatherEach(context.Background(), ids, out, func(lo, hi int) {
						mu.Lock()
						defer mu.Unlock()
						if lo < 0 || hi > len(ids) || lo >= hi || (hi-lo)*dim*4 > 2*eachBytes {
							bad = fmt.Errorf("range [%d, %d) of %d rows", lo, hi, len(ids))
							return
						}
						for i := lo; i < hi; i++ {
							seen[i]++
							if !slices.Equal(out[i*dim:(i+1)*dim], want[int(ids[i])*dim:int(ids[i]+1)*dim]) {
								bad = fmt.Errorf("row %d handed out before it was written", i)
							}
						}
					})
					if err != nil {
						t.Fatal(err)
					}
					if bad != nil {
						t.Fatal(bad)
					}
					for i, c := range seen {
						if c != 1 {
							t.Fatalf("row %d handed out %d times", i, c)
						}
					}
					if err := st.GatherEach(context.Background(), []int32{0, n}, make([]float32, 2*dim), func(int, int) {}); err == nil {
						t.Fatal("an id out of range was gathered")
					}
				})
			}
		}
	}
}

// TestConvertRefusesOverflow: a finite value beyond float16's (or
// bfloat16's) range was stored as infinity without a word.
func TestConvertRefusesOverflow(t *testing.T) {
	const n, dim = 10, 4
	for _, c := range []struct {
		v     float32
		dtype DType
		err   string
	}{
		{1e5, Float16, "node 7, column 3: 100000 is beyond float16's range"},
		{65504, Float16, ""},
		{1e5, BFloat16, ""},
		{math.MaxFloat32, BFloat16, "node 7, column 3"},
		{float32(math.Inf(1)), Float16, ""}, // infinite already: not an overflow
	} {
		x := make([]float32, n*dim)
		x[7*dim+3] = c.v
		src, err := New(unsafe.Slice((*byte)(unsafe.Pointer(&x[0])), 4*len(x)), Float32, n, dim, Options{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = Convert(context.Background(), src, c.dtype, Options{})
		if c.err == "" && err != nil || c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)) {
			t.Errorf("%g as %v: %v, want %q", c.v, c.dtype, err, c.err)
		}
	}
}

package feature

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/graphmill/graphmill/internal/memstat"
	"github.com/graphmill/graphmill/internal/rng"
	"github.com/graphmill/graphmill/npy"
)

// writeFeatures writes rows of x as dtype into a .npy file under dir and
// returns its path and the array opened (mapped) for a reference Store.
func writeFeatureFile(t *testing.T, dir string, x []float32, n, dim int, dtype DType) *npy.Array {
	t.Helper()
	b, _ := encode(x, dtype)
	nd := map[DType]npy.DType{Float32: npy.Float32, Float16: npy.Float16, BFloat16: npy.Uint16}[dtype]
	path := filepath.Join(dir, fmt.Sprintf("f-%v.npy", dtype))
	if err := npy.WriteFileDType(path, nd, b, n, dim); err != nil {
		t.Fatal(err)
	}
	a, err := npy.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}

// TestDiskMatchesStore checks that Disk gathers bitwise what the in-memory
// Store gathers, for every dtype, with and without a cache and row
// normalisation, on both read backends, buffered or direct: rows of 37
// values straddle pages and the sequential pass's chunks (the file is
// larger than one), and a gather of many ids spans several read windows.
func TestDiskMatchesStore(t *testing.T) {
	const n, dim = 70000, 37
	x := randomRows(n, dim, 1)
	for i := range x {
		x[i] = float32(math.Abs(float64(x[i]))) // normalisable
	}
	dir := t.TempDir()
	r := rng.New(5)
	ids := make([]int32, 60000)
	for i := range ids {
		ids[i] = int32(r.IntN(n))
	}
	ids[1] = ids[0] // a repeated id
	order := make([]int32, n)
	for i := range order {
		order[i] = int32((i * 7919) % n)
	}
	ctx := context.Background()
	for _, dt := range []DType{Float32, Float16, BFloat16} {
		a := writeFeatureFile(t, dir, x, n, dim, dt)
		for _, tc := range []struct {
			name      string
			cache     int64
			normalize bool
			backend   string
			buffered  bool
		}{
			{"no cache", 0, false, "auto", false},
			{"cache", 1 << 20, false, "auto", false},
			{"cache normalised", 1 << 20, true, "auto", false},
			{"normalised", 0, true, "pread", false},
			{"all cached", 1 << 30, true, "pread", true},
			{"buffered", 1 << 18, false, "pread", true},
		} {
			t.Run(fmt.Sprintf("%v/%s", dt, tc.name), func(t *testing.T) {
				ref, err := New(a.Data, dt, n, dim, Options{Workers: 1})
				if err != nil {
					t.Fatal(err)
				}
				if tc.normalize {
					if ok, err := ref.NormalizeRows(ctx); err != nil || !ok {
						t.Fatalf("reference normalisation: %v %v", ok, err)
					}
				}
				d, err := openDiskFile(ctx, a.Path, a.Header, dt, DiskOptions{
					CacheBytes: tc.cache, CacheOrder: order, Normalize: tc.normalize, Backend: tc.backend, Buffered: tc.buffered,
				})
				if err != nil {
					t.Fatal(err)
				}
				defer d.Close()
				if d.Normalized() != tc.normalize {
					t.Fatalf("Normalized() = %v, want %v", d.Normalized(), tc.normalize)
				}
				want := make([]float32, len(ids)*dim)
				got := make([]float32, len(ids)*dim)
				if err := ref.Gather(ctx, ids, want); err != nil {
					t.Fatal(err)
				}
				if err := d.Gather(ctx, ids, got); err != nil {
					t.Fatal(err)
				}
				for i := range want {
					if math.Float32bits(want[i]) != math.Float32bits(got[i]) {
						t.Fatalf("value %d (row %d, id %d): disk %v, in memory %v", i, i/dim, ids[i/dim], got[i], want[i])
					}
				}
				cs, io := d.CacheStats(), d.IOStats()
				if cs.Hits+cs.Misses != int64(len(ids)) && tc.cache > 0 {
					t.Errorf("hits %d + misses %d != %d ids", cs.Hits, cs.Misses, len(ids))
				}
				if tc.cache >= int64(n*dim*dt.Size()) {
					if io.Pages != 0 || cs.Misses != 0 {
						t.Errorf("everything cached, yet %d pages read and %d misses", io.Pages, cs.Misses)
					}
				} else {
					// Each page needed by the missed rows, read once.
					pages := map[int64]bool{}
					rowB := int64(dim * dt.Size())
					missed := 0
					for _, v := range ids {
						if d.slot != nil && d.slot[v] >= 0 {
							continue
						}
						missed++
						a := a.DataOffset + int64(v)*rowB
						for p := a / pageSize; p <= (a+rowB-1)/pageSize; p++ {
							pages[p] = true
						}
					}
					if io.Pages != int64(len(pages)) || io.Bytes > io.Pages*pageSize || io.Bytes <= (io.Pages-1)*pageSize {
						t.Errorf("read %d pages (%d bytes), want the %d distinct pages of %d missed rows", io.Pages, io.Bytes, len(pages), missed)
					}
					if io.Reads >= io.Pages && io.Pages > 100 {
						t.Errorf("%d requests for %d pages: adjacent pages not coalesced", io.Reads, io.Pages)
					}
				}
				if tc.cache > 0 || tc.normalize {
					if total := a.DataOffset + int64(len(a.Data)); io.FillBytes < total {
						t.Errorf("sequential pass read %d bytes of %d", io.FillBytes, total)
					}
				}
			})
		}
	}
}

// TestDiskNegativeSkipsNormalisation: features with negative values are
// not normalised (as Store.NormalizeRows), and the pass stops early when
// it only served normalisation.
func TestDiskNegativeSkipsNormalisation(t *testing.T) {
	const n, dim = 400000, 32
	x := randomRows(n, dim, 3) // has negatives
	a := writeFeatureFile(t, t.TempDir(), x, n, dim, Float32)
	d, err := openDiskFile(context.Background(), a.Path, a.Header, Float32, DiskOptions{Normalize: true})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if d.Normalized() {
		t.Fatal("normalised features with negative values")
	}
	if io := d.IOStats(); io.FillBytes > 3*scanChunk {
		t.Errorf("the pass read all %d bytes though the first rows were negative", io.FillBytes)
	}
}

func TestDiskErrors(t *testing.T) {
	const n, dim = 1000, 8
	a := writeFeatureFile(t, t.TempDir(), randomRows(n, dim, 1), n, dim, Float32)
	ctx := context.Background()
	if _, err := openDiskFile(ctx, a.Path, a.Header, Float32, DiskOptions{CacheBytes: 1 << 10}); err == nil {
		t.Error("a cache budget without an order was accepted")
	}
	if _, err := openDiskFile(ctx, a.Path, a.Header, Float32, DiskOptions{CacheBytes: -1}); err == nil {
		t.Error("a negative budget was accepted")
	}
	d, err := openDiskFile(ctx, a.Path, a.Header, Float32, DiskOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	out := make([]float32, 2*dim)
	if err := d.Gather(ctx, []int32{1, n}, out); err == nil {
		t.Error("an id out of range was accepted")
	}
	if err := d.Gather(ctx, []int32{1}, out); err == nil {
		t.Error("a wrong output size was accepted")
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := d.Gather(cctx, []int32{1, 2}, out); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled gather: %v", err)
	}
	if _, err := openDiskFile(cctx, a.Path, a.Header, Float32, DiskOptions{Normalize: true}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled pass: %v", err)
	}
}

// TestDiskConcurrent gathers from several goroutines at once (run with
// -race).
func TestDiskConcurrent(t *testing.T) {
	const n, dim = 20000, 16
	x := randomRows(n, dim, 9)
	a := writeFeatureFile(t, t.TempDir(), x, n, dim, Float32)
	order := make([]int32, n)
	for i := range order {
		order[i] = int32(i)
	}
	d, err := openDiskFile(context.Background(), a.Path, a.Header, Float32, DiskOptions{CacheBytes: int64(n * dim), CacheOrder: order})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for g := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rng.New(uint64(g))
			ids := make([]int32, 3000)
			out := make([]float32, len(ids)*dim)
			for it := 0; it < 5; it++ {
				for i := range ids {
					ids[i] = int32(r.IntN(n))
				}
				if err := d.Gather(context.Background(), ids, out); err != nil {
					errs[g] = err
					return
				}
				for i, v := range ids {
					if !slices.Equal(out[i*dim:(i+1)*dim], x[int(v)*dim:int(v+1)*dim]) {
						errs[g] = fmt.Errorf("row %d of node %d differs", i, v)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
}

// TestDiskSuperbatch: with a superbatch cache, planned gathers return the
// in-memory rows bitwise while the cache changes under them, the cache
// never holds more rows than it has slots (each slot once), and on
// batches that reuse rows it hits more often than the static cache of
// the same budget.
func TestDiskSuperbatch(t *testing.T) {
	const n, dim = 50000, 24
	x := randomRows(n, dim, 4)
	a := writeFeatureFile(t, t.TempDir(), x, n, dim, Float32)
	order := make([]int32, n)
	for i := range order {
		order[i] = int32(i) // "hot" rows are the low ids
	}
	// Batches drawn from a sliding window of ids, so that consecutive
	// batches share rows the static cache (low ids) does not hold.
	r := rng.New(3)
	var batches [][]int32
	for b := 0; b < 40; b++ {
		seen := map[int32]bool{}
		var ids []int32
		for len(ids) < 3000 {
			v := int32(b*500 + r.IntN(8000))
			if b%3 == 0 {
				v = int32(r.IntN(n))
			}
			if !seen[v] {
				seen[v] = true
				ids = append(ids, v)
			}
		}
		batches = append(batches, ids)
	}
	ctx := context.Background()
	budget := int64(6000 * dim * 4)
	hitRate := func(superbatch bool) float64 {
		d, err := openDiskFile(ctx, a.Path, a.Header, Float32, DiskOptions{CacheBytes: budget, CacheOrder: order, Superbatch: superbatch})
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		for s0 := 0; s0 < len(batches); s0 += 8 {
			d.Plan(batches[s0:min(s0+8, len(batches))])
			for _, ids := range batches[s0:min(s0+8, len(batches))] {
				out := make([]float32, len(ids)*dim)
				if err := d.Gather(ctx, ids, out); err != nil {
					t.Fatal(err)
				}
				for i, v := range ids {
					if !slices.Equal(out[i*dim:(i+1)*dim], x[int(v)*dim:int(v+1)*dim]) {
						t.Fatalf("superbatch %v: row %d (node %d) differs", superbatch, i, v)
					}
				}
			}
		}
		// An unplanned gather reads without changing the cache.
		if err := d.Gather(ctx, batches[0][:10], make([]float32, 10*dim)); err != nil {
			t.Fatal(err)
		}
		slots := map[int32]int32{}
		for v, sl := range d.slot {
			if sl < 0 {
				continue
			}
			if int(sl) >= d.cached {
				t.Fatalf("node %d in slot %d of %d", v, sl, d.cached)
			}
			if u, dup := slots[sl]; dup {
				t.Fatalf("slot %d holds nodes %d and %d", sl, u, v)
			}
			slots[sl] = int32(v)
		}
		io := d.IOStats()
		if superbatch && (io.Planned != int64(len(batches)) || io.Unplanned != 1 || io.Admitted == 0 || io.Admitted != io.Evicted) {
			t.Errorf("planned %d, unplanned %d, admitted %d, evicted %d", io.Planned, io.Unplanned, io.Admitted, io.Evicted)
		}
		return d.CacheStats().HitRate()
	}
	static, dynamic := hitRate(false), hitRate(true)
	t.Logf("hit rate: static %.3f, superbatch %.3f", static, dynamic)
	if dynamic <= static+0.1 {
		t.Errorf("superbatch hit rate %.3f, static %.3f: want at least 10 points more", dynamic, static)
	}
}

// TestConvertDropsMappedPages: converting mapped features leaves none of
// the file's pages in the resident set (they would count on top of the
// copy).
func TestConvertDropsMappedPages(t *testing.T) {
	const n, dim = 200000, 64 // 51 MB of float32
	a := writeFeatureFile(t, t.TempDir(), randomRows(n, dim, 2), n, dim, Float32)
	src, err := New(a.Data, Float32, n, dim, Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	src.mapped = true // as Open sets it
	before := memstat.File()
	c, err := Convert(context.Background(), src, Float16, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if grew := memstat.File() - before; grew > 8<<20 {
		t.Errorf("the mapped file's resident pages grew by %d bytes converting %d", grew, len(a.Data))
	}
	out := make([]float32, dim)
	if err := c.Gather(context.Background(), []int32{n - 1}, out); err != nil {
		t.Fatal(err)
	}
}

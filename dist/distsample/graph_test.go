package distsample

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/graphmill/graphmill/batch"
	"github.com/graphmill/graphmill/dataset"
	"github.com/graphmill/graphmill/dataset/builtin"
	"github.com/graphmill/graphmill/dataset/parts"
	"github.com/graphmill/graphmill/dist"
	"github.com/graphmill/graphmill/feature"
	"github.com/graphmill/graphmill/internal/rng"
	"github.com/graphmill/graphmill/sample"
)

// partitionedCora writes Cora split k ways at random (the worst locality:
// most neighbours are remote) into a temporary directory.
func partitionedCora(t *testing.T, k int) (*dataset.Dataset, string) {
	t.Helper()
	ctx := context.Background()
	d, err := builtin.Open(ctx, "cora")
	if err != nil {
		t.Skipf("cora unavailable: %v", err)
	}
	t.Cleanup(func() { d.Close() })
	r := rng.New(7)
	assign := make([]int32, d.Meta.NumNodes)
	for i := range assign {
		assign[i] = int32(r.IntN(k))
	}
	dir := filepath.Join(t.TempDir(), fmt.Sprintf("cora-%d", k))
	if _, err := parts.Write(ctx, d, assign, k, dir, parts.WriteOptions{Method: "random"}); err != nil {
		t.Fatal(err)
	}
	return d, dir
}

// openAll opens the Graph on every rank of an in-process group.
func openAll(t *testing.T, dir string, k int, fanouts []int, cacheBytes int64) []*Graph {
	t.Helper()
	ctx := context.Background()
	comms, err := dist.LocalGroup(ctx, k, dist.Options{})
	if err != nil {
		t.Fatal(err)
	}
	gs := make([]*Graph, k)
	errs := make([]error, k)
	var wg sync.WaitGroup
	book, err := parts.ReadBook(dir)
	if err != nil {
		t.Fatal(err)
	}
	for r := 0; r < k; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p, err := parts.OpenPart(dir, book, r)
			if err != nil {
				errs[r] = err
				return
			}
			st, err := feature.Open(p.Dataset, feature.Options{Workers: 1})
			if err != nil {
				errs[r] = err
				return
			}
			if _, err := st.NormalizeRows(ctx); err != nil {
				errs[r] = err
				return
			}
			t.Cleanup(func() { st.Close(); p.Close() })
			gs[r], errs[r] = Open(ctx, comms[r], dir, Options{Fanouts: fanouts, Features: st, CacheBytes: cacheBytes})
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		var wg sync.WaitGroup
		for r, g := range gs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := g.Close(ctx); err != nil {
					t.Errorf("rank %d close: %v", r, err)
				}
				comms[r].Close()
			}()
		}
		wg.Wait()
	})
	return gs
}

func equalBlocks(t *testing.T, what string, want, got *batch.MiniBatch) {
	t.Helper()
	if len(want.Blocks) != len(got.Blocks) {
		t.Fatalf("%s: %d blocks, want %d", what, len(got.Blocks), len(want.Blocks))
	}
	if !slices.Equal(want.InputNodes, got.InputNodes) || len(want.Seeds) != len(got.Seeds) {
		t.Fatalf("%s: input nodes differ from the single process's (%d/%d)", what, len(got.InputNodes), len(want.InputNodes))
	}
	for i := range want.Blocks {
		w, b := &want.Blocks[i], &got.Blocks[i]
		if w.NumSrc != b.NumSrc || w.NumDst != b.NumDst || !slices.Equal(w.Indptr, b.Indptr) || !slices.Equal(w.Indices, b.Indices) {
			t.Fatalf("%s: block %d differs from the single process's (%d/%d sources, %d/%d edges)", what, i, b.NumSrc, w.NumSrc, len(b.Indices), len(w.Indices))
		}
	}
}

// TestSameMinibatchesAsSingleProcess samples the same seeds on every rank
// of a 4-way partitioned Cora and in one process over the whole graph, and
// checks the blocks and the gathered feature rows are identical, with and
// without the remote-row cache.
func TestSameMinibatchesAsSingleProcess(t *testing.T) {
	base := runtime.NumGoroutine()
	d, dir := partitionedCora(t, 4)
	ctx := context.Background()
	whole, err := feature.Open(d, feature.Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := whole.NormalizeRows(ctx); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		fanouts []int
		cache   int64
	}{{[]int{25, 10}, 0}, {[]int{5, 5, 5}, 0}, {[]int{-1, 3}, 0}, {[]int{10, 10}, 200 << 10}} {
		t.Run(fmt.Sprintf("%v-cache%d", tc.fanouts, tc.cache), func(t *testing.T) {
			gs := openAll(t, dir, 4, tc.fanouts, tc.cache)
			single, _ := sample.New(d.Graph, sample.Config{Fanouts: tc.fanouts})
			if tc.cache > 0 {
				var wg sync.WaitGroup
				for r, g := range gs {
					wg.Add(1)
					go func() {
						defer wg.Done()
						b := [][]int32{g.part.GlobalIDs[:min(100, g.inner)]}
						if n, err := g.Presample(ctx, b, sample.EpochKey(1, 0)); err != nil || n == 0 {
							t.Errorf("rank %d presample: %d rows, %v", r, n, err)
						}
					}()
				}
				wg.Wait()
			}
			var wg sync.WaitGroup
			for r, g := range gs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					var a sample.Assembler
					mb := &batch.MiniBatch{}
					// Own seeds, foreign seeds and a mix, in two epochs.
					own := g.part.GlobalIDs[:min(50, g.inner)]
					mixed := []int32{int32(r), 100 + int32(r), 2000, 1500 + int32(r)}
					for e, seeds := range [][]int32{own, mixed, own} {
						key := sample.EpochKey(3, e)
						if err := g.Sample(ctx, &a, mb, seeds, key); err != nil {
							t.Errorf("rank %d: %v", r, err)
							return
						}
						want, _ := single.Sample(seeds, key)
						equalBlocks(t, fmt.Sprintf("rank %d seeds %d", r, e), want, mb)
						ids, err := mb.Local()
						if err != nil {
							t.Error(err)
							return
						}
						rows := make([]float32, len(ids)*g.dim)
						if err := g.Gather(ctx, ids, rows); err != nil {
							t.Errorf("rank %d gather: %v", r, err)
							return
						}
						ref := make([]float32, len(rows))
						if err := whole.Gather(ctx, ids, ref); err != nil {
							t.Error(err)
							return
						}
						if !slices.Equal(rows, ref) {
							t.Errorf("rank %d: gathered rows differ from the whole dataset's", r)
						}
					}
					st := g.Stats()
					if st.SampleRequests == 0 || st.RemoteRows+st.CachedRows == 0 || st.LocalRows == 0 {
						t.Errorf("rank %d: stats %+v show no remote or local work", r, st)
					}
					// Per hop at most one request per other rank.
					if max := st.Batches * int64(len(tc.fanouts)) * 3; st.SampleRequests > max {
						t.Errorf("rank %d: %d sampling requests for %d batches", r, st.SampleRequests, st.Batches)
					}
					if tc.cache > 0 && st.CachedRows == 0 {
						t.Errorf("rank %d: the cache served nothing: %+v", r, st)
					}
				}()
			}
			wg.Wait()
		})
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > base+2 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > base+2 {
		buf := make([]byte, 1<<16)
		t.Fatalf("%d goroutines left (started with %d):\n%s", n, base, buf[:runtime.Stack(buf, true)])
	}
}

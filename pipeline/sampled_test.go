package pipeline

import (
	"context"
	"errors"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/graphmill/graphmill/batch"
	"github.com/graphmill/graphmill/dataset"
	"github.com/graphmill/graphmill/dataset/builtin"
	"github.com/graphmill/graphmill/feature"
	"github.com/graphmill/graphmill/internal/rng"
	"github.com/graphmill/graphmill/sample"
)

func cora(t testing.TB) *dataset.Dataset {
	t.Helper()
	d, err := builtin.Open(context.Background(), "cora")
	if err != nil {
		t.Skipf("cora unavailable: %v", err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func setup(t testing.TB) (*dataset.Dataset, *sample.Sampler, *feature.Store) {
	d := cora(t)
	s, err := sample.New(d.Graph, sample.Config{Fanouts: []int{10, 5}})
	if err != nil {
		t.Fatal(err)
	}
	st, err := feature.Open(d, feature.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return d, s, st
}

// waitGoroutines waits until the number of goroutines is back to n.
func waitGoroutines(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for runtime.NumGoroutine() > n {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("goroutine leak: %d > %d\n%s", runtime.NumGoroutine(), n, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestEpoch(t *testing.T) {
	d, s, st := setup(t)
	seeds := d.Train
	for _, tc := range []struct {
		workers, prefetch, bs int
		dropLast              bool
	}{{1, 1, 16, false}, {3, 4, 16, true}, {2, 2, 1000, false}, {4, 1, 7, false}} {
		base := runtime.NumGoroutine()
		l, err := NewSampled(s, st, d.Labels, seeds, SampledConfig{BatchSize: tc.bs, DropLast: tc.dropLast, Shuffle: true, Seed: 5, SampleWorkers: tc.workers, Prefetch: tc.prefetch})
		if err != nil {
			t.Fatal(err)
		}
		want, _ := sample.Batches(seeds, tc.bs, true, rng.Derive(5, 3), tc.dropLast)
		if l.NumBatches() != len(want) {
			t.Fatalf("NumBatches %d, want %d", l.NumBatches(), len(want))
		}
		it := l.Epoch(context.Background(), 3)
		var seen []int32
		var edges, rows int64
		i := 0
		for it.Next() {
			b := it.Batch()
			if b.Seq != uint64(i) || b.Epoch != 3 {
				t.Fatalf("batch %d of epoch %d arrived at position %d", b.Seq, b.Epoch, i)
			}
			ref, err := s.Sample(want[i], sample.EpochKey(5, 3))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(ref.Blocks, b.Blocks) || !slices.Equal(ref.InputNodes, b.InputNodes) {
				t.Fatalf("workers=%d: batch %d differs from sampling it directly", tc.workers, i)
			}
			ids, _ := ref.Local()
			feat := make([]float32, len(ids)*st.Dim())
			if err := st.Gather(context.Background(), ids, feat); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(feat, b.Features.F32) || b.Features.Rows != len(ids) || b.Features.Dim != st.Dim() {
				t.Fatalf("batch %d: features differ", i)
			}
			if err := b.Validate(int64(d.Meta.NumNodes)); err != nil {
				t.Fatal(err)
			}
			for k, v := range b.Seeds {
				if b.Labels[k] != d.Labels[v] {
					t.Fatalf("batch %d: label of seed %d is %d, want %d", i, v, b.Labels[k], d.Labels[v])
				}
			}
			for _, v := range b.Seeds {
				seen = append(seen, int32(v))
			}
			edges += int64(b.NumEdges())
			rows += int64(len(b.InputNodes))
			b.Release()
			i++
		}
		it.Close()
		if err := it.Err(); err != nil {
			t.Fatal(err)
		}
		if i != len(want) {
			t.Fatalf("%d batches, want %d", i, len(want))
		}
		if !tc.dropLast {
			slices.Sort(seen)
			if !slices.Equal(seen, slices.Sorted(slices.Values(seeds))) {
				t.Fatal("the epoch's seeds are not the seed set")
			}
		}
		stats := it.Stats()
		if stats.Batches != i || stats.Edges != edges || stats.Rows != rows || stats.Stages[0].Workers != tc.workers {
			t.Fatalf("stats %+v, want %d batches, %d edges, %d rows", stats, i, edges, rows)
		}
		if stats.Stage("sample") <= 0 || stats.Stage("gather") <= 0 || stats.Bottleneck() == "none" || !strings.Contains(stats.String(), "bottleneck") {
			t.Fatalf("stage timings missing: %v", stats)
		}
		waitGoroutines(t, base)
	}
}

func TestNoFeaturesNoLabels(t *testing.T) {
	d, s, _ := setup(t)
	l, err := NewSampled(s, nil, nil, d.Train, SampledConfig{BatchSize: 32})
	if err != nil {
		t.Fatal(err)
	}
	it := l.Epoch(context.Background(), 0)
	defer it.Close()
	n := 0
	for it.Next() {
		if !it.Batch().Features.Empty() || it.Batch().Labels != nil {
			t.Fatal("features or labels without a fetcher or labels")
		}
		it.Batch().Release()
		n++
	}
	if n != l.NumBatches() || it.Err() != nil {
		t.Fatalf("%d batches, err %v", n, it.Err())
	}
}

func TestCancelAndClose(t *testing.T) {
	d, s, st := setup(t)
	base := runtime.NumGoroutine()
	l, err := NewSampled(s, st, d.Labels, d.Train, SampledConfig{BatchSize: 4, SampleWorkers: 3})
	if err != nil {
		t.Fatal(err)
	}
	// Cancel the context mid-epoch.
	ctx, cancel := context.WithCancel(context.Background())
	it := l.Epoch(ctx, 0)
	for k := 0; k < 3 && it.Next(); k++ {
		it.Batch().Release()
	}
	cancel()
	for it.Next() { // drains what was already prefetched, then stops
		it.Batch().Release()
	}
	if !errors.Is(it.Err(), context.Canceled) {
		t.Fatalf("Err = %v, want context.Canceled", it.Err())
	}
	it.Close()
	waitGoroutines(t, base)
	// Close early without cancelling, twice.
	it = l.Epoch(context.Background(), 1)
	it.Next()
	it.Close()
	it.Close()
	if it.Next() {
		t.Fatal("Next after Close returned true")
	}
	waitGoroutines(t, base)
	// Close before the first Next.
	l.Epoch(context.Background(), 2).Close()
	waitGoroutines(t, base)
}

type failingFetcher struct{ dim int }

func (f failingFetcher) Dim() int { return f.dim }
func (f failingFetcher) Gather(context.Context, []int32, []float32) error {
	return errors.New("disk on fire")
}

func TestStageErrors(t *testing.T) {
	d, s, _ := setup(t)
	base := runtime.NumGoroutine()
	l, _ := NewSampled(s, failingFetcher{4}, nil, d.Train, SampledConfig{BatchSize: 8})
	it := l.Epoch(context.Background(), 0)
	for it.Next() {
	}
	if it.Err() == nil || !strings.Contains(it.Err().Error(), "disk on fire") {
		t.Fatalf("Err = %v, want the fetcher's error", it.Err())
	}
	it.Close()
	// A seed the sampler rejects.
	bad := append(slices.Clone(d.Train[:20]), int32(d.Meta.NumNodes))
	l, _ = NewSampled(s, nil, nil, bad, SampledConfig{BatchSize: 8, SampleWorkers: 2})
	it = l.Epoch(context.Background(), 0)
	n := 0
	for it.Next() {
		it.Batch().Release()
		n++
	}
	if it.Err() == nil || !strings.Contains(it.Err().Error(), "batch 2") || n != 2 {
		t.Fatalf("%d batches then Err = %v, want 2 then an error for batch 2", n, it.Err())
	}
	it.Close()
	waitGoroutines(t, base)
}

func TestBadConfig(t *testing.T) {
	d, s, st := setup(t)
	for _, tc := range []struct {
		name   string
		s      Sampler
		labels []int32
		seeds  []int32
		cfg    SampledConfig
		want   string
	}{
		{"nil sampler", nil, nil, d.Train, SampledConfig{BatchSize: 1}, "nil sampler"},
		{"batch 0", s, nil, d.Train, SampledConfig{}, "batch size"},
		{"no seeds", s, nil, nil, SampledConfig{BatchSize: 4}, "no seeds"},
		{"negative workers", s, nil, d.Train, SampledConfig{BatchSize: 4, SampleWorkers: -1}, "-1 sampling workers"},
		{"seed without label", s, d.Labels[:10], d.Train, SampledConfig{BatchSize: 4}, "no label"},
		{"drop everything", s, nil, d.Train[:3], SampledConfig{BatchSize: 4, DropLast: true}, "no full batch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewSampled(tc.s, st, tc.labels, tc.seeds, tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one mentioning %q", err, tc.want)
			}
		})
	}
}

// plainFetcher hides a Store's GatherEach: a Fetcher that hands out no
// rows as it writes them.
type plainFetcher struct{ st *feature.Store }

func (f plainFetcher) Dim() int { return f.st.Dim() }
func (f plainFetcher) Gather(ctx context.Context, ids []int32, out []float32) error {
	return f.st.Gather(ctx, ids, out)
}

// TestRowsHook checks that SampledConfig.Rows sees every gathered row of
// every batch once, with its node and batch, in pieces of a few KiB from
// an EachFetcher and whole from another, and that what it writes is what
// the batch carries.
func TestRowsHook(t *testing.T) {
	d, s, st := setup(t)
	for _, f := range []Fetcher{st, plainFetcher{st}} {
		_, each := f.(EachFetcher)
		var mu sync.Mutex
		calls := map[uint64]int{}
		rows := map[uint64]int{}
		dim := st.Dim()
		hook := func(mb *batch.MiniBatch, ids []int32, x []float32) {
			if len(x) != len(ids)*dim || mb.Epoch != 2 {
				t.Errorf("hook given %d values for %d ids, epoch %d", len(x), len(ids), mb.Epoch)
				return
			}
			for i, v := range ids {
				x[i*dim] = float32(v)*1000 + float32(mb.Seq) // marks row i: its node and batch
			}
			mu.Lock()
			calls[mb.Seq]++
			rows[mb.Seq] += len(ids)
			mu.Unlock()
		}
		l, err := NewSampled(s, f, d.Labels, d.Train, SampledConfig{BatchSize: 64, SampleWorkers: 2, Rows: hook})
		if err != nil {
			t.Fatal(err)
		}
		it := l.Epoch(context.Background(), 2)
		n := 0
		for it.Next() {
			b := it.Batch()
			ids, _ := b.Local()
			for i, v := range ids {
				if got := b.Features.F32[i*dim]; got != float32(v)*1000+float32(b.Seq) {
					t.Fatalf("each=%v: batch %d row %d (node %d) not marked by the hook: %v", each, b.Seq, i, v, got)
				}
			}
			mu.Lock()
			if rows[b.Seq] != len(ids) || (!each && calls[b.Seq] != 1) || (each && len(ids)*dim*4 > 64<<10 && calls[b.Seq] < 2) {
				t.Fatalf("each=%v: batch %d: %d calls over %d rows, for %d rows", each, b.Seq, calls[b.Seq], rows[b.Seq], len(ids))
			}
			mu.Unlock()
			b.Release()
			n++
		}
		it.Close()
		if err := it.Err(); err != nil || n != l.NumBatches() {
			t.Fatalf("%d batches, err %v", n, err)
		}
	}
}

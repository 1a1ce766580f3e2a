package pipeline

import (
	"context"
	"errors"
	"math"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/graphmill/graphmill/batch"
)

// fill makes batch i a one-block batch of i+1 input nodes (so sizes vary).
func fill(_ context.Context, i int, mb *batch.MiniBatch) error {
	ids := mb.LocalBuffer()
	for k := 0; k <= i; k++ {
		ids = append(ids, int32(k))
	}
	mb.SetInputs(ids, 1)
	b := &mb.SetBlocks(1)[0]
	b.NumSrc, b.NumDst = i+1, 1
	b.Indptr = append(b.Indptr[:0], 0, int64(i))
	b.Indices = b.Indices[:0]
	for k := 1; k <= i; k++ {
		b.Indices = append(b.Indices, int32(k))
	}
	return nil
}

func TestStagesInOrder(t *testing.T) {
	base := runtime.NumGoroutine()
	var order []int
	p, err := New(Config{Stages: []Stage{
		{Name: "fill", Workers: 3, Run: func(ctx context.Context, i int, mb *batch.MiniBatch) error {
			time.Sleep(time.Duration((7*i)%5) * 100 * time.Microsecond) // finish out of order
			return fill(ctx, i, mb)
		}},
		{Name: "rows", Run: func(_ context.Context, i int, mb *batch.MiniBatch) error {
			order = append(order, i) // one goroutine: no lock needed
			x := mb.Features.SetF32(len(mb.InputNodes), 2)
			for k := range x {
				x[k] = float32(i)
			}
			return nil
		}},
		{Name: "labels", Run: func(_ context.Context, i int, mb *batch.MiniBatch) error {
			mb.Labels = append(mb.Labels[:0], int32(i))
			return nil
		}},
	}, Prefetch: 2})
	if err != nil {
		t.Fatal(err)
	}
	for epoch := 0; epoch < 2; epoch++ {
		it := p.Epoch(context.Background(), epoch, 40)
		n := 0
		for it.Next() {
			mb := it.Batch()
			if int(mb.Seq) != n || int(mb.Epoch) != epoch || len(mb.InputNodes) != n+1 || mb.Labels[0] != int32(n) || mb.Features.F32[0] != float32(n) {
				t.Fatalf("epoch %d position %d: got batch seq %d epoch %d with %d inputs, label %v", epoch, n, mb.Seq, mb.Epoch, len(mb.InputNodes), mb.Labels)
			}
			if err := mb.Validate(0); err != nil {
				t.Fatal(err)
			}
			mb.Release()
			n++
		}
		it.Close()
		if it.Err() != nil || n != 40 {
			t.Fatalf("%d batches, err %v", n, it.Err())
		}
		st := it.Stats()
		if len(st.Stages) != 3 || st.Stages[0].Workers != 3 || st.Stages[0].Name != "fill" || st.Stage("fill") <= 0 || st.Rows != int64(40*41/2) {
			t.Fatalf("stats %+v", st)
		}
	}
	for i, v := range order {
		if v != i%40 {
			t.Fatalf("later stage saw batch %d at position %d", v, i)
		}
	}
	waitGoroutines(t, base)
}

// TestBoundedAndRecycled checks that no more than Buffers batches are ever
// alive and that the same batches (and their arrays) are reused.
func TestBoundedAndRecycled(t *testing.T) {
	for _, nbuf := range []int{1, 2, 5} {
		var alive, peak atomic.Int32
		var mu sync.Mutex
		seen := map[*batch.MiniBatch]bool{}
		p, err := New(Config{Buffers: nbuf, Stages: []Stage{{Name: "fill", Workers: 4, Run: func(ctx context.Context, i int, mb *batch.MiniBatch) error {
			a := alive.Add(1)
			for {
				pk := peak.Load()
				if a <= pk || peak.CompareAndSwap(pk, a) {
					break
				}
			}
			mu.Lock()
			seen[mb] = true
			mu.Unlock()
			return fill(ctx, i%3, mb)
		}}}})
		if err != nil {
			t.Fatal(err)
		}
		for epoch := 0; epoch < 3; epoch++ {
			it := p.Epoch(context.Background(), epoch, 50)
			for it.Next() {
				time.Sleep(50 * time.Microsecond)
				alive.Add(-1)
				it.Batch().Release()
			}
			it.Close()
			if it.Err() != nil {
				t.Fatal(it.Err())
			}
		}
		if int(peak.Load()) > nbuf {
			t.Errorf("buffers %d: %d batches alive at once", nbuf, peak.Load())
		}
		if len(seen) > nbuf {
			t.Errorf("buffers %d: %d distinct batches over 3 epochs (not recycled)", nbuf, len(seen))
		}
	}
}

// TestSteadyStateAllocations checks that recycled batches are refilled
// without growing: after warm-up an epoch allocates no batch arrays.
func TestSteadyStateAllocations(t *testing.T) {
	p, err := New(Config{Buffers: 3, Stages: []Stage{{Name: "fill", Workers: 1, Run: func(ctx context.Context, i int, mb *batch.MiniBatch) error {
		if err := fill(ctx, 200, mb); err != nil {
			return err
		}
		mb.Features.SetF32(201, 64)
		return nil
	}}}})
	if err != nil {
		t.Fatal(err)
	}
	run := func(step time.Duration) {
		it := p.Epoch(context.Background(), 0, 30)
		for it.Next() {
			time.Sleep(step)
			it.Batch().Release()
		}
		it.Close()
	}
	// The free list hands out the most recently released buffer first, so
	// a fast consumer may leave a spare untouched for an epoch. Warm up
	// with a slow one, which the loader runs ahead of with every buffer.
	run(time.Millisecond)
	for i, mb := range p.pool {
		if cap(mb.Features.F32) < 201*64 {
			t.Fatalf("buffer %d of %d was not used in the warm-up epoch", i, len(p.pool))
		}
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	run(0)
	runtime.ReadMemStats(&after)
	// 30 batches of 201x64 float32 rows would be 1.5 MB if allocated afresh;
	// the epoch's goroutines and channels take a few KiB.
	if d := after.TotalAlloc - before.TotalAlloc; d > 64<<10 {
		t.Errorf("a steady-state epoch allocated %d bytes", d)
	}
}

// TestAlternation checks Buffers 2's promise (GNNAutoScale relies on it):
// batch i+2 is prepared only after batch i is released, and the consumer
// may hold batch i while it takes batch i+1.
func TestAlternation(t *testing.T) {
	var mu sync.Mutex
	released := map[int]bool{}
	p, _ := New(Config{Buffers: 2, Prefetch: 1, Stages: []Stage{{Name: "fill", Workers: 1, Run: func(ctx context.Context, i int, mb *batch.MiniBatch) error {
		mu.Lock()
		defer mu.Unlock()
		if i >= 2 && !released[i-2] {
			return errors.New("prepared before batch i-2 was released")
		}
		return fill(ctx, i, mb)
	}}}})
	it := p.Epoch(context.Background(), 0, 20)
	defer it.Close()
	var prev *batch.MiniBatch
	for it.Next() {
		cur := it.Batch()
		if prev != nil {
			mu.Lock()
			released[int(prev.Seq)] = true
			mu.Unlock()
			prev.Release()
		}
		prev = cur
	}
	if it.Err() != nil {
		t.Fatal(it.Err())
	}
}

func TestHoldingEveryBuffer(t *testing.T) {
	p, _ := New(Config{Buffers: 2, Stages: []Stage{{Run: fill}}})
	it := p.Epoch(context.Background(), 0, 10)
	defer it.Close()
	it.Next()
	it.Next()
	if it.Next() || it.Err() == nil || !strings.Contains(it.Err().Error(), "holds all 2") {
		t.Fatalf("Err = %v, want the held-buffers error", it.Err())
	}
}

func TestConfigErrors(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{}, "no stages"},
		{Config{Stages: []Stage{{Name: "x"}}}, "no Run"},
		{Config{Stages: []Stage{{Run: fill}, {Run: fill, Workers: 2}}}, "only the first"},
		{Config{Stages: []Stage{{Run: fill}}, Buffers: -1}, "negative"},
	} {
		if _, err := New(c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want %q", err, c.want)
		}
	}
}

// TestDone: the first stage ends an epoch of unknown length.
func TestDone(t *testing.T) {
	base := runtime.NumGoroutine()
	next := 0
	p, _ := New(Config{Buffers: 2, Stages: []Stage{{Workers: 1, Run: func(ctx context.Context, i int, mb *batch.MiniBatch) error {
		if next >= 7 {
			return Done
		}
		next++
		return fill(ctx, i, mb)
	}}, {Run: func(context.Context, int, *batch.MiniBatch) error { return nil }}}})
	it := p.Epoch(context.Background(), 0, math.MaxInt)
	n := 0
	for it.Next() {
		if int(it.Batch().Seq) != n {
			t.Fatalf("batch %d at position %d", it.Batch().Seq, n)
		}
		it.Batch().Release()
		n++
	}
	it.Close()
	if n != 7 || it.Err() != nil {
		t.Fatalf("%d batches, err %v; want 7 and none", n, it.Err())
	}
	waitGoroutines(t, base)
}

// TestFreeListLIFO checks that the free list hands out the buffer released
// last first (hot buffers stay in use, spares stay untouched) and that a
// cancelled wait returns nil.
func TestFreeListLIFO(t *testing.T) {
	f := newFreeList(3)
	a, b, c := &batch.MiniBatch{}, &batch.MiniBatch{}, &batch.MiniBatch{}
	f.put(a)
	f.put(b)
	ctx := context.Background()
	if got := f.get(ctx); got != b {
		t.Fatalf("first get: got %p, want the last put %p", got, b)
	}
	f.put(c)
	f.put(b)
	for i, want := range []*batch.MiniBatch{b, c, a} {
		if got := f.get(ctx); got != want {
			t.Fatalf("get %d: got %p, want %p", i, got, want)
		}
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if got := f.get(cctx); got != nil {
		t.Fatalf("get on an empty list with a cancelled context: got %p, want nil", got)
	}
	f.put(a)
	f.put(c)
	if d := f.drain(); len(d) != 2 || d[0] != a || d[1] != c {
		t.Fatalf("drain: got %v, want [a c]", d)
	}
	if len(f.avail) != 0 {
		t.Fatalf("drain left %d tokens", len(f.avail))
	}
}

// TestCancelStopsNext: once the epoch's context is cancelled Next hands
// out no more batches, even with finished ones queued (a training loop
// stops at the end of the step it is running), Err is the context's
// error, and the queued batches go back to the pipeline.
func TestCancelStopsNext(t *testing.T) {
	base := runtime.NumGoroutine()
	p, _ := New(Config{Prefetch: 4, Stages: []Stage{{Workers: 2, Run: fill}, {Run: func(context.Context, int, *batch.MiniBatch) error { return nil }}}})
	for _, c := range []struct {
		name    string
		timeout bool
	}{{"cancel", false}, {"deadline", true}} {
		var ctx context.Context
		var cancel context.CancelFunc
		if c.timeout {
			ctx, cancel = context.WithTimeout(context.Background(), 50*time.Millisecond)
		} else {
			ctx, cancel = context.WithCancel(context.Background())
		}
		it := p.Epoch(ctx, 0, 100)
		if !it.Next() {
			t.Fatalf("%s: no first batch: %v", c.name, it.Err())
		}
		// The step: meanwhile the pipeline fills its queue.
		deadline := time.Now().Add(5 * time.Second)
		for len(it.out) < cap(it.out) && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		if len(it.out) == 0 {
			t.Fatalf("%s: the queue did not fill", c.name)
		}
		it.Batch().Release()
		if c.timeout {
			<-ctx.Done()
		} else {
			cancel()
		}
		n := 0
		for it.Next() {
			n++
			it.Batch().Release()
		}
		if n != 0 || !errors.Is(it.Err(), ctx.Err()) {
			t.Errorf("%s: %d batches after cancellation, Err %v; want none and %v", c.name, n, it.Err(), ctx.Err())
		}
		it.Close()
		cancel()
	}
	// The buffers came back: a fresh epoch runs to its end.
	it := p.Epoch(context.Background(), 1, 20)
	n := 0
	for it.Next() {
		it.Batch().Release()
		n++
	}
	it.Close()
	if n != 20 || it.Err() != nil {
		t.Fatalf("epoch after a cancelled one: %d batches, err %v", n, it.Err())
	}
	waitGoroutines(t, base)
}

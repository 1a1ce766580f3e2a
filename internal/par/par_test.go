package par

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

func TestWorkers(t *testing.T) {
	if got := Workers(3); got != 3 {
		t.Errorf("Workers(3) = %d", got)
	}
	for _, n := range []int{0, -2} {
		if got := Workers(n); got != runtime.GOMAXPROCS(0) {
			t.Errorf("Workers(%d) = %d, want GOMAXPROCS %d", n, got, runtime.GOMAXPROCS(0))
		}
	}
}

// TestRanges checks that the ranges cover [0, n) in order, without gaps,
// and differ in size by at most one.
func TestRanges(t *testing.T) {
	for _, tc := range []struct{ n, k int }{{10, 3}, {0, 4}, {3, 5}, {7, 1}, {7, 0}, {1 << 20, 16}} {
		b := Ranges(tc.n, tc.k)
		k := max(tc.k, 1)
		if len(b) != k+1 || b[0] != 0 || b[k] != tc.n {
			t.Fatalf("Ranges(%d, %d) = %v", tc.n, tc.k, b)
		}
		lo, hi := tc.n, 0
		for i := 0; i < k; i++ {
			s := b[i+1] - b[i]
			if s < 0 {
				t.Fatalf("Ranges(%d, %d) = %v: decreasing", tc.n, tc.k, b)
			}
			lo, hi = min(lo, s), max(hi, s)
		}
		if hi-lo > 1 {
			t.Errorf("Ranges(%d, %d) = %v: sizes %d to %d", tc.n, tc.k, b, lo, hi)
		}
	}
}

// TestForRunAndTasksCoverOnce checks that every index is handed out
// exactly once, with worker numbers in range, for worker counts below,
// at and above the work.
func TestForRunAndTasksCoverOnce(t *testing.T) {
	for _, tc := range []struct{ k, n int }{{1, 10}, {2, 10}, {4, 3}, {8, 1000}, {3, 0}, {1, 0}} {
		check := func(name string, seen []atomic.Int32, workers *sync.Map) {
			t.Helper()
			for i := range seen {
				if c := seen[i].Load(); c != 1 {
					t.Errorf("%s k=%d n=%d: index %d seen %d times", name, tc.k, tc.n, i, c)
				}
			}
			workers.Range(func(w, _ any) bool {
				if w.(int) < 0 || w.(int) >= max(tc.k, 1) {
					t.Errorf("%s k=%d n=%d: worker %d out of range", name, tc.k, tc.n, w)
				}
				return true
			})
		}
		seen := make([]atomic.Int32, tc.n)
		var ws sync.Map
		For(tc.k, tc.n, func(w, lo, hi int) {
			ws.Store(w, true)
			for i := lo; i < hi; i++ {
				seen[i].Add(1)
			}
		})
		check("For", seen, &ws)

		seen = make([]atomic.Int32, tc.n)
		ws = sync.Map{}
		Run(tc.k, tc.n, func(w, i int) {
			ws.Store(w, true)
			seen[i].Add(1)
		})
		check("Run", seen, &ws)

		seen = make([]atomic.Int32, tc.n)
		ws = sync.Map{}
		if err := Tasks(context.Background(), tc.k, tc.n, func(w, i int) {
			ws.Store(w, true)
			seen[i].Add(1)
		}); err != nil {
			t.Fatalf("Tasks k=%d n=%d: %v", tc.k, tc.n, err)
		}
		check("Tasks", seen, &ws)
	}
}

// TestTasksStopsOnCancel checks that a cancelled context stops Tasks
// before all tasks run and that it reports the cancellation.
func TestTasksStopsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var ran atomic.Int32
	err := Tasks(ctx, 2, 1000, func(_, i int) {
		if ran.Add(1) == 10 {
			cancel()
		}
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Tasks after cancel: err %v, want context.Canceled", err)
	}
	if r := ran.Load(); r >= 1000 {
		t.Fatalf("Tasks ran all %d tasks after cancel", r)
	}
	// Already cancelled: nothing runs.
	ran.Store(0)
	if err := Tasks(ctx, 2, 5, func(int, int) { ran.Add(1) }); !errors.Is(err, context.Canceled) || ran.Load() != 0 {
		t.Fatalf("Tasks on a cancelled context: err %v, %d tasks ran", err, ran.Load())
	}
}

package par

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestNestedRegionsFinish runs regions inside regions, wider than the
// pool, while other pool tasks block until the regions are done: a task
// must never wait in the pool's queue behind tasks that wait for it.
func TestNestedRegionsFinish(t *testing.T) {
	release := make(chan struct{})
	var blocked sync.WaitGroup
	for range 3 {
		blocked.Add(1)
		Go(func() {
			defer blocked.Done()
			<-release // holds a worker (or a goroutine of its own) until the end
		})
	}
	done := make(chan int64)
	go func() {
		var sum atomic.Int64
		For(4, 40, func(_, lo, hi int) {
			for i := lo; i < hi; i++ {
				For(3, 10, func(_, a, b int) {
					for j := a; j < b; j++ {
						sum.Add(int64(i*10 + j))
					}
				})
			}
		})
		Run(3, 5, func(_, i int) {
			Run(2, 4, func(_, j int) { sum.Add(int64(1000 + i*4 + j)) })
		})
		done <- sum.Load()
	}()
	select {
	case got := <-done:
		// Σ over i < 40, j < 10 of 10i+j, plus Σ over 20 tasks of 1000+task.
		if want := int64(79800 + 20*1000 + 190); got != want {
			t.Errorf("nested regions summed %d, want %d", got, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("nested regions did not finish: a task waited behind the tasks waiting for it")
	}
	close(release)
	blocked.Wait()
}

// TestGoTakesAnIdleWorker checks that Go hands a task to an idle pool
// worker (which is then no longer idle) rather than to a new goroutine.
func TestGoTakesAnIdleWorker(t *testing.T) {
	For(2, 2, func(int, int, int) {}) // starts the pool
	deadline := time.Now().Add(5 * time.Second)
	for idle.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	before := idle.Load()
	if before == 0 {
		t.Fatal("no pool worker became idle")
	}
	hold, started := make(chan struct{}), make(chan struct{})
	Go(func() {
		close(started)
		<-hold
	})
	<-started
	if got := idle.Load(); got != before-1 {
		t.Errorf("idle workers %d while the task runs, want %d: it did not take one", got, before-1)
	}
	close(hold)
}

// TestEachRunsEveryWorkerOnce checks Each for no, one and more workers
// than the pool has.
func TestEachRunsEveryWorkerOnce(t *testing.T) {
	for _, k := range []int{0, 1, 2, 5} {
		counts := make([]atomic.Int32, k)
		Each(k, func(w int) { counts[w].Add(1) })
		for w := range counts {
			if c := counts[w].Load(); c != 1 {
				t.Errorf("Each(%d): worker %d ran %d times", k, w, c)
			}
		}
	}
}

// TestEachWaitsForSlowWorkers checks that Each returns only once every
// worker is done, whether they finish within its spin or long after it
// (when it blocks), and before or after the caller's own part.
func TestEachWaitsForSlowWorkers(t *testing.T) {
	for _, tc := range []struct {
		name          string
		caller, other time.Duration
	}{
		{"others within the spin", 0, spinDelay / 4},
		{"others past the spin", 0, 20 * spinDelay},
		{"caller last", 20 * spinDelay, 0},
		{"all quick", 0, 0},
	} {
		for range 20 {
			var finished atomic.Int32
			Each(3, func(w int) {
				d := tc.other
				if w == 0 {
					d = tc.caller
				}
				time.Sleep(d)
				finished.Add(1)
			})
			if n := finished.Load(); n != 3 {
				t.Fatalf("%s: Each returned with %d of 3 workers done", tc.name, n)
			}
		}
	}
}

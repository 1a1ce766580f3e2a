package par

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// The worker pool behind Go and Each (so For, Tasks and Run, and the
// tensor kernels' parallel regions). Parallel regions follow one
// another closely (a partitioning run has hundreds, many under a tenth of
// a millisecond; a training step runs a kernel region after another).
// Starting goroutines for each region wakes parked OS threads, and on the
// virtual machines measured a region's second goroutine then started
// 30-55 µs late, as long as many regions themselves. Pool workers instead
// spin for spinDelay after each task, as OpenBLAS's and OpenMP's threads
// do, so a region that follows another starts on every core at once; then
// they park. (The Go ecosystem's worker pools, ants for one, park idle
// workers on a channel or a condition variable: the wake-up this avoids.)
// Measured (AMD EPYC Zen 4 VM, 2 vCPUs): a two-way region of 20-200 µs a
// side with 10-200 µs of serial work between regions took 31-55 µs longer
// than its work with a goroutine a side, 1-6 µs longer with a spinning
// worker; partitioning email-Enron and wave at K = 4 on two workers took
// 3 and 2 % less time (medians of 40 runs alternated in one process; the
// fastest run 9 and 2 % less).
var (
	poolOnce sync.Once
	tasks    chan func()
	// idle counts the workers waiting for a task and not yet claimed:
	// Go hands a task to the pool only after claiming one of them, so
	// a queued task never waits behind running ones (a task that starts
	// a region of its own and waits for it cannot deadlock the pool).
	idle atomic.Int64
)

// spinDelay is how long a pool worker spins for a task before parking.
// (200 µs and 1 ms were measured too: partitioning was no faster.)
const spinDelay = 50 * time.Microsecond

func startPool() {
	poolOnce.Do(func() {
		n := max(runtime.GOMAXPROCS(0)-1, 1)
		tasks = make(chan func(), n)
		for range n {
			go poolWorker()
		}
	})
}

func poolWorker() {
	for {
		idle.Add(1)
		var task func()
		deadline := time.Now().Add(spinDelay)
		for task == nil && time.Now().Before(deadline) {
			select {
			case task = <-tasks:
			default:
				runtime.Gosched()
			}
		}
		if task == nil {
			task = <-tasks
		}
		task()
	}
}

// Go runs task on another goroutine: a pool worker if one is idle (at
// once if it is spinning), else a new goroutine.
func Go(task func()) {
	startPool()
	for {
		n := idle.Load()
		if n <= 0 {
			go task()
			return
		}
		if idle.CompareAndSwap(n, n-1) {
			tasks <- task
			return
		}
	}
}

// Each runs fn(0), …, fn(k-1) at once, fn(0) on the calling goroutine and
// the others as Go does, and waits for all of them.
//
// It waits spinning, as the workers do, for up to spinDelay before it
// blocks. A caller that blocks at once lets its thread sleep; the worker
// that finishes last then wakes it onto the worker's own processor (Go
// runs a goroutine readied by another on the readier's P), and the
// worker, yielding in its spin, waits on the global queue for the
// sleeping thread to wake: after a region of 20 µs, the next region's
// second worker started 20 µs late, against 0.6 µs with the spin (AMD
// EPYC Zen 3 VM, 2 vCPUs, medians of 300), and 9-32 % of a
// two-thread GEMM's tasks found the worker parked, 4-26 % with it.
// Xᵀ·dY of 4096×128 by 4096×256 at two threads, 100 calls back to back:
// 1.02-1.04× (medians of 12 alternated rounds); partitioning unchanged.
func Each(k int, fn func(w int)) {
	if k <= 1 {
		if k == 1 {
			fn(0)
		}
		return
	}
	var left atomic.Int64
	left.Store(int64(k - 1))
	done := make(chan struct{})
	for w := 1; w < k; w++ {
		Go(func() {
			defer func() {
				if left.Add(-1) == 0 {
					close(done)
				}
			}()
			fn(w)
		})
	}
	fn(0)
	for deadline := time.Now().Add(spinDelay); left.Load() > 0 && time.Now().Before(deadline); {
		runtime.Gosched()
	}
	<-done
}

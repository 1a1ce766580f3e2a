package tensor

import (
	"fmt"
	"math/bits"
	"runtime"
	"runtime/debug"
	"sync"
	"time"
)

// parallel runs f(0), …, f(n-1) concurrently (f(0) on the calling
// goroutine) and waits for all of them. A panic in any f is recovered and
// returned as an error, so a bug in a kernel never kills the process from a
// worker goroutine.
func parallel(n int, f func(w int)) (err error) {
	if n <= 1 {
		return protect(0, f)
	}
	var wg sync.WaitGroup
	errs := make([]error, n)
	startPool()
	for w := 1; w < n; w++ {
		wg.Add(1)
		task := func() {
			defer wg.Done()
			errs[w] = protect(w, f)
		}
		select {
		case tasks <- task: // a pool worker takes it, at once if it is spinning
		default:
			go task()
		}
	}
	errs[0] = protect(0, f)
	wg.Wait()
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// The worker pool. Kernels run one parallel region after another (a GEMM,
// then a bias add, then its backward products...), each a millisecond or
// so. Starting goroutines for each region means waking parked OS threads,
// which on a loaded machine can cost as much as the region itself. Pool
// workers instead spin for a short while after each task, as OpenBLAS's
// threads do, so back-to-back regions start at once; then they park.
var (
	tasks     chan func()
	poolOnce  sync.Once
	spinDelay = 50 * time.Microsecond
)

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
		task := <-tasks
		for task != nil {
			task()
			task = nil
			deadline := time.Now().Add(spinDelay)
			for task == nil && time.Now().Before(deadline) {
				select {
				case task = <-tasks:
				default:
					runtime.Gosched()
				}
			}
		}
	}
}

func protect(w int, f func(w int)) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("tensor: internal error in worker %d: %v\n%s", w, r, debug.Stack())
		}
	}()
	f(w)
	return nil
}

// split returns the half-open range of the w-th of n near-equal parts of
// [0, total), rounded to multiples of unit (the last part takes the rest).
func split(total, unit, n, w int) (from, to int) {
	units := (total + unit - 1) / unit
	from = min(units*w/n*unit, total)
	to = min(units*(w+1)/n*unit, total)
	return from, to
}

// bufPools recycle the packing buffers of Gemm, which would otherwise be
// allocated (and zeroed) on every call; one pool per power-of-two size.
var bufPools [48]sync.Pool

// getBuf returns a slice of n float32s with unspecified contents.
func getBuf(n int) []float32 {
	c := bits.Len(uint(n))
	if p, ok := bufPools[c].Get().(*[]float32); ok {
		return (*p)[:n]
	}
	return make([]float32, n, 1<<c)
}

// putBuf returns a slice obtained from getBuf to the pool.
func putBuf(b []float32) {
	c := cap(b)
	if c == 0 || c&(c-1) != 0 {
		return // not from getBuf
	}
	bufPools[bits.Len(uint(c))-1].Put(&b)
}

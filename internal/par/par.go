// Package par has the small parallel-loop helpers graphmill's packages share.
package par

import (
	"context"
	"runtime"
	"sync/atomic"
)

// Workers returns n if positive, else runtime.GOMAXPROCS(0).
func Workers(n int) int {
	if n > 0 {
		return n
	}
	return runtime.GOMAXPROCS(0)
}

// Ranges splits [0, n) into k contiguous ranges of near-equal size and
// returns their k+1 boundaries.
func Ranges(n, k int) []int {
	if k < 1 {
		k = 1
	}
	b := make([]int, k+1)
	for i := 0; i <= k; i++ {
		b[i] = int(int64(n) * int64(i) / int64(k))
	}
	return b
}

// For runs fn(w, lo, hi) for the w-th of k contiguous ranges of [0, n) at
// once (see Each) and waits for all of them. With k == 1 it runs inline.
func For(k, n int, fn func(w, lo, hi int)) {
	b := Ranges(n, k)
	if k <= 1 {
		fn(0, 0, n)
		return
	}
	Each(k, func(w int) { fn(w, b[w], b[w+1]) })
}

// Tasks runs fn(i) for i in [0, n) on k workers (see Each) that take tasks
// in order from a shared counter, stopping early when ctx is cancelled. It
// returns ctx.Err() if the context was cancelled before all tasks ran.
func Tasks(ctx context.Context, k, n int, fn func(worker, i int)) error {
	var next atomic.Int64
	work := func(w int) {
		for ctx.Err() == nil {
			i := int(next.Add(1) - 1)
			if i >= n {
				return
			}
			fn(w, i)
		}
	}
	Each(max(1, min(k, n)), work)
	if int(next.Load()) < n {
		return ctx.Err()
	}
	return nil
}

// Run runs fn(w, i) for i in [0, n) on min(k, n) goroutines that take the
// tasks in order (w in [0, k) names the goroutine), and waits for them.
// With k <= 1 or n <= 1 it runs inline, in order, with w = 0: no goroutine
// to wake for work too small to share.
func Run(k, n int, fn func(worker, i int)) {
	if k <= 1 || n <= 1 {
		for i := 0; i < n; i++ {
			fn(0, i)
		}
		return
	}
	_ = Tasks(context.Background(), k, n, fn)
}

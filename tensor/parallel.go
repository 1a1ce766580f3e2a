package tensor

import (
	"fmt"
	"math/bits"
	"runtime/debug"
	"sync"

	"github.com/graphmill/graphmill/internal/par"
)

// parallel runs f(0), …, f(n-1) concurrently (f(0) on the calling
// goroutine, the others on internal/par's pool, whose workers spin a
// while after each task so that back-to-back kernel regions start on
// every core at once) and waits for all of them. A panic in any f is
// recovered and returned as an error, so a bug in a kernel never kills the
// process from a worker goroutine.
func parallel(n int, f func(w int)) (err error) {
	if n <= 1 {
		return protect(0, f)
	}
	errs := make([]error, n)
	par.Each(n, func(w int) { errs[w] = protect(w, f) })
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
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

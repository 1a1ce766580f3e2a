//go:build !noasm

package batch

import (
	"unsafe"

	"github.com/graphmill/graphmill/internal/isa"
)

// hasWidenNT reports whether widenNT can run (AVX2; tests change it).
var hasWidenNT = isa.HasAVX2

// widenNT sets d[i] = s[i] for i < n, n a multiple of 8 and d aligned to
// 64 bytes, with non-temporal stores, and fences them.
//
//go:noescape
func widenNT(d *int64, s *int32, n int)

// widenStream is widen for a large array that is not read again soon
// (SetInputs: a minibatch's input nodes, read when its features are
// gathered, usually minibatches later): with the CPU's streaming stores,
// whole cache lines go to memory without first being read into the cache,
// and the cache keeps the lines the sampler reads again. Measured (Xeon
// with AMX, BenchmarkWiden, 512k ids into arrays far larger than the
// cache): 0.34 ns an id against 0.90 for widen. In the sampler's
// minibatches of [15,10,5] on the 10M-node synthetic graph (645k input
// nodes, alternated in one process) the minibatch took 0.967 and 0.974
// of the time.
func widenStream(d []int64, s []int32) {
	d = d[:len(s)]
	if !hasWidenNT || len(s) < streamMin {
		widen(d, s)
		return
	}
	i := int(-uintptr(unsafe.Pointer(&d[0])) % 64 / 8) // ids before a line's start
	widen(d[:i], s[:i])
	n := (len(s) - i) &^ 7
	widenNT(&d[i], &s[i], n)
	i += n
	widen(d[i:], s[i:])
}

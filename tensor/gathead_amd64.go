//go:build !noasm

package tensor

// headAxpyAVX2 sets o[head k] += c[k]·x[head k] for k < n, heads of m
// vectors of eight, prefetching the row at pf and the line at pf2.
//
//go:noescape
func headAxpyAVX2(n, m int, c, x, o, pf, pf2 *float32)

// headDotAVX2 sets out[k] = x[head k]·y[head k] for k < n, heads of m
// vectors of eight, prefetching the row at pf.
//
//go:noescape
func headDotAVX2(n, m int, x, y, out, pf *float32)

// headKernels reports whether the head kernels may run: AVX2 is there and
// the current kernel set is not the portable one.
func headKernels() bool { return hasAVX2 && ks().name != "generic" }

// spmmRowAVX2 sets o[0:8m] += w[e*wstep]·x[idx[e]*ldx:][:8m] for e < n in
// order (ldx and wstep in bytes, m <= 12), and the same for the values
// after them in the lanes of tail (when not nil) that are negative, the
// row in registers, prefetching the row idx[e+8] while e+8 < lim; then,
// when scale is not nil, multiplies the row by *scale.
//
//go:noescape
func spmmRowAVX2(n, m int, x *float32, ldx int, idx *int32, w *float32, wstep int, o *float32, lim int, tail *int32, scale *float32)

// prefetch asks for the cache line at p.
//
//go:noescape
func prefetch(p *float32)

// spmmRowAVX512 is spmmRowAVX2 for rows of up to 16 vectors of 16 (m <=
// 16) and a tail in the lanes of the bits of tail, the output row in
// registers, prefetching the row idx[e+8] while e+8 < lim.
//
//go:noescape
func spmmRowAVX512(n, m int, x *float32, ldx int, idx *int32, w *float32, wstep int, o *float32, lim int, tail int, scale *float32)

// spmmRowVec512 is kernelSet.spmmRow: spmmRowAVX512 on the slices.
func spmmRowVec512(n, m int, x []float32, ldx int, idx []int32, w []float32, wstep int, o []float32, lim, tail int, mean bool) {
	var scale *float32
	if mean {
		inv := 1 / float32(n)
		scale = &inv
	}
	spmmRowAVX512(n, m, &x[0], ldx, &idx[0], &w[0], wstep, &o[0], lim, tail, scale)
}

// spmmRowsVec512 is kernelSet.spmmRows: spmmRowsAVX512 on the slices.
func spmmRowsVec512(rows int, indptr []int64, idx []int32, w []float32, wstep int, x []float32, ldx int, o []float32, ldo, lim, mean, mask int) {
	spmmRowsAVX512(rows, &indptr[0], &idx[0], &w[0], wstep, &x[0], ldx, &o[0], ldo, lim, mean, mask)
}

// spmmRows16AVX2 sets rows of 16 values, each to its edges' weighted sum
// of rows of x, from zero, in one call (see gathead_amd64.s): spmmRow16AVX2
// on rows [lo, hi) of a CSR without a Go call, a clear and slicing per
// row, which cost more than the kernel on Cora's rows of a few edges.
//
//go:noescape
func spmmRows16AVX2(rows int, indptr *int64, idx *int32, w *float32, wstep int, x *float32, ldx int, o *float32, ldo int, lim int, mean int)

// spmmRowsAVX512 is spmmRows16AVX2 for rows of fewer than 16 values, the
// lanes of mask (AVX-512).
//
//go:noescape
func spmmRowsAVX512(rows int, indptr *int64, idx *int32, w *float32, wstep int, x *float32, ldx int, o *float32, ldo int, lim int, mean int, mask int)

// spmmRow16AVX2 is spmmRowAVX2 for m = 2 (no tail), the output row in
// registers.
//
//go:noescape
func spmmRow16AVX2(n int, x *float32, ldx int, idx *int32, w *float32, wstep int, o *float32, lim int, scale *float32)

//go:build !amd64 || noasm

package tensor

func headAxpyAVX2(n, m int, c, x, o, pf, pf2 *float32) { panic("tensor: no head kernels") }

func headDotAVX2(n, m int, x, y, out, pf *float32) { panic("tensor: no head kernels") }

func headKernels() bool { return false }

func spmmRowAVX2(n, m int, x *float32, ldx int, idx *int32, w *float32, wstep int, o *float32, lim int, tail *int32, scale *float32) {
	panic("tensor: no row kernels")
}

func prefetch(p *float32) {}

func spmmRow16AVX2(n int, x *float32, ldx int, idx *int32, w *float32, wstep int, o *float32, lim int, scale *float32) {
	panic("tensor: no row kernels")
}

func spmmRows16AVX2(rows int, indptr *int64, idx *int32, w *float32, wstep int, x *float32, ldx int, o *float32, ldo int, lim int, mean int) {
	panic("tensor: no row kernels")
}

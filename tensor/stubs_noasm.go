//go:build !amd64 || noasm

package tensor

// Without assembly (architectures other than amd64, or the noasm build tag)
// no set is added to the pure-Go "generic" one that kernels.go's init
// registers (gemmKernelGeneric, axpyGeneric, dotGeneric), so it is the
// only set and the default.

func registerArchKernels() {}

func packTiles(dst, src []float32, lds, w, rows, tiles, stride int) {
	packTilesGeneric(dst, src, lds, w, rows, tiles, stride)
}

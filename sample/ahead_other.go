//go:build !amd64 || noasm

package sample

// aheadKernels reports whether drawAhead has kernels: not here.
var aheadKernels = false

// aheadRanges does nothing: drawAhead's Go loop reads every range.
func aheadRanges(grp *aheadGroup, a, b int) (uint64, int) { return 0, a }

// aheadMasks does nothing: drawAhead's Go loop sets every mask.
func aheadMasks(grp *aheadGroup, a, j, b int, e int64) (int64, int) { return e, j }

//go:build !noasm

package rng

import "golang.org/x/sys/cpu"

// The vector lanes kernels: written in assembly because the draws are
// 64x64->128-bit products, which Go's compiler does not vectorize; in
// vector registers they take four 32x32-bit multiplies per lane.
var (
	hasAVX2   = cpu.X86.HasAVX2
	hasAVX512 = cpu.X86.HasAVX512F
)

//go:noescape
func lanes16AVX2(dst *uint16, draws int, s uint64)

//go:noescape
func lanes16AVX512(dst *uint16, draws int, s uint64)

// lanesFast writes the lanes of as many whole draws of the stream at
// state s as fit dst in groups of four (AVX2) or eight (AVX-512), and
// returns how many draws it wrote (0 without those instruction sets).
func lanesFast(dst []uint16, s uint64) int {
	switch {
	case hasAVX512 && len(dst) >= 32:
		d := len(dst) / 32 * 8
		lanes16AVX512(&dst[0], d, s)
		return d
	case hasAVX2 && len(dst) >= 16:
		d := len(dst) / 16 * 4
		lanes16AVX2(&dst[0], d, s)
		return d
	}
	return 0
}

//go:build !noasm

package rng

import "github.com/graphmill/graphmill/internal/isa"

// The vector lanes kernels: written in assembly because the draws are
// 64x64->128-bit products, which Go's compiler does not vectorize; in
// vector registers they take four 32x32-bit multiplies per lane.
var (
	hasAVX2     = isa.HasAVX2
	hasAVX512   = isa.HasAVX512F
	hasAVX512BW = isa.HasAVX512BW
	// floydScalar: FloydMasks8 draws with its scalar kernel, on CPUs
	// without AVX-512 whose AVX2 is slower at it (isa.HalfWidth256) or
	// missing.
	floydScalar = isa.Scalar && !hasAVX512 && (!hasAVX2 || isa.HalfWidth256)
)

//go:noescape
func lanes16AVX2(dst *uint16, draws int, s uint64)

//go:noescape
func lanes1AVX2(dst *uint16, n int, s uint64)

//go:noescape
func lanes1AVX512(dst *uint16, n int, s uint64)

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

// bitsFast writes the one-bit lanes (Lanes with width 1) of the stream
// at state s to the whole of dst, widened to 16 bits, and returns how
// many draws it took (0, and nothing written, without AVX2). A draw is 64
// lanes: AVX-512 widens 32 bits at a time from a mask register
// (VPMOVM2W), AVX2 16 at a time by comparing a broadcast of them with
// each lane's bit.
func bitsFast(dst []uint16, s uint64) int {
	switch {
	case len(dst) == 0:
		return 0
	case hasAVX512BW:
		lanes1AVX512(&dst[0], len(dst), s)
	case hasAVX2:
		lanes1AVX2(&dst[0], len(dst), s)
	default:
		return 0
	}
	return (len(dst) + 63) / 64
}

//go:noescape
func floydMasks8AVX512(seeds, ds *[8]uint64, k int, masks *[8]uint64) (redo uint64)

//go:noescape
func floydMasks8Scalar(seeds, ds *[8]uint64, k int, masks *[8]uint64) (redo uint64)

//go:noescape
func floydMasks8AVX2(seeds, ds *[8]uint64, k int, masks *[8]uint64) (redo uint64)

// FloydMasksVector reports whether FloydMasks8 draws its lanes side by
// side with a kernel (AVX-512's, AVX2's four lanes at a time, or the
// scalar one's four chains of products) rather than one at a time.
func FloydMasksVector() bool { return hasAVX512 || hasAVX2 || floydScalar }

// floydFast computes FloydMasks8's lanes with the kernel chosen for the
// CPU and returns those to draw again one at a time (all of them without
// one).
func floydFast(seeds, ds *[8]uint64, k int, masks *[8]uint64) uint64 {
	switch {
	case hasAVX512:
		return floydMasks8AVX512(seeds, ds, k, masks)
	case floydScalar:
		return floydMasks8Scalar(seeds, ds, k, masks)
	case hasAVX2:
		return floydMasks8AVX2(seeds, ds, k, masks)
	}
	return 0xff
}

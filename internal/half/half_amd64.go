//go:build !noasm

package half

import "github.com/graphmill/graphmill/internal/isa"

var (
	hasF16C = isa.HasF16C
	hasAVX2 = isa.HasAVX2
)

//go:noescape
func decodeF16F16C(dst *float32, src *uint16, n int)

//go:noescape
func decodeBF16AVX2(dst *float32, src *uint16, n int)

// decodeF16Fast converts a multiple of 8 leading values with F16C and
// returns how many it converted.
func decodeF16Fast(dst []float32, src []uint16) int {
	n := len(dst) &^ 7
	if !hasF16C || n == 0 {
		return 0
	}
	decodeF16F16C(&dst[0], &src[0], n)
	return n
}

// decodeBF16Fast converts a multiple of 8 leading values with AVX2 and
// returns how many it converted.
func decodeBF16Fast(dst []float32, src []uint16) int {
	n := len(dst) &^ 7
	if !hasAVX2 || n == 0 {
		return 0
	}
	decodeBF16AVX2(&dst[0], &src[0], n)
	return n
}

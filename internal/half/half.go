// Package half converts between float32 and the two 16-bit float formats
// graphmill stores (IEEE 754 binary16, numpy's float16, and bfloat16),
// value by value and slice by slice (with F16C/AVX2 on amd64). It is a
// leaf shared by the feature stores and the historical-embedding tables.
package half

import "math"

// F16ToF32 converts an IEEE 754 binary16 (numpy float16) bit pattern to
// float32, exactly (every half is a float32): subnormals become normal
// float32s, infinities stay infinite and NaNs stay NaN with their payload.
func F16ToF32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	man := uint32(h & 0x3ff)
	switch exp {
	case 0:
		// Zero or subnormal: man * 2^-24, exact in float32.
		return math.Float32frombits(sign | math.Float32bits(float32(man)*(1.0/(1<<24))))
	case 31:
		return math.Float32frombits(sign | 0x7f800000 | man<<13)
	}
	return math.Float32frombits(sign | (exp+112)<<23 | man<<13)
}

// F32ToF16 converts a float32 to binary16 with round-to-nearest-even, the
// rounding of numpy's astype(float16): values beyond the largest half
// (65504) round to infinity, tiny values to subnormals or signed zero,
// and NaNs stay (quiet) NaNs keeping the top payload bits.
func F32ToF16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int(b>>23) & 0xff
	man := b & 0x7fffff
	if exp == 0xff {
		if man != 0 {
			return sign | 0x7e00 | uint16(man>>13)
		}
		return sign | 0x7c00
	}
	e := exp - 112 // half exponent field
	if e >= 31 {
		return sign | 0x7c00
	}
	if e <= 0 {
		// Half subnormal (or zero): the value is m * 2^(exp-150) with m
		// the 24-bit significand, i.e. m >> (14-e) units of 2^-24.
		shift := uint(14 - e)
		if exp == 0 || shift > 24 {
			return sign // below half of the smallest subnormal
		}
		m := man | 0x800000
		q := m >> shift
		rem := m & (1<<shift - 1)
		half := uint32(1) << (shift - 1)
		if rem > half || (rem == half && q&1 == 1) {
			q++
		}
		return sign | uint16(q)
	}
	h := uint32(e)<<10 | man>>13
	rem := man & 0x1fff
	if rem > 0x1000 || (rem == 0x1000 && h&1 == 1) {
		h++ // may carry into the exponent, up to infinity: correct
	}
	return sign | uint16(h)
}

// BF16ToF32 converts a bfloat16 bit pattern (the top half of a float32) to
// float32, exactly.
func BF16ToF32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// F32ToBF16 converts a float32 to bfloat16 with round-to-nearest-even (as
// PyTorch does); NaNs stay quiet NaNs.
func F32ToBF16(f float32) uint16 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 {
		return uint16(b>>16) | 0x40
	}
	b += 0x7fff + (b>>16)&1
	return uint16(b >> 16)
}

// DecodeF16 converts len(dst) half-precision values from src to float32.
// On amd64 with F16C it uses the VCVTPH2PS instruction, 8 values at a time
// (exact like F16ToF32, except that signalling NaNs come out quiet).
// Otherwise normal numbers take a branch-free path (rebias the exponent,
// shift the mantissa) and the rest goes through F16ToF32.
func DecodeF16(dst []float32, src []uint16) {
	src = src[:len(dst)]
	k := decodeF16Fast(dst, src)
	dst, src = dst[k:], src[k:]
	for i, h := range src {
		x := uint32(h)
		if e := x & 0x7c00; e != 0 && e != 0x7c00 {
			dst[i] = math.Float32frombits((x&0x8000)<<16 | ((x&0x7fff)<<13 + 112<<23))
			continue
		}
		dst[i] = F16ToF32(h)
	}
}

// DecodeBF16 converts len(dst) bfloat16 values from src to float32 (with
// AVX2 on amd64, 8 values at a time).
func DecodeBF16(dst []float32, src []uint16) {
	src = src[:len(dst)]
	k := decodeBF16Fast(dst, src)
	dst, src = dst[k:], src[k:]
	for i, h := range src {
		dst[i] = math.Float32frombits(uint32(h) << 16)
	}
}

// EncodeF16 converts len(dst) float32 values from src to half precision.
func EncodeF16(dst []uint16, src []float32) {
	src = src[:len(dst)]
	for i, f := range src {
		dst[i] = F32ToF16(f)
	}
}

// Overflow returns the first i where src[i] is finite but dst[i], its
// float16 (bf false) or bfloat16 encoding, is infinite: a value beyond
// the type's range (float16's largest is 65504); -1 when there is none.
func Overflow(dst []uint16, src []float32, bf bool) int {
	mask := uint16(0x7c00) // float16's exponent
	if bf {
		mask = 0x7f80
	}
	src = src[:len(dst)]
	for i, h := range dst {
		if h&mask == mask && !math.IsNaN(float64(src[i])) && !math.IsInf(float64(src[i]), 0) {
			return i
		}
	}
	return -1
}

// EncodeBF16 converts len(dst) float32 values from src to bfloat16.
func EncodeBF16(dst []uint16, src []float32) {
	src = src[:len(dst)]
	for i, f := range src {
		dst[i] = F32ToBF16(f)
	}
}

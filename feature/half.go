package feature

import "github.com/graphmill/graphmill/internal/half"

// The half-precision codecs live in internal/half, a leaf shared with the
// historical-embedding tables (history); these are their public names.

// F16ToF32 converts an IEEE 754 binary16 (numpy float16) bit pattern to
// float32, exactly (every half is a float32): subnormals become normal
// float32s, infinities stay infinite and NaNs stay NaN with their payload.
func F16ToF32(h uint16) float32 { return half.F16ToF32(h) }

// F32ToF16 converts a float32 to binary16 with round-to-nearest-even, the
// rounding of numpy's astype(float16): values beyond the largest half
// (65504) round to infinity, tiny values to subnormals or signed zero,
// and NaNs stay (quiet) NaNs keeping the top payload bits.
func F32ToF16(f float32) uint16 { return half.F32ToF16(f) }

// BF16ToF32 converts a bfloat16 bit pattern (the top half of a float32) to
// float32, exactly.
func BF16ToF32(h uint16) float32 { return half.BF16ToF32(h) }

// F32ToBF16 converts a float32 to bfloat16 with round-to-nearest-even (as
// PyTorch does); NaNs stay quiet NaNs.
func F32ToBF16(f float32) uint16 { return half.F32ToBF16(f) }

// DecodeF16 converts len(dst) half-precision values from src to float32
// (with F16C on amd64, 8 values at a time).
func DecodeF16(dst []float32, src []uint16) { half.DecodeF16(dst, src) }

// DecodeBF16 converts len(dst) bfloat16 values from src to float32 (with
// AVX2 on amd64, 8 values at a time).
func DecodeBF16(dst []float32, src []uint16) { half.DecodeBF16(dst, src) }

// EncodeF16 converts len(dst) float32 values from src to half precision.
func EncodeF16(dst []uint16, src []float32) { half.EncodeF16(dst, src) }

// EncodeBF16 converts len(dst) float32 values from src to bfloat16.
func EncodeBF16(dst []uint16, src []float32) { half.EncodeBF16(dst, src) }

package half

import (
	"testing"

	"github.com/graphmill/graphmill/internal/rng"
)

// BenchmarkDecode converts rows of 128 values; SetBytes counts the float32
// output.
func BenchmarkDecode(b *testing.B) {
	const n = 128
	r := rng.New(1)
	src := make([]uint16, n)
	f := make([]float32, n)
	for i := range src {
		src[i] = F32ToF16(r.Normalish())
	}
	for _, tc := range []struct {
		name string
		fn   func([]float32, []uint16)
	}{{"f16", DecodeF16}, {"bf16", DecodeBF16}} {
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(4 * n)
			for i := 0; i < b.N; i++ {
				tc.fn(f, src)
			}
		})
	}
}

package batch

import (
	"fmt"
	"testing"
)

// TestWidenStream: the streaming widen (where the CPU has it) and the
// plain one write the same ids, whatever the destination's alignment and
// the length's remainder, and nothing past the end.
func TestWidenStream(t *testing.T) {
	kernels := []bool{false}
	if hasWidenNT {
		kernels = append(kernels, true)
	}
	defer func(h bool) { hasWidenNT = h }(hasWidenNT)
	for _, nt := range kernels {
		hasWidenNT = nt
		for _, n := range []int{0, 1, 7, streamMin - 1, streamMin, streamMin + 1, streamMin + 13, 3*streamMin + 5} {
			for shift := range 8 {
				t.Run(fmt.Sprintf("nt=%v/n=%d/shift=%d", nt, n, shift), func(t *testing.T) {
					s := make([]int32, n)
					for i := range s {
						s[i] = int32(i*2654435761) ^ int32(i) // both signs
					}
					buf := make([]int64, n+16)
					for i := range buf {
						buf[i] = -7
					}
					d := buf[shift : shift+n]
					widenStream(d, s)
					for i, v := range s {
						if d[i] != int64(v) {
							t.Fatalf("d[%d] = %d, want %d", i, d[i], v)
						}
					}
					for i := shift + n; i < len(buf); i++ {
						if buf[i] != -7 {
							t.Fatalf("wrote past the end at %d", i-shift)
						}
					}
				})
			}
		}
	}
}

// BenchmarkWiden: ids widened a second, plain and streaming, into an
// array much larger than the cache (what a 10M-node graph's minibatch of
// [15,10,5] widens), each pass into the next of several arrays.
func BenchmarkWiden(b *testing.B) {
	const n, arrays = 1 << 19, 16
	s := make([]int32, n)
	d := make([][]int64, arrays)
	for i := range d {
		d[i] = make([]int64, n)
	}
	for _, k := range []struct {
		name string
		f    func([]int64, []int32)
	}{{"plain", widen}, {"stream", widenStream}} {
		b.Run(k.name, func(b *testing.B) {
			b.SetBytes(12 * n)
			for i := range b.N {
				k.f(d[i%arrays], s)
			}
		})
	}
}

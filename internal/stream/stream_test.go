package stream

import (
	"fmt"
	"slices"
	"testing"
)

// TestCopyWiden: with and without the streaming kernels (where the CPU
// has them), Copy and Widen write what the plain loops do, whatever the
// destination's alignment and the length's remainder, and nothing past
// the end.
func TestCopyWiden(t *testing.T) {
	kernels := []bool{false}
	if ok {
		kernels = append(kernels, true)
	}
	defer func(k bool) { ok = k }(ok)
	for _, k := range kernels {
		ok = k
		for _, n := range []int{0, 1, 7, 8, 9, 15, 16, 17, 63, 64, 65, 1000, 4099} {
			for shift := range Line {
				t.Run(fmt.Sprintf("stream=%v/n=%d/shift=%d", k, n, shift), func(t *testing.T) {
					s32 := make([]int32, n)
					s64 := make([]int64, n)
					for i := range s32 {
						s32[i] = int32(i*2654435761) ^ int32(i) // both signs
						s64[i] = int64(s32[i]) * 3
					}
					for _, c := range []struct {
						name  string
						write func(d []int64)
						want  []int64
					}{
						{"Widen", func(d []int64) { Widen(d, s32) }, func() []int64 {
							w := make([]int64, n)
							for i, v := range s32 {
								w[i] = int64(v)
							}
							return w
						}()},
						{"Copy", func(d []int64) { Copy(d, s64) }, s64},
					} {
						buf := make([]int64, n+2*Line)
						for i := range buf {
							buf[i] = -7
						}
						d := buf[shift : shift+n+Line]
						c.write(d)
						Fence()
						if !slices.Equal(d[:n], c.want) {
							t.Fatalf("%s: wrong values", c.name)
						}
						for i := shift + n; i < len(buf); i++ {
							if buf[i] != -7 {
								t.Fatalf("%s wrote past the end at %d", c.name, i-shift)
							}
						}
					}
				})
			}
		}
	}
}

// TestHead: Head counts the elements before the first 64-byte boundary.
func TestHead(t *testing.T) {
	buf := make([]int64, 64)
	h0 := Head(buf)
	for i := range 2 * Line {
		if got, want := Head(buf[i:]), (h0-i%Line+Line)%Line; got != want {
			t.Errorf("Head(buf[%d:]) = %d, want %d", i, got, want)
		}
	}
	if Head(nil) != 0 {
		t.Error("Head(nil) != 0")
	}
}

// BenchmarkWiden: ids widened a second, plain and streaming, into arrays
// much larger than the cache (what a 10M-node graph's minibatch of
// [15,10,5] widens), each pass into the next of several arrays.
func BenchmarkWiden(b *testing.B) {
	const n, arrays = 1 << 19, 16
	s := make([]int32, n)
	d := make([][]int64, arrays)
	for i := range d {
		d[i] = make([]int64, n)
	}
	kernels := []bool{false}
	if ok {
		kernels = append(kernels, true)
	}
	defer func(k bool) { ok = k }(ok)
	for _, k := range kernels {
		b.Run(fmt.Sprintf("stream=%v", k), func(b *testing.B) {
			ok = k
			b.SetBytes(12 * n)
			for i := range b.N {
				Widen(d[i%arrays], s)
			}
			Fence()
		})
	}
}

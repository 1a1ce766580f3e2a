//go:build !noasm

package rng

import (
	"fmt"
	"slices"
	"testing"
)

// TestLanesKernels checks every vector lanes kernel this machine runs
// against the one-draw-at-a-time loop, on lengths around their group
// sizes, and that the stream continues where the draws end.
func TestLanesKernels(t *testing.T) {
	avx2, avx512, avx512bw := hasAVX2, hasAVX512, hasAVX512BW
	defer func() { hasAVX2, hasAVX512, hasAVX512BW = avx2, avx512, avx512bw }()
	lanes := func(n int, seed uint64, w uint) ([]uint16, uint64) {
		r := New(seed)
		out := make([]uint16, n)
		r.Lanes(out, w)
		return out, r.Uint64()
	}
	for _, k := range []struct {
		name          string
		ok            bool
		a2, a512, abw bool
	}{
		{"avx2", avx2, true, false, false},
		{"avx512", avx512, false, true, false},
		{"avx512bw", avx512bw, false, false, true},
	} {
		if !k.ok {
			t.Logf("%s: not on this machine", k.name)
			continue
		}
		for _, w := range []uint{1, 16} {
			for _, n := range []int{15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 128, 1000, 4099} {
				seed := uint64(n) * 77
				hasAVX2, hasAVX512, hasAVX512BW = false, false, false
				want, wantNext := lanes(n, seed, w)
				hasAVX2, hasAVX512, hasAVX512BW = k.a2, k.a512, k.abw
				got, gotNext := lanes(n, seed, w)
				if !slices.Equal(got, want) || gotNext != wantNext {
					t.Fatalf("%s width %d n=%d: lanes or the stream after them differ from the scalar loop", k.name, w, n)
				}
			}
		}
	}
}

func BenchmarkLanes(b *testing.B) {
	avx2, avx512, avx512bw := hasAVX2, hasAVX512, hasAVX512BW
	defer func() { hasAVX2, hasAVX512, hasAVX512BW = avx2, avx512, avx512bw }()
	for _, n := range []int{100, 4096} {
		buf := make([]uint16, n)
		for _, w := range []uint{16, 1} {
			for _, k := range []struct {
				name          string
				a2, a512, abw bool
			}{{"scalar", false, false, false}, {"avx2", avx2, false, false}, {"avx512", false, avx512, avx512bw}} {
				b.Run(fmt.Sprintf("n%d/width%d/%s", n, w, k.name), func(b *testing.B) {
					hasAVX2, hasAVX512, hasAVX512BW = k.a2, k.a512, k.abw
					r := New(1)
					b.SetBytes(int64(2 * len(buf)))
					for range b.N {
						r.Lanes(buf, w)
					}
				})
			}
		}
	}
}

//go:build !noasm

package rng

import (
	"slices"
	"testing"
)

// TestLanesKernels checks every vector lanes kernel this machine runs
// against the one-draw-at-a-time loop, on lengths around their group
// sizes, and that the stream continues where the draws end.
func TestLanesKernels(t *testing.T) {
	avx2, avx512 := hasAVX2, hasAVX512
	defer func() { hasAVX2, hasAVX512 = avx2, avx512 }()
	lanes := func(n int, seed uint64) ([]uint16, uint64) {
		r := New(seed)
		out := make([]uint16, n)
		r.Lanes16(out)
		return out, r.Uint64()
	}
	for _, k := range []struct {
		name     string
		ok       bool
		a2, a512 bool
	}{
		{"avx2", avx2, true, false},
		{"avx512", avx512, false, true},
	} {
		if !k.ok {
			t.Logf("%s: not on this machine", k.name)
			continue
		}
		for _, n := range []int{15, 16, 17, 31, 32, 33, 63, 64, 100, 1000, 4099} {
			seed := uint64(n) * 77
			hasAVX2, hasAVX512 = false, false
			want, wantNext := lanes(n, seed)
			hasAVX2, hasAVX512 = k.a2, k.a512
			got, gotNext := lanes(n, seed)
			if !slices.Equal(got, want) || gotNext != wantNext {
				t.Fatalf("%s n=%d: lanes or the stream after them differ from the scalar loop", k.name, n)
			}
		}
	}
}

func BenchmarkLanes16(b *testing.B) {
	avx2, avx512 := hasAVX2, hasAVX512
	defer func() { hasAVX2, hasAVX512 = avx2, avx512 }()
	buf := make([]uint16, 4096)
	for _, k := range []struct {
		name     string
		a2, a512 bool
	}{{"scalar", false, false}, {"avx2", avx2, false}, {"avx512", false, avx512}} {
		b.Run(k.name, func(b *testing.B) {
			hasAVX2, hasAVX512 = k.a2, k.a512
			r := New(1)
			b.SetBytes(int64(2 * len(buf)))
			for range b.N {
				r.Lanes16(buf)
			}
		})
	}
}

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

// TestFloydMasks8 checks FloydMasks8 against FloydMask lane by lane,
// with each kernel the CPU has (scalar, AVX2, AVX-512) and without
// (every lane drawn again one at a time), and each kernel alone on every
// lane, over every fanout and degree the samplers give it, random seeds
// and partial lane sets.
func TestFloydMasks8(t *testing.T) {
	avx2, avx512, scalar := hasAVX2, hasAVX512, floydScalar
	defer func() { hasAVX2, hasAVX512, floydScalar = avx2, avx512, scalar }()
	for _, kc := range []struct {
		name         string
		on           bool
		a2, a512, sc bool
		kernel       func(seeds, ds *[8]uint64, k int, masks *[8]uint64) uint64
	}{
		{"one at a time", true, false, false, false, nil},
		{"scalar", true, false, false, true, floydMasks8Scalar},
		{"avx2", avx2, true, false, false, floydMasks8AVX2},
		{"avx512", avx512, false, true, false, floydMasks8AVX512},
	} {
		if !kc.on {
			t.Logf("%s: not on this machine", kc.name)
			continue
		}
		hasAVX2, hasAVX512, floydScalar = kc.a2, kc.a512, kc.sc
		var r Rand
		r.Seed(42)
		for k := 1; k <= 64; k++ {
			for trial := 0; trial < 40; trial++ {
				var seeds, ds, got, kern [8]uint64
				lanes := uint8(r.Uint64())
				if trial == 0 {
					lanes = 0xff
				}
				for i := range 8 {
					seeds[i] = r.Uint64()
					ds[i] = uint64(k + int(r.Uint64()%uint64(65-k)))
				}
				FloydMasks8(&seeds, &ds, k, lanes, &got)
				if kc.kernel != nil {
					if redo := kc.kernel(&seeds, &ds, k, &kern); redo != 0 {
						t.Errorf("%s, k %d: the kernel asks to redo lanes %08b", kc.name, k, redo)
					}
				}
				for i := range 8 {
					var q Rand
					q.Seed(seeds[i])
					want := q.FloydMask(int(ds[i]), k)
					if lanes>>i&1 != 0 && got[i] != want {
						t.Fatalf("%s, k %d lane %d (d %d): FloydMasks8 %x, FloydMask %x", kc.name, k, i, ds[i], got[i], want)
					}
					if kc.kernel != nil && kern[i] != want {
						t.Fatalf("%s, k %d lane %d (d %d): kernel %x, FloydMask %x", kc.name, k, i, ds[i], kern[i], want)
					}
				}
			}
		}
	}
}

// BenchmarkFloydMasks8: eight FloydMask(20, 5) lanes with their seeding,
// side by side (each kernel the CPU has: scalar, AVX2, AVX-512) and one
// at a time.
func BenchmarkFloydMasks8(b *testing.B) {
	avx2, avx512, scalar := hasAVX2, hasAVX512, floydScalar
	defer func() { hasAVX2, hasAVX512, floydScalar = avx2, avx512, scalar }()
	var seeds, ds, masks [8]uint64
	for i := range 8 {
		seeds[i], ds[i] = uint64(i)*0x9e3779b97f4a7c15, 20
	}
	for _, kc := range []struct {
		name     string
		on       bool
		a2, a512 bool
	}{{"one-at-a-time", true, false, false}, {"scalar", true, false, false}, {"avx2", avx2, true, false}, {"avx512", avx512, false, true}} {
		if !kc.on {
			continue
		}
		b.Run(kc.name, func(b *testing.B) {
			hasAVX2, hasAVX512, floydScalar = kc.a2, kc.a512, kc.name == "scalar"
			for i := 0; i < b.N; i++ {
				seeds[i&7]++
				FloydMasks8(&seeds, &ds, 5, 0xff, &masks)
			}
		})
	}
}

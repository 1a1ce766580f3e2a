package rng

import (
	"fmt"
	"math"
	"math/bits"
	"testing"
)

func TestIntNUniform(t *testing.T) {
	r := New(1)
	const n, draws = 10, 200000
	var c [n]int
	for i := 0; i < draws; i++ {
		v := r.IntN(n)
		if v < 0 || v >= n {
			t.Fatalf("IntN out of range: %d", v)
		}
		c[v]++
	}
	chi := 0.0
	exp := float64(draws) / n
	for _, x := range c {
		chi += (float64(x) - exp) * (float64(x) - exp) / exp
	}
	if chi > 27.9 { // 99.9% quantile of chi-squared with 9 degrees of freedom
		t.Fatalf("chi-squared %.1f: not uniform %v", chi, c)
	}
}

func TestNormalishMoments(t *testing.T) {
	r := New(7)
	var s, s2 float64
	const k = 400000
	for i := 0; i < k; i++ {
		x := float64(r.Normalish())
		s += x
		s2 += x * x
	}
	mean, vr := s/k, s2/k-(s/k)*(s/k)
	if math.Abs(mean) > 0.01 || math.Abs(vr-1) > 0.02 {
		t.Fatalf("mean %.4f var %.4f", mean, vr)
	}
}

func TestDeriveDistinct(t *testing.T) {
	seen := map[uint64]bool{}
	for i := uint64(0); i < 1000; i++ {
		s := Derive(42, i)
		if seen[s] {
			t.Fatal("repeated derived seed")
		}
		seen[s] = true
	}
	if New(3).Uint64() != New(3).Uint64() || New(3).Uint64() == New(4).Uint64() {
		t.Fatal("seeding is not deterministic or ignores the seed")
	}
}

func BenchmarkIntN(b *testing.B) {
	r := New(1)
	s := 0
	for i := 0; i < b.N; i++ {
		s += r.IntN(1000003)
	}
	_ = s
}

// BenchmarkFloydMask draws k of d neighbours as the sampler does, one
// node's seed a call. Shortening the mask's dependency chain took these
// cases to 0.64-0.89 of the old loop's time, the two side by side in two
// runs (d 20, k 5: 8.5-13.3 ns against 10.9-14.7; AMD EPYC Zen 5).
func BenchmarkFloydMask(b *testing.B) {
	for _, dk := range [][2]int{{20, 5}, {40, 10}, {60, 15}, {30, 25}} {
		b.Run(fmt.Sprintf("d=%d/k=%d", dk[0], dk[1]), func(b *testing.B) {
			var r Rand
			var s uint64
			for i := 0; i < b.N; i++ {
				r.Seed(uint64(i))
				s += r.FloydMask(dk[0], dk[1])
			}
			sinkMask = s
		})
	}
}

var sinkMask uint64

// TestLanes16 checks that Lanes16 splits exactly the Uint64 draws, four
// lanes each, lowest first, and continues the stream across calls and
// partial draws.
func TestLanes16(t *testing.T) {
	for _, n := range []int{0, 1, 3, 4, 5, 8, 13, 100, 257} {
		a, b := New(uint64(n)), New(uint64(n))
		got := make([]uint16, n)
		a.Lanes16(got)
		for i := 0; i < n; i += 4 {
			v := b.Uint64()
			for j := i; j < min(i+4, n); j++ {
				if got[j] != uint16(v>>(16*(j-i))) {
					t.Fatalf("n=%d: lane %d = %#x, draw gives %#x", n, j, got[j], uint16(v>>(16*(j-i))))
				}
			}
		}
		if a.Uint64() != b.Uint64() {
			t.Fatalf("n=%d: stream not continued after Lanes16", n)
		}
	}
}

// TestLanes checks Lanes against the draws it splits: with width 1, bit
// i%64 of draw i/64 as 0x8000 or 0, the stream continued after a partial
// draw; with width 16, Lanes16's lanes. Lane agrees with both.
func TestLanes(t *testing.T) {
	for _, w := range []uint{1, 16} {
		per := 64 / int(w)
		for _, n := range []int{0, 1, 63, 64, 65, 100, 128, 1000} {
			a, b := New(uint64(n)+3), New(uint64(n)+3)
			got := make([]uint16, n)
			a.Lanes(got, w)
			for i := 0; i < n; i += per {
				v := b.Uint64()
				for j := i; j < min(i+per, n); j++ {
					var want uint16
					if w == 1 {
						want = uint16(v>>(j-i)&1) << 15
					} else {
						want = uint16(v >> (16 * (j - i)))
					}
					if got[j] != want || Lane(v, j-i, w) != uint64(want) {
						t.Fatalf("width %d, n=%d: lane %d = %#x, Lane gives %#x, draw gives %#x", w, n, j, got[j], Lane(v, j-i, w), want)
					}
				}
			}
			if a.Uint64() != b.Uint64() {
				t.Fatalf("width %d, n=%d: stream not continued after Lanes", w, n)
			}
		}
	}
}

// TestSkip checks that Skip(n) lands where n draws would.
func TestSkip(t *testing.T) {
	for _, n := range []uint64{0, 1, 7, 1000} {
		a, b := New(9), New(9)
		a.Skip(n)
		for range n {
			b.Uint64()
		}
		if a.Uint64() != b.Uint64() {
			t.Fatalf("Skip(%d) is not %d draws", n, n)
		}
	}
}

// TestFloydMask checks FloydMask against Floyd's algorithm over IntN: the
// same set and the same stream afterwards.
func TestFloydMask(t *testing.T) {
	for _, tc := range []struct{ d, k int }{{1, 1}, {2, 1}, {5, 5}, {10, 3}, {17, 16}, {63, 25}, {64, 1}, {64, 64}, {64, 10}} {
		for seed := uint64(0); seed < 200; seed++ {
			a, b := New(seed), New(seed)
			var want uint64
			for j := tc.d - tc.k; j < tc.d; j++ {
				v := uint(a.IntN(j + 1))
				if want>>v&1 != 0 {
					v = uint(j)
				}
				want |= 1 << v
			}
			got := b.FloydMask(tc.d, tc.k)
			if got != want || bits.OnesCount64(got) != tc.k || a.Uint64() != b.Uint64() {
				t.Fatalf("d=%d k=%d seed %d: mask %x, want %x (or streams differ)", tc.d, tc.k, seed, got, want)
			}
			if tc.d < 64 && got>>uint(tc.d) != 0 {
				t.Fatalf("d=%d k=%d: mask %x has bits past d", tc.d, tc.k, got)
			}
		}
	}
}

// TestShuffle checks that Shuffle is a permutation, draws exactly what
// the Fisher-Yates loop it replaced drew (the partitions and batch orders
// seeded before it stay the same), and leaves the stream where that loop
// left it.
func TestShuffle(t *testing.T) {
	for _, n := range []int{0, 1, 2, 7, 100} {
		s := make([]int32, n)
		want := make([]int32, n)
		for i := range s {
			s[i], want[i] = int32(i), int32(i)
		}
		r, ref := New(uint64(n)), New(uint64(n))
		Shuffle(r, s)
		for i := n - 1; i > 0; i-- {
			j := ref.IntN(i + 1)
			want[i], want[j] = want[j], want[i]
		}
		seen := make([]bool, n)
		for i, v := range s {
			if v != want[i] {
				t.Fatalf("n=%d: Shuffle gave %v, the loop %v", n, s, want)
			}
			seen[v] = true
		}
		for v, ok := range seen {
			if !ok {
				t.Fatalf("n=%d: %d missing from %v", n, v, s)
			}
		}
		if r.Uint64() != ref.Uint64() {
			t.Fatalf("n=%d: the stream moved on differently", n)
		}
	}
}

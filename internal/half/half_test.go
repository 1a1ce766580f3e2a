package half

import (
	"math"
	"testing"
)

// refF16 is the value of a half bit pattern computed from the definition.
func refF16(h uint16) float64 {
	s := 1.0
	if h&0x8000 != 0 {
		s = -1
	}
	e := int(h>>10) & 0x1f
	m := float64(h & 0x3ff)
	switch e {
	case 0:
		return s * math.Ldexp(m, -24)
	case 31:
		if m == 0 {
			return s * math.Inf(1)
		}
		return math.NaN()
	}
	return s * math.Ldexp(1024+m, e-25)
}

func TestF16ToF32Exhaustive(t *testing.T) {
	for i := 0; i < 1<<16; i++ {
		h := uint16(i)
		got, want := float64(F16ToF32(h)), refF16(h)
		if math.IsNaN(want) {
			if !math.IsNaN(got) {
				t.Fatalf("%#04x: got %v, want NaN", h, got)
			}
			continue
		}
		if got != want || math.Signbit(got) != math.Signbit(want) {
			t.Fatalf("%#04x: got %v, want %v", h, got, want)
		}
		if back := F32ToF16(float32(got)); back != h {
			t.Fatalf("round trip of %#04x (%v) gave %#04x", h, got, back)
		}
	}
}

// TestF32ToF16Rounding checks round-to-nearest-even at every midpoint
// between consecutive positive halves, and just either side of it.
func TestF32ToF16Rounding(t *testing.T) {
	for h := uint16(0); h < 0x7bff; h++ {
		lo, hi := refF16(h), refF16(h+1)
		mid := float32((lo + hi) / 2) // exact: needs 12 significant bits
		if float64(mid) != (lo+hi)/2 {
			t.Fatalf("midpoint of %#04x not exact", h)
		}
		even := h
		if h&1 == 1 {
			even = h + 1
		}
		if got := F32ToF16(mid); got != even {
			t.Fatalf("midpoint %v between %#04x and %#04x rounds to %#04x, want even %#04x", mid, h, h+1, got, even)
		}
		if got := F32ToF16(-mid); got != even|0x8000 {
			t.Fatalf("-midpoint %v rounds to %#04x, want %#04x", -mid, got, even|0x8000)
		}
		below := math.Nextafter32(mid, 0)
		above := math.Nextafter32(mid, float32(math.Inf(1)))
		if got := F32ToF16(below); got != h {
			t.Fatalf("%v (just below a midpoint) rounds to %#04x, want %#04x", below, got, h)
		}
		if got := F32ToF16(above); got != h+1 {
			t.Fatalf("%v (just above a midpoint) rounds to %#04x, want %#04x", above, got, h+1)
		}
	}
}

func TestF32ToF16Values(t *testing.T) {
	inf := float32(math.Inf(1))
	for _, tc := range []struct {
		f    float32
		want uint16
	}{
		{0, 0},
		{float32(math.Copysign(0, -1)), 0x8000},
		{1, 0x3c00},
		{-2, 0xc000},
		{0.1, 0x2e66},
		{65504, 0x7bff},     // largest half
		{65519.99, 0x7bff},  // below the midpoint to infinity
		{65520, 0x7c00},     // the midpoint rounds to even: infinity
		{1e6, 0x7c00},       // overflow
		{inf, 0x7c00},       //
		{-inf, 0xfc00},      //
		{0x1p-14, 0x0400},   // smallest normal
		{0x1p-24, 0x0001},   // smallest subnormal
		{0x1p-25, 0x0000},   // half of it: tie to even (0)
		{0x1.8p-25, 0x0001}, // above the tie
		{0x1.8p-24, 0x0002}, // 1.5 units: tie to even (2)
		{0x1p-26, 0x0000},
		{1e-10, 0x0000},
		{-1e-10, 0x8000},
		{0x1p-149, 0x0000},    // float32 subnormal
		{0x1.ffcp-15, 0x0400}, // rounds up from subnormal to smallest normal
	} {
		if got := F32ToF16(tc.f); got != tc.want {
			t.Errorf("F32ToF16(%v) = %#04x, want %#04x", tc.f, got, tc.want)
		}
	}
	nan := F32ToF16(float32(math.NaN()))
	if nan&0x7c00 != 0x7c00 || nan&0x3ff == 0 {
		t.Errorf("F32ToF16(NaN) = %#04x, not a NaN", nan)
	}
	// A signalling NaN whose payload sits only in low bits stays a NaN.
	if h := F32ToF16(math.Float32frombits(0x7f800001)); h&0x3ff == 0 {
		t.Errorf("low-payload NaN became %#04x", h)
	}
}

func TestBF16(t *testing.T) {
	for i := 0; i < 1<<16; i++ {
		h := uint16(i)
		f := BF16ToF32(h)
		if math.Float32bits(f) != uint32(h)<<16 {
			t.Fatalf("BF16ToF32(%#04x) bits %#08x", h, math.Float32bits(f))
		}
		if f != f {
			if g := F32ToBF16(f); BF16ToF32(g) == BF16ToF32(g) {
				t.Fatalf("NaN %#04x became %#04x", h, g)
			}
			continue
		}
		if g := F32ToBF16(f); g != h {
			t.Fatalf("round trip of %#04x gave %#04x", h, g)
		}
		// Midpoint to the next pattern (same sign, finite, not the largest).
		if h&0x7fff >= 0x7f7f {
			continue
		}
		mid := math.Float32frombits(uint32(h)<<16 | 0x8000)
		even := h
		if h&1 == 1 {
			even = h + 1
		}
		if g := F32ToBF16(mid); g != even {
			t.Fatalf("midpoint %#08x rounds to %#04x, want %#04x", math.Float32bits(mid), g, even)
		}
		if g := F32ToBF16(math.Float32frombits(uint32(h)<<16 | 0x7fff)); g != h {
			t.Fatalf("below midpoint of %#04x rounds to %#04x", h, g)
		}
		if g := F32ToBF16(math.Float32frombits(uint32(h)<<16 | 0x8001)); g != h+1 {
			t.Fatalf("above midpoint of %#04x rounds to %#04x", h, g)
		}
	}
	for _, tc := range []struct {
		f    float32
		want uint16
	}{
		{1, 0x3f80},
		{math.MaxFloat32, 0x7f80}, // rounds up to infinity
		{float32(math.Inf(-1)), 0xff80},
		{0x1p-133, 0x0001}, // subnormal bfloat16
	} {
		if got := F32ToBF16(tc.f); got != tc.want {
			t.Errorf("F32ToBF16(%v) = %#04x, want %#04x", tc.f, got, tc.want)
		}
	}
}

// TestDecodeExhaustive checks the slice decoders (SIMD where available)
// against the scalar conversions for every bit pattern, at every offset
// of an 8-wide block and in the scalar tail.
func TestDecodeExhaustive(t *testing.T) {
	src := make([]uint16, 1<<16+5)
	for i := range src {
		src[i] = uint16(i * 40503) // a permutation, so neighbours differ
	}
	for _, tc := range []struct {
		name   string
		decode func([]float32, []uint16)
		ref    func(uint16) float32
	}{{"f16", DecodeF16, F16ToF32}, {"bf16", DecodeBF16, BF16ToF32}} {
		for _, off := range []int{0, 3} {
			s := src[off:]
			dst := make([]float32, len(s))
			tc.decode(dst, s)
			for i, h := range s {
				want := tc.ref(h)
				if want != want {
					if dst[i] == dst[i] {
						t.Fatalf("%s: NaN %#04x decoded to %v", tc.name, h, dst[i])
					}
					continue
				}
				if math.Float32bits(dst[i]) != math.Float32bits(want) {
					t.Fatalf("%s: %#04x decoded to %v, want %v", tc.name, h, dst[i], want)
				}
			}
		}
	}
}

func TestSliceCodecs(t *testing.T) {
	src := []float32{1, -2.5, 0.1, 65504, 1e-7, 3.14159}
	h := make([]uint16, len(src))
	back := make([]float32, len(src))
	EncodeF16(h, src)
	DecodeF16(back, h)
	for i := range src {
		if back[i] != F16ToF32(F32ToF16(src[i])) {
			t.Fatalf("f16 slice codec differs at %d", i)
		}
	}
	EncodeBF16(h, src)
	DecodeBF16(back, h)
	for i := range src {
		if back[i] != BF16ToF32(F32ToBF16(src[i])) {
			t.Fatalf("bf16 slice codec differs at %d", i)
		}
	}
}

package tensor

import (
	"fmt"
	"math"
	"testing"

	"github.com/graphmill/graphmill/internal/rng"
)

// dropoutRowsRef is DropoutRows written plainly: per row a stream seeded
// by its key, four 16-bit lanes per draw, lowest first, or for p = 1/2
// one bit per element, 64 per draw (the bit set: kept).
func dropoutRowsRef(dst, mask, x Matrix, p float64, seed uint64, keys []int32) {
	thr := uint64(math.Round(p * 65536))
	factors := [2]float32{0, float32(1 / (1 - p))}
	c := x.Cols
	for i := 0; i < x.Rows; i++ {
		var r rng.Rand
		r.Seed(seed ^ uint64(uint32(keys[i]))*0x9e3779b97f4a7c15)
		var bits uint64
		for j := 0; j < c; j++ {
			var f float32
			if p == 0.5 {
				if j%64 == 0 {
					bits = r.Uint64()
				}
				f = factors[bits&1]
				bits >>= 1
			} else {
				if j&3 == 0 {
					bits = r.Uint64()
				}
				f = factors[(1^((bits&0xffff-thr)>>63))&1]
				bits >>= 16
			}
			if mask.Data != nil {
				mask.Data[i*c+j] = f
			}
			dst.Data[i*c+j] = x.Data[i*c+j] * f
		}
	}
}

// TestDropoutRowsKernel checks that the vectorised DropoutRows draws
// exactly the plain per-row masks: with and without a mask, in place, for
// widths that are and are not multiples of the kernel's step, rows
// narrower and wider than the lane buffer, in every kernel set.
func TestDropoutRowsKernel(t *testing.T) {
	forEachKernel(t, testDropoutRowsKernel)
}

func testDropoutRowsKernel(t *testing.T) {
	for _, tc := range []struct {
		rows, cols int
		p          float64
		inPlace    bool
		withMask   bool
	}{
		{7, 1, 0.5, false, true},
		{33, 5, 0.1, false, false},
		{64, 16, 0.5, true, false},
		{100, 37, 0.25, false, true},
		{300, 100, 0.5, true, false},
		{5, 256, 0.9, false, true},
		{3, dropoutLanes + 37, 0.5, false, true},
		{2, 2*dropoutLanes + 4, 0.3, true, false},
		{1000, 41, 0.5, false, false},
		{50, 70, 0.9, false, false},
		{20, 64, 0.1, true, false},
		{9, 300, 0.999, false, false},
	} {
		x := New(tc.rows, tc.cols)
		r := rng.New(uint64(tc.rows*1000 + tc.cols))
		for i := range x.Data {
			x.Data[i] = float32(r.Uint64()%2001)/1000 - 1
		}
		// Infinities: a dropped one must give NaN (0·∞), as the plain
		// product does.
		x.Data[len(x.Data)/3] = float32(math.Inf(1))
		x.Data[len(x.Data)-1] = float32(math.Inf(-1))
		keys := make([]int32, tc.rows)
		for i := range keys {
			keys[i] = int32(r.Uint64() % 1_000_000)
		}
		want, wantMask := New(tc.rows, tc.cols), New(tc.rows, tc.cols)
		dropoutRowsRef(want, wantMask, x, tc.p, 42, keys)
		dst, mask := New(tc.rows, tc.cols), Matrix{}
		if tc.withMask {
			mask = New(tc.rows, tc.cols)
		}
		if tc.inPlace {
			dst = x.Clone()
			if err := DropoutRows(dst, mask, dst, tc.p, 42, keys); err != nil {
				t.Fatal(err)
			}
		} else if err := DropoutRows(dst, mask, x, tc.p, 42, keys); err != nil {
			t.Fatal(err)
		}
		// RowDropout.Apply: the same, in place on the calling goroutine.
		applied := x.Clone()
		if err := (RowDropout{P: tc.p, Seed: 42, Keys: keys}).Apply(applied); err != nil {
			t.Fatal(err)
		}
		for i := range want.Data {
			if math.Float32bits(dst.Data[i]) != math.Float32bits(want.Data[i]) {
				t.Fatalf("%+v: element %d = %v, plain loop %v", tc, i, dst.Data[i], want.Data[i])
			}
			if math.Float32bits(applied.Data[i]) != math.Float32bits(want.Data[i]) {
				t.Fatalf("%+v: RowDropout.Apply element %d = %v, plain loop %v", tc, i, applied.Data[i], want.Data[i])
			}
			if tc.withMask && math.Float32bits(mask.Data[i]) != math.Float32bits(wantMask.Data[i]) {
				t.Fatalf("%+v: mask element %d = %v, plain loop %v", tc, i, mask.Data[i], wantMask.Data[i])
			}
		}
	}
}

// BenchmarkDropoutRows measures node-keyed dropout on the shapes of a
// sampled GraphSAGE step: the gathered input rows (100 features) and the
// hidden layer's rows (256).
func BenchmarkDropoutRows(b *testing.B) {
	for _, sh := range []struct{ rows, cols int }{{50000, 100}, {10000, 256}} {
		b.Run(fmt.Sprintf("%dx%d", sh.rows, sh.cols), func(b *testing.B) {
			x := New(sh.rows, sh.cols)
			keys := make([]int32, sh.rows)
			for i := range keys {
				keys[i] = int32(i * 7)
			}
			b.SetBytes(int64(4 * len(x.Data)))
			for range b.N {
				if err := DropoutRows(x, Matrix{}, x, 0.5, 42, keys); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func TestRowDropoutApplyErrors(t *testing.T) {
	x := New(3, 4)
	for _, d := range []RowDropout{
		{P: 1, Keys: []int32{1, 2, 3}},
		{P: -0.1, Keys: []int32{1, 2, 3}},
		{P: math.NaN(), Keys: []int32{1, 2, 3}},
		{P: 0.5, Keys: []int32{1, 2}},
	} {
		if err := d.Apply(x); err == nil {
			t.Errorf("%+v accepted", d)
		}
	}
	if err := (RowDropout{P: 0.5, Keys: []int32{1, 2, 3}}).Apply(Matrix{Rows: 3, Cols: 4, Data: make([]float32, 11)}); err == nil {
		t.Error("a matrix short of values accepted")
	}
	y := Matrix{Rows: 3, Cols: 4, Data: []float32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}}
	if err := (RowDropout{Keys: []int32{1, 2, 3}}).Apply(y); err != nil || y.Data[11] != 12 {
		t.Errorf("P 0: %v, %v", err, y.Data)
	}
}

// TestDropoutBitsKernel checks each kernel set's dropoutBits against
// dropoutBitsGeneric, bitwise: every width of a row's last partial step
// (1 to 15 elements), whole steps and words, in place and not, with
// infinities (a dropped one gives NaN) and negative values (a dropped
// one gives -0).
func TestDropoutBitsKernel(t *testing.T) {
	forEachKernel(t, func(t *testing.T) {
		k := ks().dropoutBits
		if k == nil {
			t.Skip("no dropoutBits kernel: the lanes path applies p = 1/2")
		}
		r := rng.New(8)
		for _, cols := range []int{1, 2, 3, 4, 5, 7, 8, 9, 12, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 130, 255} {
			for _, inPlace := range []bool{false, true} {
				const rows = 5
				w := (cols + 63) / 64
				s := make([]float32, rows*cols)
				for i := range s {
					s[i] = float32(r.Uint64()%2001)/1000 - 1
				}
				s[0], s[len(s)-1] = float32(math.Inf(1)), float32(math.Inf(-1))
				bits := make([]uint64, rows*w)
				for i := range bits {
					bits[i] = r.Uint64()
				}
				want := make([]float32, len(s))
				dropoutBitsGeneric(want, s, rows, cols, bits, 2)
				got := make([]float32, len(s)+1) // one guard value after the end
				got[len(s)] = 7
				if inPlace {
					copy(got, s)
					k(got[:len(s)], got[:len(s)], rows, cols, bits, 2)
				} else {
					k(got[:len(s)], s, rows, cols, bits, 2)
				}
				if got[len(s)] != 7 {
					t.Fatalf("cols %d: wrote past the end", cols)
				}
				for i := range want {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("cols %d, in place %v: element %d = %v, generic %v", cols, inPlace, i, got[i], want[i])
					}
				}
			}
		}
	})
}

package tensor

import (
	"math/rand/v2"
	"testing"
)

// TestDimClass: dimensions below 1024 are kept, larger ones fall in the
// power-of-two range they lie in.
func TestDimClass(t *testing.T) {
	for _, c := range []struct{ d, want int }{
		{1, 1}, {200, 200}, {1023, 1023}, {1024, -1024}, {2047, -1024}, {2048, -2048},
		{12000, -8192}, {16383, -8192}, {16384, -16384},
	} {
		if got := dimClass(c.d); got != c.want {
			t.Errorf("dimClass(%d) = %d, want %d", c.d, got, c.want)
		}
	}
	if got := (gemmKey{"TN+", 200, 256, -8192}).String(); got != "TN+ 200×256×8k-16k" {
		t.Errorf("gemmKey.String() = %q", got)
	}
}

// TestKernelStatsShapes: with the kernels' timing on, each product is
// counted in its shape class (ops, m×n×k), single or in parts, with its
// operations; Sub and Add work per class.
func TestKernelStatsShapes(t *testing.T) {
	EnableKernelStats(true)
	defer EnableKernelStats(false)
	r := rand.New(rand.NewPCG(1, 2))
	x := randMatrix(r, 1500, 40)
	w := randMatrix(r, 24, 40)
	y := New(1500, 24)
	before := ReadKernelStats()
	for range 2 {
		if err := Gemm(NoTrans, Trans, 1, x, w, 0, y); err != nil {
			t.Fatal(err)
		}
	}
	x2 := randMatrix(r, 1500, 8)
	w2 := randMatrix(r, 24, 8)
	if err := GemmNTMulti([]Matrix{x, x2}, []Matrix{w, w2}, 0, y, Epilogue{}); err != nil {
		t.Fatal(err)
	}
	d := ReadKernelStats().Sub(before)
	for _, c := range []struct {
		class        string
		calls, flops int64
	}{
		{"NT 1k-2k×24×40", 2, 2 * 2 * 1500 * 24 * 40},
		{"NT+ 1k-2k×24×48", 1, 2 * 1500 * 24 * 48},
	} {
		got := d.GEMMShapes[c.class]
		if got.Calls != c.calls || got.Flops != c.flops || got.Time <= 0 {
			t.Errorf("class %q: %+v, want %d calls and %d flops (classes %v)", c.class, got, c.calls, c.flops, d.GEMMShapes)
		}
	}
	var sum int64
	for _, c := range d.GEMMShapes {
		sum += c.Flops
	}
	if sum != d.GEMMFlops {
		t.Errorf("the classes' flops add up to %d, GEMMFlops %d", sum, d.GEMMFlops)
	}
	// Add then Sub gives the same classes back; a class with no calls left
	// is dropped.
	if back := d.Add(d).Sub(d); len(back.GEMMShapes) != len(d.GEMMShapes) || back.GEMMShapes["NT 1k-2k×24×40"] != d.GEMMShapes["NT 1k-2k×24×40"] {
		t.Errorf("Add then Sub: %v, want %v", back.GEMMShapes, d.GEMMShapes)
	}
	if z := d.Sub(d); z.GEMMShapes != nil || z.GEMM != 0 {
		t.Errorf("d - d = %+v, want no classes", z)
	}
}

package tensor

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestDropoutWithoutMaskAndGrad checks that the mask-free paths agree
// exactly with the masked one: the forward output without a mask equals
// the output with one, and DropoutGrad (set and accumulate) equals dy ⊙
// mask, on lengths that end inside a draw and span several chunks.
func TestDropoutWithoutMaskAndGrad(t *testing.T) {
	forEachKernel(t, testDropoutWithoutMaskAndGrad)
}

func testDropoutWithoutMaskAndGrad(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{1, 3, 4, 7, 16, 17, 1023, 1025, dropoutChunk - 1, dropoutChunk + 5, 3*dropoutChunk + 2} {
		for _, p := range []float64{0, 0.1, 0.5, 0.9, 0.99999} {
			x, dy, prev := randMatrix(rng, 1, n), randMatrix(rng, 1, n), randMatrix(rng, 1, n)
			want, mask := New(1, n), New(1, n)
			if err := Dropout(want, mask, x, p, 77); err != nil {
				t.Fatal(err)
			}
			got := New(1, n)
			if err := Dropout(got, Matrix{}, x, p, 77); err != nil {
				t.Fatal(err)
			}
			set, acc := New(1, n), prev.Clone()
			if err := DropoutGrad(set, dy, p, 77, false); err != nil {
				t.Fatal(err)
			}
			if err := DropoutGrad(acc, dy, p, 77, true); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < n; i++ {
				if got.Data[i] != want.Data[i] {
					t.Fatalf("n %d p %g: forward without mask [%d] = %v, with mask %v", n, p, i, got.Data[i], want.Data[i])
				}
				if g := dy.Data[i] * mask.Data[i]; set.Data[i] != g || acc.Data[i] != prev.Data[i]+g {
					t.Fatalf("n %d p %g: gradient [%d] = %v (acc %v), want %v (acc %v)", n, p, i, set.Data[i], acc.Data[i], g, prev.Data[i]+g)
				}
			}
		}
	}
	if err := DropoutGrad(New(1, 3), New(1, 4), 0.5, 1, false); err == nil {
		t.Fatal("DropoutGrad accepted mismatched shapes")
	}
}

// TestReLUGradBias checks the fused ReLU and bias backward against the
// separate passes: gz exactly, the bias gradient to float32 rounding (it
// is summed in chunks of rows), with and without the ReLU, in place too.
func TestReLUGradBias(t *testing.T) {
	forEachKernel(t, testReLUGradBias)
}

func testReLUGradBias(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, rows := range []int{1, 255, 256, 1000} {
		for _, relu := range []bool{true, false} {
			cols := 19
			pre, dy := randMatrix(rng, rows, cols), randMatrix(rng, rows, cols)
			y := New(rows, cols)
			if err := ReLU(y, pre); err != nil {
				t.Fatal(err)
			}
			wantGz := New(rows, cols)
			if relu {
				if err := ReLUGrad(wantGz, pre, y, dy); err != nil {
					t.Fatal(err)
				}
			} else {
				copy(wantGz.Data, dy.Data)
			}
			wantDb := make([]float32, cols)
			wantDb[0] = 1
			if err := SumRowsInto(wantDb, wantGz); err != nil {
				t.Fatal(err)
			}
			gz, db := New(rows, cols), make([]float32, cols)
			db[0] = 1
			if err := ReLUGradBias(gz, y, dy, db, relu); err != nil {
				t.Fatal(err)
			}
			for i := range wantGz.Data {
				if relu && gz.Data[i] != wantGz.Data[i] {
					t.Fatalf("rows %d: gz[%d] = %v, want %v", rows, i, gz.Data[i], wantGz.Data[i])
				}
			}
			for j := range db {
				if d := math.Abs(float64(db[j] - wantDb[j])); d > 1e-5*float64(rows) {
					t.Fatalf("rows %d relu %v: bias gradient [%d] = %v, want %v", rows, relu, j, db[j], wantDb[j])
				}
			}
			if relu { // in place: gz is dy
				inPlace := dy.Clone()
				if err := ReLUGradBias(inPlace, y, inPlace, nil, true); err != nil {
					t.Fatal(err)
				}
				for i := range inPlace.Data {
					if inPlace.Data[i] != wantGz.Data[i] {
						t.Fatalf("in place: gz[%d] = %v, want %v", i, inPlace.Data[i], wantGz.Data[i])
					}
				}
			}
		}
	}
	if err := ReLUGradBias(New(2, 3), New(2, 3), New(2, 3), make([]float32, 2), true); err == nil {
		t.Fatal("ReLUGradBias accepted a bias gradient of the wrong length")
	}
}

// TestWorkspace checks reuse, alignment, overflow and regrowth.
func TestWorkspace(t *testing.T) {
	w := NewWorkspace(0)
	a := w.Get(10, 10)
	b := w.Zeroed(3, 5)
	for _, v := range b.Data {
		if v != 0 {
			t.Fatal("Zeroed returned non-zero values")
		}
	}
	if len(a.Data) != 100 || len(b.Data) != 15 || cap(a.Data) != 100 {
		t.Fatalf("lengths %d, %d, capacity %d", len(a.Data), len(b.Data), cap(a.Data))
	}
	for i := range a.Data {
		a.Data[i] = 1
	}
	for _, v := range b.Data {
		if v != 0 {
			t.Fatal("matrices of one step overlap")
		}
	}
	// Overflow into chunks; the next Reset makes one slab for all of it.
	big := w.Get(1000, 1000)
	big.Data[len(big.Data)-1] = 2
	if a.Data[99] != 1 || b.Data[0] != 0 {
		t.Fatal("an overflow chunk overwrote earlier matrices")
	}
	used := w.Used()
	w.Reset()
	grows := w.Grows()
	if w.Cap() < used {
		t.Fatalf("after Reset the slab holds %d, the step used %d", w.Cap(), used)
	}
	for step := 0; step < 3; step++ {
		w.Get(10, 10)
		w.Zeroed(3, 5)
		w.Get(1000, 1000)
		w.Reset()
	}
	if w.Grows() != grows {
		t.Fatalf("steady steps grew the slab %d more times", w.Grows()-grows)
	}
	var nilWS *Workspace
	if m := nilWS.Get(2, 2); len(m.Data) != 4 {
		t.Fatal("nil workspace Get")
	}
	before := Allocated()
	w.Get(4, 4)
	if Allocated()-before != 64 {
		t.Fatal("workspace matrices do not count in Allocated")
	}
}

// TestEpilogueKernels checks every kernel set's bias + ReLU and ReLU-mask
// kernels element by element against their definitions, on lengths with
// and without a tail, with NaN, zeros of both signs and infinities.
func TestEpilogueKernels(t *testing.T) {
	forEachKernel(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(8, 8))
		nan := float32(math.NaN())
		special := []float32{nan, 0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)), 1e-40, -1e-40}
		for _, n := range []int{0, 1, 7, 8, 9, 33, 100} {
			x, b, g := make([]float32, n), make([]float32, n), make([]float32, n)
			for i := range x {
				x[i], b[i], g[i] = rng.Float32()-0.5, rng.Float32()-0.5, rng.Float32()-0.5
				if i%5 == 0 {
					x[i] = special[(i/5)%len(special)]
				}
			}
			for _, bias := range [][]float32{nil, b} {
				for _, relu := range []bool{false, true} {
					got := append([]float32(nil), x...)
					ks().biasReLU(got, bias, relu)
					for i, v := range x {
						if bias != nil {
							v += bias[i]
						}
						if relu && !(v > 0) && v == v {
							v = 0
						}
						if !(got[i] == v || (got[i] != got[i] && v != v)) {
							t.Fatalf("n %d bias %v relu %v: [%d] = %v from %v, want %v", n, bias != nil, relu, i, got[i], x[i], v)
						}
					}
				}
			}
			for _, scale := range []float32{1, 2, 1.25} {
				o := make([]float32, n)
				ks().reluMask(o, g, x, scale)
				for i := range o {
					want := float32(0)
					if x[i] > 0 {
						want = g[i] * scale
					}
					if math.Float32bits(o[i]) != math.Float32bits(want) {
						t.Fatalf("n %d scale %v: reluMask [%d] = %v for y %v, want %v", n, scale, i, o[i], x[i], want)
					}
				}
			}
		}
	})
}

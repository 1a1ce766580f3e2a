package tensor

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

// sparseMatrix returns a rows×cols matrix with about density of its
// entries nonzero (some -0.0 among them, which count as nonzero).
func sparseMatrix(r *rand.Rand, rows, cols int, density float64) Matrix {
	x := New(rows, cols)
	for i := range x.Data {
		if r.Float64() < density {
			x.Data[i] = float32(r.NormFloat64())
			if r.IntN(50) == 0 {
				x.Data[i] = float32(math.Copysign(0, -1))
			}
		}
	}
	return x
}

// TestDropoutNonZerosMatchesDropout: the factors drawn at the nonzeros
// are Dropout's and DropoutRows' (bitwise, densified, or set over the
// previous output by SetNonZeros), across dropout chunks and rows wider
// than a lane buffer; the output's backward product (through c's shared
// transpose) is a fresh CSR's.
func TestDropoutNonZerosMatchesDropout(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 9))
	for _, sh := range []struct{ rows, cols int }{{7, 5}, {40, 1433}, {3, 9000}} {
		x := sparseMatrix(r, sh.rows, sh.cols, 0.05)
		c := NonZeros(x)
		if c.Validate() != nil || c.Density() > 0.1 {
			t.Fatalf("%dx%d: %v, density %v", sh.rows, sh.cols, c.Validate(), c.Density())
		}
		keys := make([]int32, sh.rows)
		for i := range keys {
			keys[i] = int32(r.IntN(1 << 20))
		}
		prev := New(sh.rows, sh.cols)
		for _, p := range []float64{0.1, 0.5, 0.9} {
			for _, k := range [][]int32{nil, keys} {
				want := New(sh.rows, sh.cols)
				var err error
				if k == nil {
					err = Dropout(want, Matrix{}, x, p, 42)
				} else {
					err = DropoutRows(want, Matrix{}, x, p, 42, k)
				}
				if err != nil {
					t.Fatal(err)
				}
				// At p = 1/2 into given storage (NaN first: every entry must be
				// written), whose second half takes the transpose's weights.
				var d *CSR
				var tw []float32
				if p == 0.5 {
					buf := make([]float32, 2*len(c.Weights))
					for i := range buf {
						buf[i] = float32(math.NaN())
					}
					tw = buf[len(c.Weights):]
					d, err = DropoutNonZerosInto(c, p, 42, k, buf[:len(c.Weights)], tw)
				} else {
					d, err = DropoutNonZeros(c, p, 42, k)
				}
				if err != nil {
					t.Fatal(err)
				}
				got := New(sh.rows, sh.cols)
				if err := Densify(got, d); err != nil {
					t.Fatal(err)
				}
				// SetNonZeros over the last output of the same pattern.
				if err := SetNonZeros(prev, d); err != nil {
					t.Fatal(err)
				}
				for i := range want.Data {
					if math.Float32bits(got.Data[i]) != math.Float32bits(want.Data[i]) {
						t.Fatalf("%dx%d p=%v keyed=%v: element %d is %v, Dropout gives %v", sh.rows, sh.cols, p, k != nil, i, got.Data[i], want.Data[i])
					}
					if math.Float32bits(prev.Data[i]) != math.Float32bits(want.Data[i]) {
						t.Fatalf("%dx%d p=%v keyed=%v: SetNonZeros element %d is %v, Dropout gives %v", sh.rows, sh.cols, p, k != nil, i, prev.Data[i], want.Data[i])
					}
				}
				// The output shares c's transpose, with weights of its own:
				// its backward product is a fresh CSR's.
				dy := randMatrix(r, sh.rows, 3)
				gs, gf := New(sh.cols, 3), New(sh.cols, 3)
				fresh := &CSR{Indptr: d.Indptr, Indices: d.Indices, Weights: d.Weights, NumSrc: d.NumSrc}
				if err := AggregateGradSet(gs, d, dy, Weighted); err != nil {
					t.Fatal(err)
				}
				if err := AggregateGradSet(gf, fresh, dy, Weighted); err != nil {
					t.Fatal(err)
				}
				if d.T() == fresh.T() || &d.T().Dst[0] != &c.T().Dst[0] {
					t.Fatal("the dropout output's transpose is not c's structure with weights of its own")
				}
				if tw != nil {
					// (Built by the row kernels' backward; the portable one
					// weighs each edge as it goes.)
					if w, err := d.transposedWeights(d.T(), Weighted); err != nil || &w[0] != &tw[0] {
						t.Fatalf("the transpose's weights are not in the storage given (%v)", err)
					}
				}
				for i := range gf.Data {
					if math.Float32bits(gs.Data[i]) != math.Float32bits(gf.Data[i]) {
						t.Fatalf("%dx%d p=%v keyed=%v: gradient element %d is %v through the shared transpose, %v through a fresh one", sh.rows, sh.cols, p, k != nil, i, gs.Data[i], gf.Data[i])
					}
				}
			}
		}
	}
}

func TestDropoutNonZerosIntoBadStorage(t *testing.T) {
	c := NonZeros(Matrix{Rows: 1, Cols: 3, Data: []float32{1, 0, 2}})
	for _, st := range []struct{ w, tw []float32 }{{make([]float32, 1), nil}, {make([]float32, 2), make([]float32, 3)}} {
		if _, err := DropoutNonZerosInto(c, 0.5, 1, nil, st.w, st.tw); !errors.Is(err, ErrShape) {
			t.Errorf("storage for %d and %d weights of 2: %v, want ErrShape", len(st.w), len(st.tw), err)
		}
	}
}

func TestTransposeInto(t *testing.T) {
	x, _ := FromSlice(2, 3, []float32{1, 2, 3, 4, 5, 6})
	d := New(3, 2)
	if err := TransposeInto(d, x); err != nil || d.Data[1] != 4 || d.Data[4] != 3 {
		t.Fatalf("%v %v", d.Data, err)
	}
	if TransposeInto(New(2, 2), x) == nil {
		t.Fatal("a wrong shape was accepted")
	}
}

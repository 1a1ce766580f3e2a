package tensor

import (
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
// are Dropout's and DropoutRows' (bitwise, densified), across dropout
// chunks and rows wider than a lane buffer.
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
				d, err := DropoutNonZeros(c, p, 42, k)
				if err != nil {
					t.Fatal(err)
				}
				got := New(sh.rows, sh.cols)
				if err := Densify(got, d); err != nil {
					t.Fatal(err)
				}
				for i := range want.Data {
					if math.Float32bits(got.Data[i]) != math.Float32bits(want.Data[i]) {
						t.Fatalf("%dx%d p=%v keyed=%v: element %d is %v, Dropout gives %v", sh.rows, sh.cols, p, k != nil, i, got.Data[i], want.Data[i])
					}
				}
			}
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

package autograd

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/graphmill/graphmill/tensor"
)

// TestSparseInput: a constant with a Sparse twin gives, through Dropout
// (positional and keyed) and MatMulOp(a, NoTrans, w, Trans), the values
// and the weight gradient of the dense path (the dropout bitwise, the
// product to float32 rounding), and the twin travels through dropout.
func TestSparseInput(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	x := tensor.New(50, 300)
	for i := range x.Data {
		if r.IntN(40) == 0 {
			x.Data[i] = float32(r.NormFloat64())
		}
	}
	w := randM(r, 8, 300)
	keys := make([]int32, x.Rows)
	for i := range keys {
		keys[i] = int32(r.IntN(1000))
	}
	run := func(sparse bool, k []int32) (tensor.Matrix, tensor.Matrix, *Var) {
		tp := NewTape()
		xv := tp.Const(x)
		if sparse {
			xv.Sparse = tensor.NonZeros(x)
		}
		wv := NewParam("w", w.Clone())
		d := tp.DropoutRows(xv, 0.5, 7, k)
		y := tp.MatMulOp(d, tensor.NoTrans, wv, tensor.Trans)
		if err := tp.Backward(tp.Sum(tp.Mul(y, y))); err != nil {
			t.Fatal(err)
		}
		return y.Value.Clone(), wv.Grad.Clone(), d
	}
	for _, k := range [][]int32{nil, keys} {
		yd, gd, dd := run(false, k)
		ys, gs, ds := run(true, k)
		if ds.Sparse == nil || dd.Sparse != nil {
			t.Fatal("the dropout output's sparse twin: missing, or made from nothing")
		}
		for i := range dd.Value.Data {
			if math.Float32bits(dd.Value.Data[i]) != math.Float32bits(ds.Value.Data[i]) {
				t.Fatalf("keyed=%v: dropped element %d is %v, the dense path's %v", k != nil, i, ds.Value.Data[i], dd.Value.Data[i])
			}
		}
		for _, pr := range []struct {
			name      string
			got, want tensor.Matrix
		}{{"product", ys, yd}, {"weight gradient", gs, gd}} {
			for i := range pr.want.Data {
				if d := math.Abs(float64(pr.got.Data[i] - pr.want.Data[i])); d > 1e-4*(1+math.Abs(float64(pr.want.Data[i]))) {
					t.Fatalf("keyed=%v: %s element %d is %v, the dense path's %v", k != nil, pr.name, i, pr.got.Data[i], pr.want.Data[i])
				}
			}
		}
	}
}

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
// product to float32 rounding), and the twin travels through dropout;
// with a SparseDense matrix the dropout's output is written there, step
// after step (each step's output replacing the last one's).
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
	twin := tensor.NonZeros(x)
	scratch := tensor.New(x.Rows, x.Cols)
	run := func(mode string, k []int32, seed uint64) (tensor.Matrix, tensor.Matrix, *Var) {
		tp := NewTape()
		xv := tp.Const(x)
		if mode != "dense" {
			xv.Sparse = twin
		}
		if mode == "scratch" {
			xv.SparseDense = scratch
		}
		wv := NewParam("w", w.Clone())
		d := tp.DropoutRows(xv, 0.5, seed, k)
		y := tp.MatMulOp(d, tensor.NoTrans, wv, tensor.Trans)
		if err := tp.Backward(tp.Sum(tp.Mul(y, y))); err != nil {
			t.Fatal(err)
		}
		return y.Value.Clone(), wv.Grad.Clone(), d
	}
	for step, k := range [][]int32{nil, keys, nil, keys} {
		seed := uint64(7 + step)
		yd, gd, dd := run("dense", k, seed)
		mode := []string{"sparse", "scratch"}[step/2]
		ys, gs, ds := run(mode, k, seed)
		if ds.Sparse == nil || dd.Sparse != nil {
			t.Fatal("the dropout output's sparse twin: missing, or made from nothing")
		}
		if (mode == "scratch") != (&ds.Value.Data[0] == &scratch.Data[0]) {
			t.Fatalf("%s: the dropout's output in SparseDense: %v", mode, mode != "scratch")
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

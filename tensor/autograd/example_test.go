package autograd_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/graphmill/graphmill/tensor"
	"github.com/graphmill/graphmill/tensor/autograd"
)

// ringGraph returns a graph where node i has in-edges from i-1 and i+1
// (mod n), and labels equal to a node's neighbours' shared class: the class
// of node i is (i/2)%2, so a node's own feature alone is ambiguous but its
// neighbourhood is informative.
func ringGraph(n int) (*tensor.CSR, tensor.Matrix, []int32) {
	g := &tensor.CSR{Indptr: []int64{0}, NumSrc: n}
	for i := 0; i < n; i++ {
		g.Indices = append(g.Indices, int32((i+n-1)%n), int32((i+1)%n))
		g.Indptr = append(g.Indptr, int64(len(g.Indices)))
	}
	rng := rand.New(rand.NewPCG(1, 1))
	x := tensor.New(n, 4)
	labels := make([]int32, n)
	for i := 0; i < n; i++ {
		labels[i] = int32((i / 2) % 2)
		x.Set(i, int(labels[i]), 1)
		x.Set(i, 2+rng.IntN(2), 1) // noise feature
	}
	return g, x, labels
}

// sageStep runs one GraphSAGE-mean layer plus a linear classifier and
// returns the loss (and gradients in the params when training).
func sageStep(tp *autograd.Tape, g *tensor.CSR, x tensor.Matrix, labels []int32, w1, b1, w2, b2 *autograd.Var) *autograd.Var {
	in := tp.Const(x)
	neigh := tp.Aggregate(g, in, tensor.Mean)
	h := tp.ReLU(tp.Linear(tp.ConcatCols(in, neigh), w1, b1))
	h = tp.Dropout(h, 0.1, uint64(tp.Len()))
	return tp.CrossEntropy(tp.Linear(h, w2, b2), labels)
}

// TestTrainingReducesLoss trains a small GraphSAGE model with plain SGD
// and checks that the loss falls well below its starting value.
func TestTrainingReducesLoss(t *testing.T) {
	g, x, labels := ringGraph(64)
	rng := rand.New(rand.NewPCG(2, 2))
	param := func(name string, r, c int) *autograd.Var {
		m := tensor.New(r, c)
		for i := range m.Data {
			m.Data[i] = float32(rng.NormFloat64()) * 0.5
		}
		return autograd.NewParam(name, m)
	}
	w1, b1 := param("w1", 8, 16), autograd.NewParam("b1", tensor.New(1, 16))
	w2, b2 := param("w2", 16, 2), autograd.NewParam("b2", tensor.New(1, 2))
	params := []*autograd.Var{w1, b1, w2, b2}
	var first, last float32
	for step := 0; step < 200; step++ {
		tp := autograd.NewTape()
		loss := sageStep(tp, g, x, labels, w1, b1, w2, b2)
		autograd.ZeroGrad(params...)
		if err := tp.Backward(loss); err != nil {
			t.Fatal(err)
		}
		for _, p := range params {
			if err := tensor.AddScaled(p.Value, -0.2, p.Grad); err != nil {
				t.Fatal(err)
			}
		}
		if step == 0 {
			first = loss.Scalar()
		}
		last = loss.Scalar()
	}
	if !(last < first/4) {
		t.Fatalf("loss went from %v to %v, want a 4× drop", first, last)
	}
	// Inference: no tape entries, deterministic, accurate.
	tp := autograd.NewInferenceTape()
	in := tp.Const(x)
	h := tp.ReLU(tp.Linear(tp.ConcatCols(in, tp.Aggregate(g, in, tensor.Mean)), w1, b1))
	logits := tp.Linear(h, w2, b2)
	pred := make([]int32, len(labels))
	if err := tensor.RowArgmax(pred, logits.Value); err != nil {
		t.Fatal(err)
	}
	correct := 0
	for i := range pred {
		if pred[i] == labels[i] {
			correct++
		}
	}
	if tp.Len() != 0 || correct < len(labels)*9/10 {
		t.Fatalf("inference: %d ops recorded, %d/%d correct", tp.Len(), correct, len(labels))
	}
}

// Example shows one training step of a one-layer GCN on a 3-node path.
func Example() {
	g := &tensor.CSR{ // path 0-1-2 with self loops, compressed over destinations
		Indptr:  []int64{0, 2, 5, 7},
		Indices: []int32{0, 1, 0, 1, 2, 1, 2},
		NumSrc:  3,
	}
	g.Weights, _ = tensor.GCNWeights(g, nil, nil)
	x, _ := tensor.FromSlice(3, 2, []float32{1, 0, 0, 1, 1, 1})
	w := autograd.NewParam("W", tensor.New(2, 2))
	w.Value.Set(0, 0, 1)
	w.Value.Set(1, 1, 1)

	tp := autograd.NewTape()
	h := tp.MatMul(tp.Aggregate(g, tp.Const(x), tensor.Weighted), w)
	loss := tp.CrossEntropy(h, []int32{0, 1, 1})
	if err := tp.Backward(loss); err != nil {
		panic(err)
	}
	fmt.Printf("loss %.4f, dW row 0 [%.4f %.4f]\n", loss.Scalar(), w.Grad.At(0, 0), w.Grad.At(0, 1))
	// Output: loss 0.6298, dW row 0 [0.1282 -0.1282]
}

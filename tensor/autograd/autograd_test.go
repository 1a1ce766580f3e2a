package autograd

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/graphmill/graphmill/tensor"
)

func randM(rng *rand.Rand, r, c int) tensor.Matrix {
	m := tensor.New(r, c)
	for i := range m.Data {
		m.Data[i] = float32(rng.NormFloat64())
	}
	return m
}

// awayFromZero maps values to ±[0.2, 1.2] so kinks (ReLU at 0) are never
// within a finite-difference step.
func awayFromZero(m tensor.Matrix) tensor.Matrix {
	for i, v := range m.Data {
		s := float32(1)
		if v < 0 {
			s = -1
		}
		m.Data[i] = s * (0.2 + float32(math.Mod(math.Abs(float64(v)), 1)))
	}
	return m
}

// testGraph is a small block: 5 destinations over 7 sources, with a
// destination without edges, a repeated edge and a high-degree row.
func testGraph() *tensor.CSR {
	g := &tensor.CSR{
		Indptr:  []int64{0, 2, 2, 5, 6, 10},
		Indices: []int32{1, 3, 0, 6, 6, 2, 0, 1, 4, 5},
		NumSrc:  7,
	}
	w, err := tensor.GCNWeights(g, nil, nil)
	if err != nil {
		panic(err)
	}
	g.Weights = w
	return g
}

type gradCase struct {
	name   string
	inputs []tensor.Matrix
	build  func(t *Tape, in []*Var) *Var
}

func gradCases() []gradCase {
	rng := rand.New(rand.NewPCG(11, 12))
	g := testGraph()
	labels := []int32{2, -1, 0, 3, 1}
	targets := tensor.New(4, 3)
	for i := range targets.Data {
		targets.Data[i] = float32(i%3) / 2
	}
	el := awayFromZero(randM(rng, 7, 2))
	for i := range el.Data {
		el.Data[i] *= 2 // |el| >= 0.4 > |er|: GAT scores stay off the LeakyReLU kink
	}
	er := randM(rng, 5, 2)
	for i := range er.Data {
		er.Data[i] = float32(math.Tanh(float64(er.Data[i]))) * 0.2
	}
	mm := func(ta, tb tensor.Op) gradCase {
		ar, ac := 5, 4
		if ta == tensor.Trans {
			ar, ac = ac, ar
		}
		br, bc := 4, 3
		if tb == tensor.Trans {
			br, bc = bc, br
		}
		return gradCase{"MatMul" + ta.String() + tb.String(), []tensor.Matrix{randM(rng, ar, ac), randM(rng, br, bc)},
			func(t *Tape, in []*Var) *Var { return t.MatMulOp(in[0], ta, in[1], tb) }}
	}
	return []gradCase{
		mm(tensor.NoTrans, tensor.NoTrans), mm(tensor.NoTrans, tensor.Trans),
		mm(tensor.Trans, tensor.NoTrans), mm(tensor.Trans, tensor.Trans),
		{"Linear", []tensor.Matrix{randM(rng, 6, 5), randM(rng, 5, 4), randM(rng, 1, 4)},
			func(t *Tape, in []*Var) *Var { return t.Linear(in[0], in[1], in[2]) }},
		{"Add", []tensor.Matrix{randM(rng, 3, 4), randM(rng, 3, 4)}, func(t *Tape, in []*Var) *Var { return t.Add(in[0], in[1]) }},
		{"Mul", []tensor.Matrix{randM(rng, 3, 4), randM(rng, 3, 4)}, func(t *Tape, in []*Var) *Var { return t.Mul(in[0], in[1]) }},
		{"MulSelf", []tensor.Matrix{randM(rng, 3, 4)}, func(t *Tape, in []*Var) *Var { return t.Mul(in[0], in[0]) }},
		{"Scale", []tensor.Matrix{randM(rng, 3, 4)}, func(t *Tape, in []*Var) *Var { return t.Scale(in[0], -1.5) }},
		{"ReLU", []tensor.Matrix{awayFromZero(randM(rng, 4, 5))}, func(t *Tape, in []*Var) *Var { return t.ReLU(in[0]) }},
		{"LeakyReLU", []tensor.Matrix{awayFromZero(randM(rng, 4, 5))}, func(t *Tape, in []*Var) *Var { return t.LeakyReLU(in[0], 0.2) }},
		{"ELU", []tensor.Matrix{awayFromZero(randM(rng, 4, 5))}, func(t *Tape, in []*Var) *Var { return t.ELU(in[0], 1.3) }},
		{"Dropout", []tensor.Matrix{randM(rng, 6, 5)}, func(t *Tape, in []*Var) *Var { return t.Dropout(in[0], 0.4, 99) }},
		{"LogSoftmax", []tensor.Matrix{randM(rng, 4, 5)}, func(t *Tape, in []*Var) *Var { return t.LogSoftmax(in[0]) }},
		{"CrossEntropy", []tensor.Matrix{randM(rng, 5, 4)}, func(t *Tape, in []*Var) *Var { return t.CrossEntropy(in[0], labels) }},
		{"BCEWithLogits", []tensor.Matrix{randM(rng, 4, 3)}, func(t *Tape, in []*Var) *Var { return t.BCEWithLogits(in[0], targets) }},
		{"Sum", []tensor.Matrix{randM(rng, 3, 2)}, func(t *Tape, in []*Var) *Var { return t.Sum(in[0]) }},
		{"ConcatCols", []tensor.Matrix{randM(rng, 3, 2), randM(rng, 3, 4)}, func(t *Tape, in []*Var) *Var { return t.ConcatCols(in[0], in[1]) }},
		{"Rows", []tensor.Matrix{randM(rng, 6, 3)}, func(t *Tape, in []*Var) *Var { return t.Rows(in[0], 1, 4) }},
		{"AggregateSum", []tensor.Matrix{randM(rng, 7, 3)}, func(t *Tape, in []*Var) *Var { return t.Aggregate(g, in[0], tensor.Sum) }},
		{"AggregateMean", []tensor.Matrix{randM(rng, 7, 3)}, func(t *Tape, in []*Var) *Var { return t.Aggregate(g, in[0], tensor.Mean) }},
		{"AggregateGCN", []tensor.Matrix{randM(rng, 7, 3)}, func(t *Tape, in []*Var) *Var { return t.Aggregate(g, in[0], tensor.Weighted) }},
		{"HeadDot", []tensor.Matrix{randM(rng, 4, 6), randM(rng, 2, 3)}, func(t *Tape, in []*Var) *Var { return t.HeadDot(in[0], in[1]) }},
		{"GATAggregate", []tensor.Matrix{randM(rng, 7, 6), el, er}, func(t *Tape, in []*Var) *Var {
			return t.GATAggregate(g, in[0], in[1], in[2], 2, 0.2)
		}},
		{"ConcatRows", []tensor.Matrix{randM(rng, 2, 3), randM(rng, 3, 3)}, func(t *Tape, in []*Var) *Var { return t.ConcatRows(in[0], in[1]) }},
		{"GATAggregateDropout", []tensor.Matrix{randM(rng, 7, 6), el, er}, func(t *Tape, in []*Var) *Var {
			return t.GATAggregateDropout(g, in[0], in[1], in[2], 2, 0.2, 0.5, 42)
		}},
		{"DenseReLU", []tensor.Matrix{randM(rng, 7, 3), randM(rng, 4, 3), randM(rng, 4, 3), randM(rng, 1, 4)}, func(t *Tape, in []*Var) *Var {
			h := t.Scale(in[0], 1.5) // an intermediate whose gradient Dense sets first, on its first 5 of 7 rows
			agg := t.Aggregate(g, h, tensor.Mean)
			return t.Dense(5, []Term{{X: agg, W: in[1]}, {X: h, W: in[2]}}, in[3], ActReLU)
		}},
		{"DensePartialThenRows", []tensor.Matrix{randM(rng, 7, 3), randM(rng, 4, 3)}, func(t *Tape, in []*Var) *Var {
			h := t.Scale(in[0], 1.5)
			r := t.Rows(h, 2, 7) // backward after Dense's, which writes h's first 5 rows alone
			return t.ConcatCols(t.Dense(5, []Term{{X: h, W: in[1]}}, nil, NoActivation), r)
		}},
		{"DenseIdentityTerm", []tensor.Matrix{randM(rng, 7, 4), randM(rng, 7, 3), randM(rng, 4, 3), randM(rng, 1, 4)}, func(t *Tape, in []*Var) *Var {
			neigh := t.Aggregate(g, in[0], tensor.Sum)
			return t.Dense(5, []Term{{X: in[1], W: in[2]}, {X: neigh}}, in[3], NoActivation)
		}},
		{"DenseBiasReLUOnly", []tensor.Matrix{awayFromZero(randM(rng, 7, 4)), make1x4()}, func(t *Tape, in []*Var) *Var {
			h := t.Scale(in[0], 2)
			return t.Dense(5, []Term{{X: h}}, in[1], ActReLU)
		}},
		{"DenseSameInputTwice", []tensor.Matrix{randM(rng, 6, 3), randM(rng, 2, 3), randM(rng, 2, 3)}, func(t *Tape, in []*Var) *Var {
			h := t.Scale(in[0], 2) // an intermediate: its gradient is first set, then added to
			return t.Dense(4, []Term{{X: h, W: in[1]}, {X: h, W: in[2]}}, nil, NoActivation)
		}},
		{"DropoutOfIntermediate", []tensor.Matrix{randM(rng, 6, 5)}, func(t *Tape, in []*Var) *Var {
			return t.Dropout(t.Scale(in[0], 0.5), 0.4, 7)
		}},
		{"SAGELayer", []tensor.Matrix{randM(rng, 7, 3), randM(rng, 6, 4), randM(rng, 1, 4)}, func(t *Tape, in []*Var) *Var {
			self := t.Rows(in[0], 0, 5)
			neigh := t.Aggregate(g, in[0], tensor.Mean)
			h := t.Linear(t.ConcatCols(self, neigh), in[1], in[2])
			return t.CrossEntropy(t.ELU(h, 1), labels)
		}},
	}
}

// make1x4 is a small bias (|x+b| stays away from ReLU's kink for awayFromZero x).
func make1x4() tensor.Matrix {
	m := tensor.New(1, 4)
	for i := range m.Data {
		m.Data[i] = 0.01 * float32(i+1)
	}
	return m
}

// dirtyWorkspace returns a workspace whose memory is full of NaN, as a
// reused one holds the last step's values: an op that reads its output or
// a gradient before writing it all would turn the result to NaN.
func dirtyWorkspace() *tensor.Workspace {
	ws := tensor.NewWorkspace(1 << 16)
	m := ws.Get(1, ws.Cap())
	for i := range m.Data {
		m.Data[i] = float32(math.NaN())
	}
	ws.Reset()
	return ws
}

// eval runs the forward pass on constants and returns Σ seed ⊙ out in float64.
func eval(c gradCase, inputs []tensor.Matrix, seed tensor.Matrix) float64 {
	t := NewTape()
	vars := make([]*Var, len(inputs))
	for i, m := range inputs {
		vars[i] = t.Const(m)
	}
	out := c.build(t, vars)
	var s float64
	for i, v := range out.Value.Data {
		s += float64(v) * float64(seed.Data[i])
	}
	return s
}

// TestGradients compares every op's backward pass with central finite
// differences, under every kernel set.
func TestGradients(t *testing.T) {
	def := tensor.Kernel()
	defer tensor.SetKernel(def)
	for _, kn := range tensor.Kernels() {
		if err := tensor.SetKernel(kn); err != nil {
			t.Fatal(err)
		}
		for _, c := range gradCases() {
			for _, useWS := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%s/workspace=%v", kn, c.name, useWS), func(t *testing.T) {
					tp := NewTape()
					if useWS {
						tp.Workspace = dirtyWorkspace()
					}
					vars := make([]*Var, len(c.inputs))
					for i, m := range c.inputs {
						vars[i] = tp.Input(fmt.Sprint("in", i), m)
					}
					out := c.build(tp, vars)
					rng := rand.New(rand.NewPCG(5, 6))
					seed := randM(rng, out.Value.Rows, out.Value.Cols)
					if err := tp.BackwardFrom(out, seed); err != nil {
						t.Fatal(err)
					}
					const eps = 1e-2
					for i, m := range c.inputs {
						grad := vars[i].Grad
						if len(grad.Data) != len(m.Data) {
							t.Fatalf("input %d: no gradient", i)
						}
						for j := range m.Data {
							orig := m.Data[j]
							m.Data[j] = orig + eps
							fp := eval(c, c.inputs, seed)
							m.Data[j] = orig - eps
							fm := eval(c, c.inputs, seed)
							m.Data[j] = orig
							num := (fp - fm) / (2 * eps)
							ana := float64(grad.Data[j])
							if !(math.Abs(num-ana) <= 3e-3+2e-2*math.Abs(num)) { // NaN fails too
								t.Errorf("input %d element %d: analytic %.6f, numeric %.6f", i, j, ana, num)
							}
						}
					}
				})
			}
		}
	}
}

// TestDenseFusedReLUGrad: a Dense layer over inputs that need no
// gradient, large enough for its ReLU's backward to fold into the weight
// gradients (tensor.ReLUGradFused), gives the weight gradients bitwise and
// the bias gradient to float32 rounding of the same layer whose input
// needs a gradient (which stores the pre-activation gradient), with and
// without dropout.
func TestDenseFusedReLUGrad(t *testing.T) {
	const rows, in, out = 1500, 100, 256
	if !tensor.ReLUGradFused(rows, out, []int{in, in}) {
		t.Fatal("shape does not take the fused path")
	}
	rng := rand.New(rand.NewPCG(9, 9))
	a, h := randM(rng, rows+7, in), randM(rng, rows+7, in)
	wl, wr, b := randM(rng, out, in), randM(rng, out, in), randM(rng, 1, out)
	keys := make([]int32, rows)
	for i := range keys {
		keys[i] = int32(i)
	}
	for _, p := range []float64{0, 0.5} {
		grads := func(inputGrad bool) [][]float32 {
			params := []*Var{NewParam("wl", wl.Clone()), NewParam("wr", wr.Clone()), NewParam("b", b.Clone())}
			tp := NewTape()
			x := tp.Const(h)
			if inputGrad {
				x = NewParam("h", h.Clone())
			}
			drop := tensor.RowDropout{}
			if p > 0 {
				drop = tensor.RowDropout{P: p, Seed: 3, Keys: keys}
			}
			y := tp.DenseDropout(rows, []Term{{X: tp.Const(a), W: params[0]}, {X: x, W: params[1]}}, params[2], ActReLU, drop)
			if err := tp.Backward(tp.Sum(tp.MatMul(y, tp.Const(randM(rand.New(rand.NewPCG(1, 1)), out, 3))))); err != nil {
				t.Fatal(err)
			}
			return [][]float32{params[0].Grad.Data, params[1].Grad.Data, params[2].Grad.Data}
		}
		fused, stored := grads(false), grads(true)
		for k := range fused {
			for i, w := range stored[k] {
				g := fused[k][i]
				if k < 2 && math.Float32bits(g) != math.Float32bits(w) || math.Abs(float64(g-w)) > 1e-4*(1+math.Abs(float64(w))) {
					t.Fatalf("dropout %v, gradient %d element %d: fused %v, stored %v", p, k, i, g, w)
				}
			}
		}
	}
}

func TestParamGradAccumulatesAndZeroes(t *testing.T) {
	w := NewParam("W", tensor.New(2, 2))
	w.Value.Data[0] = 3
	x := tensor.New(1, 2)
	x.Data[0], x.Data[1] = 1, 2
	step := func() {
		tp := NewTape()
		if err := tp.Backward(tp.Sum(tp.MatMul(tp.Const(x), w))); err != nil {
			t.Fatal(err)
		}
	}
	step()
	step()
	// d Σ(x·W) / dW[i][j] = x[i], twice.
	want := []float32{2, 2, 4, 4}
	for i, v := range w.Grad.Data {
		if v != want[i] {
			t.Fatalf("grad %v, want %v", w.Grad.Data, want)
		}
	}
	ZeroGrad(w)
	for _, v := range w.Grad.Data {
		if v != 0 {
			t.Fatalf("after ZeroGrad: %v", w.Grad.Data)
		}
	}
}

func TestInferenceTape(t *testing.T) {
	w := NewParam("W", tensor.New(3, 3))
	tp := NewInferenceTape()
	x := tp.Const(tensor.New(2, 3))
	y := tp.Dropout(tp.ReLU(tp.MatMul(x, w)), 0.5, 1)
	if tp.Len() != 0 || y.RequiresGrad() {
		t.Fatalf("inference tape recorded %d ops, output requires grad %v", tp.Len(), y.RequiresGrad())
	}
	if err := tp.Backward(tp.Sum(y)); err == nil {
		t.Fatal("Backward on an inference tape succeeded")
	}
	train := NewTape()
	train.Sum(train.ReLU(train.MatMul(train.Const(tensor.New(2, 3)), w)))
	if train.Len() != 3 {
		t.Fatalf("training tape recorded %d ops, want 3", train.Len())
	}
	train.Reset()
	if train.Len() != 0 {
		t.Fatal("Reset kept ops")
	}
}

func TestCheckFiniteNamesOpAndPosition(t *testing.T) {
	tp := NewTape()
	tp.CheckFinite = true
	x := tensor.New(2, 3)
	x.Data[4] = float32(math.Inf(1))
	defer func() {
		r := recover()
		err, ok := r.(error)
		var nf *tensor.NonFiniteError
		if !ok || !errors.As(err, &nf) || nf.Row != 1 || nf.Col != 1 || nf.Name != "ReLU" {
			t.Fatalf("recovered %v, want a NonFiniteError in ReLU at (1, 1)", r)
		}
	}()
	tp.ReLU(tp.Input("x", x))
}

func TestShapePanics(t *testing.T) {
	cases := []struct {
		name string
		f    func(t *Tape)
		want string
	}{
		{"MatMul", func(t *Tape) { t.MatMul(t.Const(tensor.New(2, 3)), t.Const(tensor.New(4, 2))) }, "MatMul"},
		{"AddBias", func(t *Tape) { t.AddBias(t.Const(tensor.New(2, 3)), t.Const(tensor.New(1, 2))) }, "bias"},
		{"Add", func(t *Tape) { t.Add(t.Const(tensor.New(2, 3)), t.Const(tensor.New(3, 2))) }, "Add"},
		{"NLL labels", func(t *Tape) { t.NLL(t.Const(tensor.New(2, 3)), []int32{0}) }, "labels"},
		{"NLL class", func(t *Tape) { t.NLL(t.Const(tensor.New(1, 3)), []int32{3}) }, "label 3"},
		{"Aggregate", func(t *Tape) { t.Aggregate(testGraph(), t.Const(tensor.New(6, 2)), tensor.Sum) }, "block 7→5"},
		{"MatMul empty", func(t *Tape) { t.MatMul(t.Const(tensor.New(0, 3)), t.Const(tensor.New(3, 2))) }, "zero-size"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			defer func() {
				r := recover()
				if r == nil || !strings.Contains(fmt.Sprint(r), c.want) {
					t.Fatalf("panic %v, want one mentioning %q", r, c.want)
				}
			}()
			c.f(NewTape())
		})
	}
}

// TestGATDropoutChangesOutput checks that attention dropout really drops:
// with p > 0 the training output differs from the undropped one, and an
// inference tape ignores p.
func TestGATDropoutChangesOutput(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	g := testGraph()
	h, el, er := randM(rng, 7, 6), randM(rng, 7, 2), randM(rng, 5, 2)
	tp := NewTape()
	plain := tp.GATAggregate(g, tp.Const(h), tp.Const(el), tp.Const(er), 2, 0.2).Value
	drop := tp.GATAggregateDropout(g, tp.Const(h), tp.Const(el), tp.Const(er), 2, 0.2, 0.5, 1).Value
	same := true
	for i := range plain.Data {
		same = same && plain.Data[i] == drop.Data[i]
	}
	if same {
		t.Fatal("attention dropout did not change the output")
	}
	it := NewInferenceTape()
	inf := it.GATAggregateDropout(g, it.Const(h), it.Const(el), it.Const(er), 2, 0.2, 0.5, 1).Value
	for i := range plain.Data {
		if plain.Data[i] != inf.Data[i] {
			t.Fatal("inference tape applied attention dropout")
		}
	}
}

// TestDropoutInPlaceOnOwnedConst checks that Dropout on a ConstOwned input
// gives exactly what it gives on a Const (the same factors), writes them
// over the input instead of into a new matrix, and leaves Const inputs
// alone.
func TestDropoutInPlaceOnOwnedConst(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 3))
	x := randM(rng, 37, 29)
	keep := x.Clone()
	tp := NewTape()
	want := tp.Dropout(tp.Const(x), 0.3, 5)
	for i := range x.Data {
		if x.Data[i] != keep.Data[i] {
			t.Fatal("Dropout wrote to a Const input")
		}
	}
	before := tensor.Allocated()
	got := tp.Dropout(tp.ConstOwned(x), 0.3, 5)
	if tensor.Allocated() != before {
		t.Fatal("Dropout on an owned constant allocated a matrix")
	}
	if &got.Value.Data[0] != &x.Data[0] {
		t.Fatal("Dropout on an owned constant did not work in place")
	}
	for i := range want.Value.Data {
		if got.Value.Data[i] != want.Value.Data[i] {
			t.Fatalf("element %d: in place %v, into a new matrix %v", i, got.Value.Data[i], want.Value.Data[i])
		}
	}
}

func TestCustomOp(t *testing.T) {
	tp := NewTape()
	x := NewParam("x", tensor.Matrix{Rows: 1, Cols: 3, Data: []float32{1, 2, 3}})
	c := tp.Const(tensor.Matrix{Rows: 1, Cols: 3, Data: []float32{5, 5, 5}})
	// y = 2x (+ c, which needs no gradient)
	out := tensor.New(1, 3)
	for i := range out.Data {
		out.Data[i] = 2*x.Value.Data[i] + c.Value.Data[i]
	}
	y := tp.Custom("twice", out, func(g tensor.Matrix, grads []tensor.Matrix) error {
		if grads[1].Data != nil {
			t.Error("a constant input got a gradient matrix")
		}
		for i, v := range g.Data {
			grads[0].Data[i] += 2 * v
		}
		return nil
	}, x, c)
	if err := tp.Backward(tp.Sum(y)); err != nil {
		t.Fatal(err)
	}
	for i, v := range x.Grad.Data {
		if v != 2 {
			t.Fatalf("grad[%d] = %v, want 2", i, v)
		}
	}
	if NewInferenceTape().Custom("twice", out, nil, x).RequiresGrad() {
		t.Error("an inference tape recorded a custom op")
	}
}

// TestDropoutRowsGradient checks node-keyed dropout's backward, which keeps
// no mask: the gradient of sum(DropoutRows(x) ⊙ w) is w times the factors
// tensor.DropoutRows draws, for x used once and twice (accumulating).
func TestDropoutRowsGradient(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 5))
	x := NewParam("x", randM(rng, 23, 13))
	w := randM(rng, 23, 13)
	keys := make([]int32, 23)
	for i := range keys {
		keys[i] = int32(rng.IntN(1000))
	}
	mask, out := tensor.New(23, 13), tensor.New(23, 13)
	if err := tensor.DropoutRows(out, mask, x.Value, 0.4, 9, keys); err != nil {
		t.Fatal(err)
	}
	for _, uses := range []int{1, 2} {
		x.Grad = tensor.Matrix{}
		tp := NewTape()
		var loss *Var
		for range uses {
			l := tp.Sum(tp.Mul(tp.DropoutRows(x, 0.4, 9, keys), tp.Const(w)))
			if loss == nil {
				loss = l
			} else {
				loss = tp.Add(loss, l)
			}
		}
		if err := tp.Backward(loss); err != nil {
			t.Fatal(err)
		}
		for i := range w.Data {
			want := float32(uses) * w.Data[i] * mask.Data[i]
			if d := x.Grad.Data[i] - want; d > 1e-6 || d < -1e-6 {
				t.Fatalf("%d uses: gradient element %d = %v, want %v", uses, i, x.Grad.Data[i], want)
			}
		}
	}
}

// TestDeferredAggregateGrad: GraphSAGE's two layers, the first a fused
// ReLU Dense whose output the second aggregates: the aggregation's
// gradient made a block of rows at a time as the first layer's weight
// gradients read it (Var.deferred) gives bitwise the gradients of making
// it whole first, with dropout or not, with another use of the first
// layer's output whose backward runs before the aggregation's or after
// it (which settles the deferred gradient first), and with CheckFinite
// (which settles it too).
func TestDeferredAggregateGrad(t *testing.T) {
	const src, dst, in, hid, out = 1500, 300, 100, 256, 7
	rng := rand.New(rand.NewPCG(4, 4))
	indptr := make([]int64, dst+1)
	var idx []int32
	for d := 0; d < dst; d++ {
		for range 1 + rng.IntN(12) {
			idx = append(idx, int32(rng.IntN(src)))
		}
		indptr[d+1] = int64(len(idx))
	}
	a, h := randM(rng, src, in), randM(rng, src, in)
	w1a, w1b, b1 := randM(rng, hid, in), randM(rng, hid, in), randM(rng, 1, hid)
	w2a, w2b, b2 := randM(rng, out, hid), randM(rng, out, hid), randM(rng, 1, out)
	proj := randM(rng, out, 3)
	keys := make([]int32, src)
	for i := range keys {
		keys[i] = int32(i * 3)
	}
	for _, p := range []float64{0, 0.5} {
		for _, extra := range []string{"none", "before", "after"} {
			for _, check := range []bool{false, true} {
				grads := func(deferred bool) [][]float32 {
					deferGrads = deferred
					defer func() { deferGrads = true }()
					g := &tensor.CSR{Indptr: indptr, Indices: idx, NumSrc: src}
					params := []*Var{NewParam("w1a", w1a.Clone()), NewParam("w1b", w1b.Clone()), NewParam("b1", b1.Clone()),
						NewParam("w2a", w2a.Clone()), NewParam("w2b", w2b.Clone()), NewParam("b2", b2.Clone())}
					tp := NewTape()
					tp.CheckFinite = check
					drop := tensor.RowDropout{}
					if p > 0 {
						drop = tensor.RowDropout{P: p, Seed: 5, Keys: keys}
					}
					y1 := tp.DenseDropout(src, []Term{{X: tp.Const(a), W: params[0]}, {X: tp.Const(h), W: params[1]}}, params[2], ActReLU, drop)
					if !y1.takesRows {
						t.Fatal("the first layer does not take a deferred gradient")
					}
					other := func() *Var { // another use of y1
						return tp.Sum(tp.MatMul(tp.Rows(y1, 0, 5), tp.Const(randM(rand.New(rand.NewPCG(2, 2)), hid, 1))))
					}
					var o *Var
					if extra == "after" { // recorded first: its backward runs after the aggregation's
						o = other()
					}
					agg := tp.Aggregate(g, y1, tensor.Mean)
					z := tp.Dense(dst, []Term{{X: y1, W: params[3]}, {X: agg, W: params[4]}}, params[5], NoActivation)
					loss := tp.Sum(tp.MatMul(z, tp.Const(proj)))
					if extra == "before" {
						o = other()
					}
					if o != nil {
						loss = tp.Add(loss, o)
					}
					if err := tp.Backward(loss); err != nil {
						t.Fatal(err)
					}
					var out [][]float32
					for _, q := range params {
						out = append(out, q.Grad.Data)
					}
					return out
				}
				on, off := grads(true), grads(false)
				for k := range on {
					for i, w := range off[k] {
						if math.Float32bits(on[k][i]) != math.Float32bits(w) {
							t.Fatalf("dropout %v, other use %s, check %v: gradient %d element %d: deferred %v, whole %v", p, extra, check, k, i, on[k][i], w)
						}
					}
				}
			}
		}
	}
}

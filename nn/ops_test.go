package nn

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/graphmill/graphmill/tensor"
	"github.com/graphmill/graphmill/tensor/autograd"
)

// gradCheck compares the gradient backward gives for x with central
// differences of the loss Σ w ⊙ f(x), in float64 where f allows.
func gradCheck(t *testing.T, name string, x tensor.Matrix, f func(tp *autograd.Tape, x *autograd.Var) *autograd.Var) {
	t.Helper()
	gradCheckStep(t, name, x, 1e-2, f)
}

// gradCheckStep is gradCheck with central differences of step h (a
// smaller one where a max or min may change winner within a step).
func gradCheckStep(t *testing.T, name string, x tensor.Matrix, h float32, f func(tp *autograd.Tape, x *autograd.Var) *autograd.Var) {
	t.Helper()
	r := rand.New(rand.NewPCG(9, 9))
	tp := autograd.NewTape()
	xv := tp.Input("x", x)
	y := f(tp, xv)
	w := tensor.New(y.Value.Rows, y.Value.Cols)
	for i := range w.Data {
		w.Data[i] = r.Float32()*2 - 1
	}
	if err := tp.BackwardFrom(y, w); err != nil {
		t.Fatal(err)
	}
	loss := func() float64 {
		tp := autograd.NewTape() // a training tape: batch norm's batch statistics
		y := f(tp, tp.Const(x))
		var s float64
		for i, v := range y.Value.Data {
			s += float64(v) * float64(w.Data[i])
		}
		return s
	}
	for i := range x.Data {
		v := x.Data[i]
		x.Data[i] = v + h
		up := loss()
		x.Data[i] = v - h
		down := loss()
		x.Data[i] = v
		num := (up - down) / (2 * float64(h))
		if got := float64(xv.Grad.Data[i]); math.Abs(got-num) > 2e-2*max(1, math.Abs(num)) {
			t.Fatalf("%s: d/dx[%d] = %g, numerically %g", name, i, got, num)
		}
	}
}

// gradBlock returns a random block with seeds destinations and a degree
// table, and 3-wide input rows of distinct values step apart from base, so
// that max and min have one winner each and a small step changes none.
func gradBlock(r *rand.Rand, seeds int, step, base float32) (*Block, tensor.Matrix) {
	b := randomBlocks(r, 1, seeds)[0]
	b.deg = make([]float32, b.NumSrc())
	for i := range b.deg {
		b.deg[i] = float32(r.IntN(5))
	}
	x := tensor.New(b.NumSrc(), 3)
	for i, v := range r.Perm(len(x.Data)) {
		x.Data[i] = float32(v)*step + base
	}
	return b, x
}

// TestBlockOpGradients checks the new public ops' gradients numerically
// on a random block, for every aggregator, batch and layer normalisation,
// row scaling and column slices.
func TestBlockOpGradients(t *testing.T) {
	b, x := gradBlock(rand.New(rand.NewPCG(1, 5)), 7, 0.37, 0)
	for _, a := range []Aggregator{AggSum, AggMean, AggMax, AggMin, AggStd, AggGCN, AggWeighted} {
		gradCheck(t, a.String(), x, func(tp *autograd.Tape, x *autograd.Var) *autograd.Var { return b.Aggregate(tp, x, a) })
	}
	bn := NewBatchNorm("", 3)
	gradCheck(t, "batchnorm", x, func(tp *autograd.Tape, x *autograd.Var) *autograd.Var {
		bn.RunningMean.Value.Data[0] = 0 // the update is not part of the function
		return bn.Forward(tp, b, x, true)
	})
	ln := NewLayerNorm("", 3)
	gradCheck(t, "layernorm", x, func(tp *autograd.Tape, x *autograd.Var) *autograd.Var { return ln.Forward(tp, x) })
	s := make([]float32, x.Rows)
	for i := range s {
		s[i] = float32(i) - 2
	}
	gradCheck(t, "scalerows", x, func(tp *autograd.Tape, x *autograd.Var) *autograd.Var { return ScaleRows(tp, x, s) })
	gradCheck(t, "cols", x, func(tp *autograd.Tape, x *autograd.Var) *autograd.Var { return Cols(tp, x, 1, 3) })
	gradCheck(t, "dstrows+concat", x, func(tp *autograd.Tape, x *autograd.Var) *autograd.Var {
		return Concat(tp, b.DstRows(tp, x), b.Aggregate(tp, x, AggMax))
	})
}

// TestExtremeEmpty: a destination without in-edges aggregates to 0 and
// passes no gradient, as PyG's max and min.
func TestExtremeEmpty(t *testing.T) {
	b, err := NewBlock([]int64{0, 0, 2}, []int32{0, 1}, []int32{0, 1}, 2)
	if err != nil {
		t.Fatal(err)
	}
	x, _ := tensor.FromSlice(2, 1, []float32{-3, -5})
	tp := autograd.NewTape()
	xv := tp.Input("x", x)
	for _, tc := range []struct {
		a    Aggregator
		want float32
	}{{AggMax, -3}, {AggMin, -5}} {
		y := b.Aggregate(tp, xv, tc.a)
		if y.Value.Data[0] != 0 || y.Value.Data[1] != tc.want {
			t.Fatalf("%v: %v, want [0 %v]", tc.a, y.Value.Data, tc.want)
		}
	}
}

// TestBatchNormRunningStats: training updates the running statistics as
// torch.nn.BatchNorm1d does (momentum 0.1, unbiased variance), and
// evaluation normalises with them.
func TestBatchNormRunningStats(t *testing.T) {
	x, _ := tensor.FromSlice(4, 1, []float32{1, 2, 3, 6})
	bn := NewBatchNorm("", 1)
	blk := &Block{CSR: &tensor.CSR{Indptr: make([]int64, 5), NumSrc: 4}, NumDst: 4}
	y := bn.Forward(autograd.NewTape(), blk, autograd.NewTape().Const(x), true)
	// mean 3, biased variance 3.5, unbiased 14/3.
	if got, want := bn.RunningMean.Value.Data[0], float32(0.3); math.Abs(float64(got-want)) > 1e-6 {
		t.Fatalf("running mean %v, want %v", got, want)
	}
	if got, want := bn.RunningVar.Value.Data[0], float32(0.9+0.1*14.0/3); math.Abs(float64(got-want)) > 1e-6 {
		t.Fatalf("running var %v, want %v", got, want)
	}
	if got, want := y.Value.Data[3], float32(3/math.Sqrt(3.5+1e-5)); math.Abs(float64(got-want)) > 1e-5 {
		t.Fatalf("normalised %v, want %v", got, want)
	}
	e := bn.Forward(autograd.NewInferenceTape(), blk, autograd.NewInferenceTape().Const(x), false)
	if got, want := e.Value.Data[0], float32((1-0.3)/math.Sqrt(float64(0.9+0.1*14.0/3)+1e-5)); math.Abs(float64(got-want)) > 1e-5 {
		t.Fatalf("evaluation %v, want %v", got, want)
	}
}

// userLayer is a layer as a user writes one outside nn: public ops only
// (max, std and edge-weighted aggregation, the destinations' rows, batch
// norm, a concatenation), no memory plan of its own.
type userLayer struct {
	Lin  *Linear
	Norm *BatchNorm
	out  int
}

func (l *userLayer) Forward(tp *autograd.Tape, b *Block, x *autograd.Var, train bool, _ uint64) *autograd.Var {
	h := Concat(tp, b.DstRows(tp, x), b.Aggregate(tp, x, AggMax), b.Aggregate(tp, x, AggStd), b.Aggregate(tp, x, AggWeighted))
	return l.Norm.Forward(tp, b, l.Lin.Forward(tp, h), train)
}
func (l *userLayer) Params() []*autograd.Var  { return append(l.Lin.Params(), l.Norm.Params()...) }
func (l *userLayer) Buffers() []*autograd.Var { return l.Norm.Buffers() }
func (l *userLayer) OutDim() int              { return l.out }

// testUserKind is registered for the tests that iterate every kind (the
// planner's byte-for-byte test among them); "test-" kinds have no PyTorch
// twin.
const testUserKind Kind = "test-user-layer"

func init() {
	Register(Spec{Kind: testUserKind, Help: "a user's layer (tests only)", Build: func(ini *Init, c *Config, _ []float32) ([]Layer, error) {
		return StackLayers(c, func(l, in, out int) Layer {
			return &userLayer{Lin: ini.Linear("lin.", 4*in, out, true), Norm: NewBatchNorm("norm.", out), out: out}
		}), nil
	}})
}

// TestLayerGradients checks whole layers written with the public ops
// (PNA, GIN, GCNII's convolution) numerically: the gradient of their
// input and of each weight matrix.
func TestLayerGradients(t *testing.T) {
	b, x := gradBlock(rand.New(rand.NewPCG(3, 7)), 6, 0.11, -1)
	ini := NewInit(5)
	pna := NewPNAConv(ini, 3, 2, 1.3)
	gradCheckStep(t, "pna/x", x, 1e-3, func(tp *autograd.Tape, x *autograd.Var) *autograd.Var { return pna.Forward(tp, b, x, true, 1) })
	for _, w := range []**autograd.Var{&pna.Pre.W, &pna.Pre.B, &pna.Post.W, &pna.Lin.W} {
		orig := *w
		gradCheckStep(t, "pna/"+orig.Name, orig.Value.Clone(), 1e-3, func(tp *autograd.Tape, v *autograd.Var) *autograd.Var {
			*w = v
			defer func() { *w = orig }()
			return pna.Forward(tp, b, tp.Const(x), true, 1)
		})
	}
	gin := NewGINConv(ini, 3, 4, 2)
	gradCheck(t, "gin/x", x, func(tp *autograd.Tape, x *autograd.Var) *autograd.Var { return gin.Forward(tp, b, x, true, 1) })
}

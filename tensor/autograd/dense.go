package autograd

import (
	"fmt"

	"github.com/graphmill/graphmill/tensor"
)

// Activation is the activation a fused Dense op applies.
type Activation uint8

// The activations of Dense.
const (
	NoActivation Activation = iota
	ActReLU
)

// Term is one summand of Dense: the first rows of X times Wᵀ, W stored
// [out, in] like torch.nn.Linear; with W nil, the first rows of X
// themselves (X then has the output's width).
type Term struct {
	X, W *Var
}

// Dense returns act(Σ_k terms[k].X[:rows]·terms[k].Wᵀ + b) as one op: the
// products are accumulated into one output, and the bias and activation
// are applied by the products' epilogue (tensor.GemmNTMulti: one pass
// over the output for all products), so none of the sums, the bias add or
// the activation makes a matrix or a pass of its own; reading only the first rows of an input replaces a
// copy of them (a GraphSAGE layer's root term reads its destinations, the
// first rows of its sources). b may be nil. Backward computes the
// activation's gradient and the bias's in one pass and feeds the
// products' gradients straight into the inputs' (the first contribution
// to an intermediate's gradient overwrites it, so nothing is zero-filled);
// where no input needs a gradient (a first layer) and the weight
// gradients are one shared product (tensor.ReLUGradFused), the
// activation's and the bias's gradients are made as that product packs
// the output gradient, with no pass or matrix of their own.
//
// The result equals the unfused MatMulOp/Add/AddBias/ReLU chain up to
// float32 rounding: the bias gradient is summed in chunks of rows, and a
// product deeper than one depth block (256) is added to the running sum
// block by block.
func (t *Tape) Dense(rows int, terms []Term, b *Var, act Activation) *Var {
	return t.DenseDropout(rows, terms, b, act, tensor.RowDropout{})
}

// DenseDropout is Dense with node-keyed dropout (tensor.DropoutRows)
// applied to its ReLU output in the same epilogue: the next layer's input
// dropout fused into this layer. Its output equals DropoutRows(Dense(...))
// bitwise, and so does the gradient it passes back (the ReLU's mask of the
// dropped output is the ReLU's and the dropout's together, so backward
// multiplies by the kept factor instead of drawing the mask again), with
// one matrix and two passes over it fewer. drop.P > 0 needs act ActReLU
// and a key per output row.
func (t *Tape) DenseDropout(rows int, terms []Term, b *Var, act Activation, drop tensor.RowDropout) *Var {
	if drop.P != 0 && (act != ActReLU || len(drop.Keys) != rows) {
		shapePanic("Dense", "dropout needs the ReLU and a key per row (%v, %d keys for %d rows)", act, len(drop.Keys), rows)
	}
	if len(terms) == 0 {
		shapePanic("Dense", "no terms")
	}
	n := -1
	for _, tm := range terms {
		xr, xc := tm.X.Shape()
		c := xc
		if tm.W != nil {
			wo, wi := tm.W.Shape()
			if wi != xc {
				shapePanic("Dense", "%s is %d×%d, weight %s is %d×%d (want [out, %d])", tm.X.Name, xr, xc, tm.W.Name, wo, wi, xc)
			}
			c = wo
		}
		if n >= 0 && c != n {
			shapePanic("Dense", "terms of %d and %d columns", n, c)
		}
		n = c
		if rows < 0 || rows > xr {
			shapePanic("Dense", "%d rows of %s which has %d", rows, tm.X.Name, xr)
		}
	}
	if b != nil && (b.Value.Rows != 1 || b.Value.Cols != n) {
		shapePanic("Dense", "bias %s is %d×%d, want 1×%d", b.Name, b.Value.Rows, b.Value.Cols, n)
	}
	// Terms without a weight first (copied or added), then the products,
	// the last of which applies the epilogue.
	order := make([]int, 0, len(terms))
	for k, tm := range terms {
		if tm.W == nil {
			order = append(order, k)
		}
	}
	for k, tm := range terms {
		if tm.W != nil {
			order = append(order, k)
		}
	}
	ep := tensor.Epilogue{ReLU: act == ActReLU, Dropout: drop}
	if b != nil {
		ep.Bias = b.Value.Data
	}
	// Where backward folds the ReLU's gradient into the weight gradients'
	// shared product, it reads the ReLU's mask as bits the products'
	// epilogue writes (1/32 of out's bytes) rather than out, which would
	// come from memory again: 4.6 % of a GraphSAGE training step's CPU
	// time went to that product's masking (AMD EPYC Zen 5).
	fused := act == ActReLU && !t.noGrad && reluGradFused(terms, rows, n)
	if fused {
		ep.Positive = t.bytes(rows * tensor.PositiveStride(n))
	}
	out := t.get(rows, n)
	var xs, ws []tensor.Matrix // the products, summed in one pass over out
	for i, k := range order {
		tm := terms[k]
		x := tm.X.Value.RowSlice(0, rows)
		last := i == len(order)-1
		if tm.W != nil {
			xs, ws = append(xs, x), append(ws, tm.W.Value)
			if last { // accumulating onto the unweighted terms, if any
				must("Dense", tensor.GemmNTMulti(xs, ws, beta(len(xs) < len(order)), out, ep))
			}
			continue
		}
		switch {
		case i == 0 && last: // act(x + b) in one pass
			must("Dense", tensor.BiasAct(out, x, ep.Bias, ep.ReLU))
		case i == 0:
			copy(out.Data, x.Data)
		default:
			must("Dense", tensor.AddScaled(out, 1, x))
		}
		if last && i > 0 {
			must("Dense", tensor.BiasAct(out, out, ep.Bias, ep.ReLU))
		}
		if last && drop.P != 0 {
			must("Dense", tensor.DropoutRows(out, tensor.Matrix{}, out, drop.P, drop.Seed, drop.Keys))
		}
	}
	keep := float32(1)
	if drop.P != 0 {
		_, keep = tensor.DropoutFactors(drop.P)
	}
	inputs := make([]*Var, 0, 2*len(terms)+1)
	for _, tm := range terms {
		inputs = append(inputs, tm.X)
		if tm.W != nil {
			inputs = append(inputs, tm.W)
		}
	}
	if b != nil {
		inputs = append(inputs, b)
	}
	terms = append([]Term(nil), terms...)
	var v *Var
	v = t.record("Dense", out, func(g tensor.Matrix) error {
		var db []float32
		if b != nil && b.requiresGrad {
			db = b.grad().Data
		}
		// dW += gzᵀ·X for every weight, in one call so that gz, the large
		// operand, is packed once (a weight used by two terms: one by one).
		var xs, dws []tensor.Matrix
		shared := false
		for k, tm := range terms {
			if tm.W == nil || !tm.W.requiresGrad {
				continue
			}
			for _, o := range terms[:k] {
				shared = shared || o.W == tm.W
			}
			xs, dws = append(xs, tm.X.Value.RowSlice(0, rows)), append(dws, tm.W.grad())
		}
		if shared {
			xs = nil
		}
		if fused {
			// Only the weights and the bias need gz (a first layer, whose
			// inputs are features): the ReLU's backward is done as the
			// products pack it, and gz is never stored.
			if d := v.deferred; d != nil { // g's last contribution, made as the products read it
				v.deferred = nil
				return tensor.GemmTNMultiReLUBitsRows(g, ep.Positive, keep, xs, 1, dws, db, d.rows)
			}
			return tensor.GemmTNMultiReLUBits(g, ep.Positive, keep, xs, 1, dws, db)
		}
		gz := g
		if act == ActReLU {
			gz = t.get(g.Rows, g.Cols)
		}
		if act == ActReLU || db != nil {
			if err := tensor.ReLUGradBiasScaled(gz, out, g, db, act == ActReLU, keep); err != nil {
				return err
			}
		}
		if xs != nil {
			if err := tensor.GemmTNMulti(1, gz, xs, 1, dws); err != nil {
				return err
			}
		}
		for _, tm := range terms {
			x := tm.X.Value.RowSlice(0, rows)
			if tm.W != nil && tm.W.requiresGrad && xs == nil { // dW += gzᵀ·X
				if err := tensor.Gemm(tensor.Trans, tensor.NoTrans, 1, gz, x, 1, tm.W.grad()); err != nil {
					return err
				}
			}
			if err := intoSet(tm.X, func(dx tensor.Matrix, acc bool) error {
				if !acc && rows < dx.Rows {
					// Rows past the output get no gradient here: left
					// for the next contribution to set (Var.partial).
					tm.X.partial = rows + 1
				}
				dx = dx.RowSlice(0, rows)
				if tm.W == nil {
					return addOrCopy(dx, gz, acc)
				}
				return tensor.Gemm(tensor.NoTrans, tensor.NoTrans, 1, gz, tm.W.Value, beta(acc), dx) // dX = gz·W
			}); err != nil {
				return err
			}
		}
		return nil
	}, inputs...)
	v.takesRows = fused
	return v
}

// reluGradFused reports whether Dense's backward folds the ReLU's backward
// into the weight gradients (tensor.ReLUGradFused): no input needs a
// gradient, and the weights that do are distinct, so that their products
// share one packing of the output gradient.
func reluGradFused(terms []Term, rows, cols int) bool {
	var widths []int
	for k, tm := range terms {
		if tm.X.requiresGrad {
			return false
		}
		if tm.W == nil || !tm.W.requiresGrad {
			continue
		}
		for _, o := range terms[:k] {
			if o.W == tm.W {
				return false
			}
		}
		widths = append(widths, tm.X.Value.Cols)
	}
	return tensor.ReLUGradFused(rows, cols, widths)
}

func (a Activation) String() string {
	switch a {
	case NoActivation:
		return "none"
	case ActReLU:
		return "relu"
	}
	return fmt.Sprintf("Activation(%d)", uint8(a))
}

// Package autograd records operations on tensor.Matrix values on a Tape
// and computes gradients by reverse-mode differentiation. It is the layer
// that GNN models (GraphSAGE, GCN, GAT) and optimisers are built on.
//
// A training step looks like this:
//
//	w := autograd.NewParam("W", tensor.New(in, out))   // lives across steps
//	b := autograd.NewParam("b", tensor.New(1, out))
//	for step := range steps {
//		tp := autograd.NewTape()
//		x := tp.Const(features)                          // no gradient needed
//		h := tp.Aggregate(block, x, tensor.Mean)         // neighbour mean
//		h = tp.ReLU(tp.AddBias(tp.MatMul(h, w), b))
//		loss := tp.NLL(tp.LogSoftmax(h), labels)         // 1×1
//		autograd.ZeroGrad(w, b)
//		if err := tp.Backward(loss); err != nil { ... }  // fills w.Grad, b.Grad
//		// optimiser: w.Value.Data[i] -= lr * w.Grad.Data[i] ...
//	}
//
// The ops are methods of Tape, each returning a new *Var:
//
//   - dense: MatMul, MatMulOp (with transposes), Linear (x·W + b), AddBias,
//     Add, Mul (elementwise), Scale, Sum (to 1×1), ConcatCols, Rows;
//   - activations: ReLU, LeakyReLU, ELU, Dropout (seeded);
//   - losses: LogSoftmax, NLL, CrossEntropy (= NLL∘LogSoftmax),
//     BCEWithLogits — the loss ops return 1×1 Vars;
//   - graph: Aggregate (sum, mean, or weighted e.g. GCN over a tensor.CSR
//     block), HeadDot (GAT attention terms a·h per head), GATAggregate and
//     GATAggregateDropout (edge softmax attention, several heads), and
//     GATAttention (all of GAT's attention in one fused op).
//
// A GraphSAGE layer is ConcatCols(Rows(h, 0, numDst), Aggregate(block, h,
// tensor.Mean)) followed by Linear; a GCN layer is Aggregate(block, h,
// tensor.Weighted) with tensor.GCNWeights as the block's Weights, then
// MatMul; a GAT layer is z := MatMul(h, W), el := HeadDot(z, aSrc),
// er := HeadDot(Rows(z, 0, numDst), aDst), GATAggregate(block, z, el, er, …),
// which GATAttention(block, z, aSrc, aDst, …) computes in one op.
//
// Parameters (NewParam) keep their Grad between Backward calls, so
// gradients accumulate until ZeroGrad; intermediate values belong to the
// tape and are dropped with it. A tape from NewInferenceTape records
// nothing, turns Dropout into the identity and costs no gradient memory.
//
// Errors: shape mismatches are programming errors when building a model, so
// the op methods panic with a message naming the op and the shapes (the
// same idiom as indexing out of range). The kernels underneath never panic
// in worker goroutines; they return errors, which become such panics here.
// Backward returns an error instead of panicking. With Tape.CheckFinite set,
// every op's output (and every gradient in Backward) is checked for NaN/Inf
// and the first offender is reported with its op name, row and column.
package autograd

import (
	"fmt"

	"github.com/graphmill/graphmill/tensor"
	"unsafe"
)

// Var is a value in the computation: a matrix, and, if it requires a
// gradient, the gradient of the loss with respect to it (same shape, filled
// by Backward).
type Var struct {
	Name  string        // for messages; ops name their outputs after themselves
	Value tensor.Matrix // the value
	Grad  tensor.Matrix // the gradient; zero-size until needed
	// Sparse, when set on a constant, is the nonzeros of Value
	// (tensor.NonZeros): dropout then draws at those entries only and a
	// product a·bᵀ runs as a sparse-times-dense product, skipping the
	// zeros (bag-of-words features are mostly zeros). Dropout's output
	// carries its own.
	Sparse *tensor.CSR
	// SparseDense, when set with Sparse, is a matrix of Value's shape,
	// zero outside Sparse's entries, that only this constant's dropout
	// writes, and only at those entries: the dropout's output is written
	// there entry by entry instead of clearing and filling a new matrix
	// (full-graph training on Cora: 15.5 MB a step for 49k nonzeros).
	SparseDense tensor.Matrix

	requiresGrad bool
	// partial, when > 0, says that only the first partial-1 rows of Grad
	// hold a gradient: its first contribution, a Dense layer's backward
	// through the leading rows (its destinations) of a block's input,
	// wrote those alone. The rows past them are set by the next
	// contribution, when it can (Aggregate's backward sets them as it
	// gathers each), or cleared by settle before anything else reads Grad:
	// not clearing them up front saves a pass over most of the matrix
	// (11 MB a step of GraphSAGE's [25,10] minibatches).
	partial int
	// deferred, when not nil, is a contribution to Grad not made yet, the
	// last before the backward of v's op: that op takes it a block of rows
	// at a time as it reads them (takesRows), while they are in cache;
	// anything else settles it first. (GraphSAGE's first layer: the output
	// gradient its weight gradients pack, 10 MB a step, gathered by the
	// next layer's aggregation, no longer goes through memory between.)
	deferred  *deferredGrad
	takesRows bool              // v's op's backward takes a deferred gradient's rows
	owned     bool              // a constant the tape's ops may overwrite (ConstOwned)
	op        bool              // the output of an op (not a leaf)
	ws        *tensor.Workspace // where an op output's gradient is allocated (nil: tensor.New)
}

// NewParam returns a trainable parameter holding value: it requires a
// gradient, which accumulates across Backward calls until ZeroGrad.
func NewParam(name string, value tensor.Matrix) *Var {
	return &Var{Name: name, Value: value, requiresGrad: true}
}

// RequiresGrad reports whether Backward computes a gradient for v.
func (v *Var) RequiresGrad() bool { return v.requiresGrad }

// Shape returns the rows and columns of the value.
func (v *Var) Shape() (rows, cols int) { return v.Value.Rows, v.Value.Cols }

// Scalar returns the single element of a 1×1 value (e.g. a loss).
func (v *Var) Scalar() float32 {
	if len(v.Value.Data) != 1 {
		panic(fmt.Sprintf("autograd: Scalar of %s which is %d×%d", v.Name, v.Value.Rows, v.Value.Cols))
	}
	return v.Value.Data[0]
}

// grad returns the gradient, allocating it (zeroed) on first use.
func (v *Var) grad() tensor.Matrix {
	if !v.hasGrad() {
		v.Grad = v.ws.Zeroed(v.Value.Rows, v.Value.Cols)
	}
	v.settle()
	return v.Grad
}

// deferredGrad is a gradient contribution not made yet (Var.deferred):
// rows makes rows [lo, hi) of it (each once, in any order, blocks on
// several goroutines at once), all the whole.
type deferredGrad struct {
	rows func(lo, hi int)
	all  func() error
}

// settle makes a deferred contribution and clears the rows of a partial
// gradient that no contribution wrote (see Var.partial).
func (v *Var) settle() {
	if d := v.deferred; d != nil {
		v.deferred = nil
		must("deferred gradient of "+v.Name, d.all())
	}
	if v.partial > 0 {
		clear(v.Grad.Data[(v.partial-1)*v.Grad.Cols:])
		v.partial = 0
	}
}

func (v *Var) hasGrad() bool {
	return len(v.Grad.Data) == len(v.Value.Data) && v.Grad.Rows == v.Value.Rows
}

// gradSet returns the gradient for an op's backward to write, and whether
// it must add to it (acc) or may overwrite it: the first contribution to
// an op output's gradient overwrites memory that was never zeroed; later
// ones, and every contribution to a leaf's gradient (parameters
// accumulate across Backward calls), add.
func (v *Var) gradSet() (tensor.Matrix, bool) {
	if v.hasGrad() || !v.op {
		return v.grad(), true
	}
	v.Grad = v.ws.Get(v.Value.Rows, v.Value.Cols)
	return v.Grad, false
}

// ZeroGrad clears the gradients of the given parameters.
func ZeroGrad(params ...*Var) {
	for _, p := range params {
		p.Grad.Zero()
	}
}

// node is one recorded op: how to push out.Grad back to its inputs.
type node struct {
	name     string
	out      *Var
	backward func(g tensor.Matrix) error
}

// Tape records ops for reverse-mode differentiation. A Tape is used by one
// goroutine (the kernels it calls are parallel themselves). Make a new tape
// (or call Reset) for every training step.
type Tape struct {
	// CheckFinite makes every op check its output, and Backward every
	// gradient, for NaN/Inf; the first one found panics (in an op) or is
	// returned (by Backward) as a *tensor.NonFiniteError naming the op.
	CheckFinite bool

	// Workspace, when set, holds every matrix the tape's ops make (outputs,
	// gradients of intermediates, scratch) instead of fresh allocations:
	// they stay valid until the workspace is Reset, which the owner does
	// when the step's results have been used. Parameter gradients never
	// come from it.
	Workspace *tensor.Workspace

	nodes  []node
	noGrad bool

	// GradReady, when set, is called during Backward for every leaf that
	// requires a gradient (a parameter), as soon as its gradient is
	// final: after the earliest recorded op that reads it has run
	// backward. Data-parallel training starts all-reducing those
	// gradients while backward goes on.
	GradReady func(*Var)
	firstUse  map[*Var]int
}

// NewTape returns a tape in training mode.
func NewTape() *Tape { return &Tape{} }

// NewInferenceTape returns a tape in no-grad inference mode: nothing is
// recorded, outputs never require gradients, Dropout is the identity.
func NewInferenceTape() *Tape { return &Tape{noGrad: true} }

// NoGrad reports whether the tape is in inference mode.
func (t *Tape) NoGrad() bool { return t.noGrad }

// Reset forgets the recorded ops so the tape can be reused.
func (t *Tape) Reset() {
	clear(t.firstUse)
	clear(t.nodes)
	t.nodes = t.nodes[:0]
}

// Len returns the number of recorded ops.
func (t *Tape) Len() int { return len(t.nodes) }

// Const wraps a value that needs no gradient (input features, targets).
func (t *Tape) Const(m tensor.Matrix) *Var { return &Var{Name: "const", Value: m} }

// ConstOwned is Const for a value whose owner no longer needs it after
// the step: ops may then work in place on it instead of writing a new
// matrix (Dropout does), saving a pass's worth of memory traffic and the
// matrix. Use it for a batch's gathered input rows.
func (t *Tape) ConstOwned(m tensor.Matrix) *Var { return &Var{Name: "const", Value: m, owned: true} }

// Input wraps a value whose gradient Backward should compute (for example
// to inspect input saliency, or in gradient checks).
func (t *Tape) Input(name string, m tensor.Matrix) *Var {
	return &Var{Name: name, Value: m, requiresGrad: !t.noGrad}
}

// record creates the output of an op and, if any input requires a
// gradient, records its backward function.
func (t *Tape) record(name string, value tensor.Matrix, backward func(g tensor.Matrix) error, inputs ...*Var) *Var {
	out := &Var{Name: name, Value: value, op: true, ws: t.Workspace}
	if t.CheckFinite {
		if err := tensor.CheckFinite(name, value); err != nil {
			panic(err)
		}
	}
	if t.noGrad {
		return out
	}
	for _, in := range inputs {
		if in.requiresGrad {
			out.requiresGrad = true
			break
		}
	}
	if out.requiresGrad {
		if t.GradReady != nil {
			if t.firstUse == nil {
				t.firstUse = map[*Var]int{}
			}
			for _, in := range inputs {
				if _, seen := t.firstUse[in]; in.requiresGrad && !in.op && !seen {
					t.firstUse[in] = len(t.nodes)
				}
			}
		}
		t.nodes = append(t.nodes, node{name: name, out: out, backward: backward})
	}
	return out
}

// Backward computes the gradients of loss, which must be 1×1, with respect
// to every Var that requires one, adding them to their Grad.
func (t *Tape) Backward(loss *Var) error {
	if loss.Value.Rows != 1 || loss.Value.Cols != 1 {
		return fmt.Errorf("autograd: Backward needs a 1×1 loss, %s is %d×%d", loss.Name, loss.Value.Rows, loss.Value.Cols)
	}
	seed := tensor.New(1, 1)
	seed.Data[0] = 1
	return t.BackwardFrom(loss, seed)
}

// BackwardFrom runs reverse mode from out with the given output gradient
// (the same shape as out): afterwards each Var's Grad holds
// d(Σ seed ⊙ out)/dVar added to what it held.
func (t *Tape) BackwardFrom(out *Var, seed tensor.Matrix) error {
	if t.noGrad {
		return fmt.Errorf("autograd: Backward on an inference tape")
	}
	if !out.Value.SameShape(seed) {
		return fmt.Errorf("%w: autograd: seed %d×%d for %s %d×%d", tensor.ErrShape, seed.Rows, seed.Cols, out.Name, out.Value.Rows, out.Value.Cols)
	}
	if !out.requiresGrad {
		return fmt.Errorf("autograd: %s does not depend on any parameter or input that requires a gradient", out.Name)
	}
	if err := tensor.AddScaled(out.grad(), 1, seed); err != nil {
		return err
	}
	var readyAt map[int][]*Var
	if t.GradReady != nil && len(t.firstUse) > 0 {
		readyAt = make(map[int][]*Var, len(t.firstUse))
		for v, i := range t.firstUse {
			readyAt[i] = append(readyAt[i], v)
		}
	}
	for i := len(t.nodes) - 1; i >= 0; i-- {
		n := t.nodes[i]
		if len(n.out.Grad.Data) == 0 {
			for _, v := range readyAt[i] {
				t.GradReady(v)
			}
			continue // does not contribute to out
		}
		if n.out.deferred == nil || !n.out.takesRows || t.CheckFinite {
			n.out.settle()
		}
		if t.CheckFinite {
			if err := tensor.CheckFinite("gradient of "+n.name, n.out.Grad); err != nil {
				return err
			}
		}
		if err := n.backward(n.out.Grad); err != nil {
			return fmt.Errorf("autograd: backward of %s: %w", n.name, err)
		}
		for _, v := range readyAt[i] {
			v.settle()
			t.GradReady(v)
		}
	}
	return nil
}

// get returns an op's output or scratch matrix (contents arbitrary).
func (t *Tape) get(rows, cols int) tensor.Matrix { return t.Workspace.Get(rows, cols) }

// bytes returns n bytes of scratch memory (contents arbitrary), from the
// tape's workspace like its matrices: a float32 matrix's storage seen as
// bytes.
func (t *Tape) bytes(n int) []uint8 {
	m := t.get(1, (n+3)/4)
	if len(m.Data) == 0 {
		return nil
	}
	return unsafe.Slice((*uint8)(unsafe.Pointer(&m.Data[0])), n)
}

// zeroed returns an op's zeroed output or scratch matrix.
func (t *Tape) zeroed(rows, cols int) tensor.Matrix { return t.Workspace.Zeroed(rows, cols) }

// must turns a kernel error during graph construction into a panic.
func must(op string, err error) {
	if err != nil {
		panic(fmt.Sprintf("autograd.%s: %v", op, err))
	}
}

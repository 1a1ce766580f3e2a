package autograd

import (
	"fmt"

	"github.com/graphmill/graphmill/tensor"
)

// into runs f on v's gradient if v requires one; f adds to it.
func into(v *Var, f func(dv tensor.Matrix) error) error {
	if !v.requiresGrad {
		return nil
	}
	return f(v.grad())
}

// intoSet runs f on v's gradient if v requires one; f adds to it when acc
// is true and must overwrite all of it otherwise (see Var.gradSet).
func intoSet(v *Var, f func(dv tensor.Matrix, acc bool) error) error {
	if !v.requiresGrad {
		return nil
	}
	return f(v.gradSet())
}

// intoRows is intoSet for an f that adds to dv's rows before from and sets
// the rest (from is 0 or all rows, or past a partial gradient's written
// rows: see Var.partial).
func intoRows(v *Var, f func(dv tensor.Matrix, from int) error) error {
	if !v.requiresGrad {
		return nil
	}
	dv, from := v.rowsTarget()
	return f(dv, from)
}

// deferGrads says whether Aggregate's backward leaves its gradient to an
// op that takes it a block of rows at a time (Var.deferred); tests turn it
// off to compare.
var deferGrads = true

// rowsTarget returns the gradient an intoRows f writes and the row from
// which it sets rather than adds.
func (v *Var) rowsTarget() (tensor.Matrix, int) {
	if v.hasGrad() && v.partial > 0 && v.deferred == nil {
		from := v.partial - 1
		v.partial = 0
		return v.Grad, from
	}
	dv, acc := v.gradSet()
	if acc {
		return dv, dv.Rows
	}
	return dv, 0
}

// addOrCopy sets dst = src, or adds src to dst with acc.
func addOrCopy(dst, src tensor.Matrix, acc bool) error {
	if acc {
		return tensor.AddScaled(dst, 1, src)
	}
	if !dst.SameShape(src) {
		return tensor.AddScaled(dst, 1, src) // reports the shapes
	}
	copy(dst.Data, src.Data)
	return nil
}

func beta(acc bool) float32 {
	if acc {
		return 1
	}
	return 0
}

func shapePanic(op string, format string, args ...any) {
	panic(fmt.Sprintf("autograd.%s: %v: %s", op, tensor.ErrShape, fmt.Sprintf(format, args...)))
}

// MatMul returns a·b.
func (t *Tape) MatMul(a, b *Var) *Var { return t.MatMulOp(a, tensor.NoTrans, b, tensor.NoTrans) }

// MatMulOp returns op(a)·op(b) where op transposes when told to.
func (t *Tape) MatMulOp(a *Var, ta tensor.Op, b *Var, tb tensor.Op) *Var {
	m, k := a.Shape()
	if ta == tensor.Trans {
		m, k = k, m
	}
	k2, n := b.Shape()
	if tb == tensor.Trans {
		k2, n = n, k2
	}
	if k != k2 {
		shapePanic("MatMul", "%s %d×%d (%s) times %s %d×%d (%s)", a.Name, a.Value.Rows, a.Value.Cols, ta, b.Name, b.Value.Rows, b.Value.Cols, tb)
	}
	if a.Sparse != nil && !a.requiresGrad && ta == tensor.NoTrans && tb == tensor.Trans {
		return t.sparseMatMulT(a, b)
	}
	out := t.get(m, n)
	must("MatMul", tensor.Gemm(ta, tb, 1, a.Value, b.Value, 0, out))
	return t.record("MatMul", out, func(g tensor.Matrix) error {
		// C = op(A)op(B): dop(A) = G op(B)ᵀ, dop(B) = op(A)ᵀ G.
		if err := intoSet(a, func(da tensor.Matrix, acc bool) error {
			if ta == tensor.NoTrans { // dA = G·op(B)ᵀ
				return tensor.Gemm(tensor.NoTrans, flip(tb), 1, g, b.Value, beta(acc), da)
			}
			// A is stored k×m: dA = op(B)·Gᵀ
			return tensor.Gemm(tb, tensor.Trans, 1, b.Value, g, beta(acc), da)
		}); err != nil {
			return err
		}
		return intoSet(b, func(db tensor.Matrix, acc bool) error {
			if tb == tensor.NoTrans { // dB = op(A)ᵀ·G
				return tensor.Gemm(flip(ta), tensor.NoTrans, 1, a.Value, g, beta(acc), db)
			}
			// B is stored n×k: dB = Gᵀ·op(A)
			return tensor.Gemm(tensor.Trans, ta, 1, g, a.Value, beta(acc), db)
		})
	}, a, b)
}

// sparseMatMulT is MatMulOp(a, NoTrans, b, Trans) for a constant a with a
// Sparse twin: out = a·bᵀ as the aggregation kernel's sparse-times-dense
// product over a's nonzeros (out's row i sums a_ij times row j of bᵀ), and
// b's gradient gᵀ·a as its transpose (the aggregation's backward). Both
// transposes of b are small (b is a weight, out × in).
func (t *Tape) sparseMatMulT(a, b *Var) *Var {
	n, k := b.Shape()
	bt := t.get(k, n)
	must("MatMul", tensor.TransposeInto(bt, b.Value))
	out := t.get(a.Value.Rows, n)
	must("MatMul", tensor.Aggregate(out, a.Sparse, bt, tensor.Weighted))
	return t.record("MatMul", out, func(g tensor.Matrix) error {
		return intoSet(b, func(db tensor.Matrix, acc bool) error {
			dbt := t.get(k, n) // aᵀ·g, then transposed into db
			if err := tensor.AggregateGradSet(dbt, a.Sparse, g, tensor.Weighted); err != nil {
				return err
			}
			if !acc {
				return tensor.TransposeInto(db, dbt)
			}
			tmp := t.get(n, k)
			if err := tensor.TransposeInto(tmp, dbt); err != nil {
				return err
			}
			return tensor.AddScaled(db, 1, tmp)
		})
	}, a, b)
}

func flip(o tensor.Op) tensor.Op {
	if o == tensor.Trans {
		return tensor.NoTrans
	}
	return tensor.Trans
}

// Linear returns x·w + b (b is 1×cols(w), or nil for no bias).
func (t *Tape) Linear(x, w, b *Var) *Var {
	y := t.MatMul(x, w)
	if b == nil {
		return y
	}
	return t.AddBias(y, b)
}

// AddBias returns x with the 1×cols row b added to every row.
func (t *Tape) AddBias(x, b *Var) *Var {
	if b.Value.Rows != 1 || b.Value.Cols != x.Value.Cols {
		shapePanic("AddBias", "bias %s is %d×%d, want 1×%d", b.Name, b.Value.Rows, b.Value.Cols, x.Value.Cols)
	}
	out := t.get(x.Value.Rows, x.Value.Cols)
	must("AddBias", tensor.AddBias(out, x.Value, b.Value.Data))
	return t.record("AddBias", out, func(g tensor.Matrix) error {
		if err := intoSet(x, func(dx tensor.Matrix, acc bool) error { return addOrCopy(dx, g, acc) }); err != nil {
			return err
		}
		return into(b, func(db tensor.Matrix) error { return tensor.SumRowsInto(db.Data, g) })
	}, x, b)
}

func sameShape(op string, a, b *Var) {
	if !a.Value.SameShape(b.Value) {
		shapePanic(op, "%s is %d×%d, %s is %d×%d", a.Name, a.Value.Rows, a.Value.Cols, b.Name, b.Value.Rows, b.Value.Cols)
	}
}

// Add returns a + b (same shapes).
func (t *Tape) Add(a, b *Var) *Var {
	sameShape("Add", a, b)
	out := t.get(a.Value.Rows, a.Value.Cols)
	must("Add", tensor.Add(out, a.Value, b.Value))
	return t.record("Add", out, func(g tensor.Matrix) error {
		if err := intoSet(a, func(da tensor.Matrix, acc bool) error { return addOrCopy(da, g, acc) }); err != nil {
			return err
		}
		return intoSet(b, func(db tensor.Matrix, acc bool) error { return addOrCopy(db, g, acc) })
	}, a, b)
}

// Mul returns the elementwise product a ⊙ b.
func (t *Tape) Mul(a, b *Var) *Var {
	sameShape("Mul", a, b)
	out := t.get(a.Value.Rows, a.Value.Cols)
	must("Mul", tensor.Mul(out, a.Value, b.Value))
	return t.record("Mul", out, func(g tensor.Matrix) error {
		tmp := t.get(g.Rows, g.Cols)
		if err := into(a, func(da tensor.Matrix) error {
			if err := tensor.Mul(tmp, g, b.Value); err != nil {
				return err
			}
			return tensor.AddScaled(da, 1, tmp)
		}); err != nil {
			return err
		}
		return into(b, func(db tensor.Matrix) error {
			if err := tensor.Mul(tmp, g, a.Value); err != nil {
				return err
			}
			return tensor.AddScaled(db, 1, tmp)
		})
	}, a, b)
}

// Scale returns s*x.
func (t *Tape) Scale(x *Var, s float32) *Var {
	out := t.get(x.Value.Rows, x.Value.Cols)
	must("Scale", tensor.Scale(out, s, x.Value))
	return t.record("Scale", out, func(g tensor.Matrix) error {
		return intoSet(x, func(dx tensor.Matrix, acc bool) error {
			if acc {
				return tensor.AddScaled(dx, s, g)
			}
			return tensor.Scale(dx, s, g)
		})
	}, x)
}

type gradFn func(dx, x, y, dy tensor.Matrix) error

func (t *Tape) unary(name string, x *Var, fwd func(dst, x tensor.Matrix) error, bwd gradFn) *Var {
	out := t.get(x.Value.Rows, x.Value.Cols)
	must(name, fwd(out, x.Value))
	return t.record(name, out, func(g tensor.Matrix) error {
		return into(x, func(dx tensor.Matrix) error { return bwd(dx, x.Value, out, g) })
	}, x)
}

// ReLU returns max(x, 0).
func (t *Tape) ReLU(x *Var) *Var { return t.unary("ReLU", x, tensor.ReLU, tensor.ReLUGrad) }

// LeakyReLU returns x where positive and slope*x elsewhere.
func (t *Tape) LeakyReLU(x *Var, slope float32) *Var {
	return t.unary("LeakyReLU", x,
		func(d, x tensor.Matrix) error { return tensor.LeakyReLU(d, x, slope) },
		func(dx, x, y, dy tensor.Matrix) error { return tensor.LeakyReLUGrad(dx, x, y, dy, slope) })
}

// ELU returns x where positive and alpha*(exp(x)-1) elsewhere.
func (t *Tape) ELU(x *Var, alpha float32) *Var {
	return t.unary("ELU", x,
		func(d, x tensor.Matrix) error { return tensor.ELU(d, x, alpha) },
		func(dx, x, y, dy tensor.Matrix) error { return tensor.ELUGrad(dx, x, y, dy, alpha) })
}

// Dropout zeroes elements with probability p and scales the rest by
// 1/(1-p); the mask is determined by seed (use a new seed every step). On
// an inference tape, or with p == 0, it returns x unchanged.
func (t *Tape) Dropout(x *Var, p float64, seed uint64) *Var {
	if v := t.sparseDropout(x, p, seed, nil); v != nil {
		return v
	}
	return t.dropout(x, p,
		func(dst, src tensor.Matrix) error { return tensor.Dropout(dst, tensor.Matrix{}, src, p, seed) },
		func(dx, g tensor.Matrix, acc bool) error { return tensor.DropoutGrad(dx, g, p, seed, acc) })
}

// DropoutRows is Dropout with row i's mask keyed by keys[i] (its node id)
// rather than its position (tensor.DropoutRows); nil keys fall back to
// Dropout.
func (t *Tape) DropoutRows(x *Var, p float64, seed uint64, keys []int32) *Var {
	if keys == nil || len(keys) != x.Value.Rows {
		return t.Dropout(x, p, seed)
	}
	if v := t.sparseDropout(x, p, seed, keys); v != nil {
		return v
	}
	apply := func(dst, src tensor.Matrix) error {
		return tensor.DropoutRows(dst, tensor.Matrix{}, src, p, seed, keys)
	}
	return t.dropout(x, p, apply, func(dx, g tensor.Matrix, acc bool) error {
		if !acc {
			return apply(dx, g)
		}
		tmp := t.get(g.Rows, g.Cols)
		if err := apply(tmp, g); err != nil {
			return err
		}
		return tensor.AddScaled(dx, 1, tmp)
	})
}

// sparseDropout is Dropout (keys nil) or DropoutRows of a constant with a
// Sparse twin: the factors are drawn at its nonzeros only, the output
// (the same values, zeros included) is written from them and carries them
// as its own twin. Nil when x has no twin (or needs a gradient).
func (t *Tape) sparseDropout(x *Var, p float64, seed uint64, keys []int32) *Var {
	if x.Sparse == nil || x.requiresGrad || t.noGrad || p == 0 {
		return nil
	}
	// The output's weights and its transpose's, in the workspace.
	nnz := len(x.Sparse.Weights)
	c, err := tensor.DropoutNonZerosInto(x.Sparse, p, seed, keys, t.get(1, nnz).Data, t.get(1, nnz).Data)
	must("Dropout", err)
	// An owned x is overwritten in place; it is zero outside its
	// nonzeros, as SparseDense is, so only the entries need writing.
	out, sd := x.Value, x.SparseDense
	switch {
	case x.owned:
		must("Dropout", tensor.SetNonZeros(out, c))
	case sd.Data != nil && sd.Rows == out.Rows && sd.Cols == out.Cols:
		out = sd
		must("Dropout", tensor.SetNonZeros(out, c))
	default:
		out = t.get(out.Rows, out.Cols)
		must("Dropout", tensor.Densify(out, c))
	}
	return &Var{Name: "Dropout", Value: out, Sparse: c, op: true, ws: t.Workspace, owned: x.owned}
}

// dropout is Dropout and DropoutRows: apply multiplies src by the drawn
// factors into dst (in place when they are the same); grad sets (or with
// acc adds) the gradient by drawing the same factors again, so no mask is
// kept.
func (t *Tape) dropout(x *Var, p float64, apply func(dst, src tensor.Matrix) error, grad func(dx, g tensor.Matrix, acc bool) error) *Var {
	if t.noGrad || p == 0 {
		return x
	}
	if x.owned && !x.requiresGrad {
		// In place on a constant its owner gave up (ConstOwned): no new
		// matrix, and no gradient to pass back.
		must("Dropout", apply(x.Value, x.Value))
		return &Var{Name: "Dropout", Value: x.Value, op: true, ws: t.Workspace, owned: true}
	}
	out := t.get(x.Value.Rows, x.Value.Cols)
	must("Dropout", apply(out, x.Value))
	return t.record("Dropout", out, func(g tensor.Matrix) error {
		return intoSet(x, func(dx tensor.Matrix, acc bool) error { return grad(dx, g, acc) })
	}, x)
}

// LogSoftmax returns the row-wise log-softmax of x.
func (t *Tape) LogSoftmax(x *Var) *Var {
	out := t.get(x.Value.Rows, x.Value.Cols)
	must("LogSoftmax", tensor.LogSoftmax(out, x.Value))
	return t.record("LogSoftmax", out, func(g tensor.Matrix) error {
		return into(x, func(dx tensor.Matrix) error { return tensor.LogSoftmaxGrad(dx, out, g) })
	}, x)
}

// NLL returns the 1×1 mean negative log-likelihood of the labels under the
// log-probabilities logp (rows with a negative label are ignored; with no
// labelled row the loss is 0).
func (t *Tape) NLL(logp *Var, labels []int32) *Var {
	loss, count, err := tensor.NLLLoss(logp.Value, labels)
	must("NLL", err)
	out := t.get(1, 1)
	out.Data[0] = loss
	return t.record("NLL", out, func(g tensor.Matrix) error {
		return into(logp, func(d tensor.Matrix) error { return tensor.NLLLossGrad(d, labels, count, g.Data[0]) })
	}, logp)
}

// CrossEntropy returns NLL(LogSoftmax(logits), labels), bitwise in value
// and gradient, as one op that computes the log-softmax of the labelled
// rows only (full-graph training labels a few of the rows: 140 of Cora's
// 2708) and makes no log-probability matrix or its gradient.
func (t *Tape) CrossEntropy(logits *Var, labels []int32) *Var {
	lse := t.get(1, logits.Value.Rows)
	loss, count, err := tensor.CrossEntropy(logits.Value, labels, lse.Data)
	must("CrossEntropy", err)
	out := t.get(1, 1)
	out.Data[0] = loss
	return t.record("CrossEntropy", out, func(g tensor.Matrix) error {
		return into(logits, func(dx tensor.Matrix) error {
			return tensor.CrossEntropyGrad(dx, logits.Value, labels, lse.Data, count, g.Data[0])
		})
	}, logits)
}

// BCEWithLogits returns the 1×1 mean binary cross-entropy between
// sigmoid(logits) and targets (same shape, values in [0, 1]).
func (t *Tape) BCEWithLogits(logits *Var, targets tensor.Matrix) *Var {
	loss, err := tensor.BCEWithLogits(logits.Value, targets)
	must("BCEWithLogits", err)
	out := t.get(1, 1)
	out.Data[0] = loss
	return t.record("BCEWithLogits", out, func(g tensor.Matrix) error {
		return into(logits, func(d tensor.Matrix) error { return tensor.BCEWithLogitsGrad(d, logits.Value, targets, g.Data[0]) })
	}, logits)
}

// Sum returns the 1×1 sum of all elements of x.
func (t *Tape) Sum(x *Var) *Var {
	var s float64
	for _, v := range x.Value.Data {
		s += float64(v)
	}
	out := t.get(1, 1)
	out.Data[0] = float32(s)
	return t.record("Sum", out, func(g tensor.Matrix) error {
		return into(x, func(dx tensor.Matrix) error {
			for i := range dx.Data {
				dx.Data[i] += g.Data[0]
			}
			return nil
		})
	}, x)
}

// ConcatCols returns [a | b]: the columns of a followed by those of b (the
// GraphSAGE combination of self and neighbour features).
func (t *Tape) ConcatCols(a, b *Var) *Var {
	if a.Value.Rows != b.Value.Rows {
		shapePanic("ConcatCols", "%s has %d rows, %s has %d", a.Name, a.Value.Rows, b.Name, b.Value.Rows)
	}
	ca, cb := a.Value.Cols, b.Value.Cols
	out := t.get(a.Value.Rows, ca+cb)
	for i := 0; i < out.Rows; i++ {
		copy(out.Row(i)[:ca], a.Value.Row(i))
		copy(out.Row(i)[ca:], b.Value.Row(i))
	}
	return t.record("ConcatCols", out, func(g tensor.Matrix) error {
		if err := into(a, func(da tensor.Matrix) error {
			for i := 0; i < g.Rows; i++ {
				tensor.Axpy(1, g.Row(i)[:ca], da.Row(i))
			}
			return nil
		}); err != nil {
			return err
		}
		return into(b, func(db tensor.Matrix) error {
			for i := 0; i < g.Rows; i++ {
				tensor.Axpy(1, g.Row(i)[ca:], db.Row(i))
			}
			return nil
		})
	}, a, b)
}

// Rows returns rows [from, to) of x (a copy). In a sampled block whose
// destinations are the first sources, Rows(h, 0, block.NumDst()) gives the
// destinations' own features.
func (t *Tape) Rows(x *Var, from, to int) *Var {
	if from < 0 || to < from || to > x.Value.Rows {
		shapePanic("Rows", "rows [%d, %d) of %s with %d rows", from, to, x.Name, x.Value.Rows)
	}
	out := t.get(to-from, x.Value.Cols)
	copy(out.Data, x.Value.RowSlice(from, to).Data)
	return t.record("Rows", out, func(g tensor.Matrix) error {
		return into(x, func(dx tensor.Matrix) error {
			return tensor.AddScaled(dx.RowSlice(from, to), 1, g)
		})
	}, x)
}

// Aggregate returns, for each destination of the block g, the Sum, Mean or
// Weighted sum (g.Weights, e.g. from tensor.GCNWeights) of the rows of x
// (NumSrc rows) over its in-edges: a NumDst × cols(x) matrix. Its backward
// gathers over g.T() (built on first use and cached in g).
func (t *Tape) Aggregate(g *tensor.CSR, x *Var, mode tensor.Reduce) *Var {
	out := t.get(g.NumDst(), x.Value.Cols)
	name := "Aggregate(" + mode.String() + ")"
	must(name, tensor.Aggregate(out, g, x.Value, mode))
	if x.requiresGrad && !t.noGrad {
		g.T() // build the transpose now, on the tape's goroutine
	}
	return t.record(name, out, func(gy tensor.Matrix) error {
		if deferGrads && x.takesRows && x.requiresGrad && x.deferred == nil {
			// Left for x's op to make a block of rows at a time as it
			// reads them (Var.deferred).
			dx, from := x.rowsTarget()
			rows, err := tensor.AggregateGradRowsFunc(dx, g, gy, mode, from)
			if err != nil {
				return err
			}
			x.deferred = &deferredGrad{rows: rows, all: func() error { return tensor.AggregateGradSetFrom(dx, g, gy, mode, from) }}
			return nil
		}
		return intoRows(x, func(dx tensor.Matrix, from int) error {
			return tensor.AggregateGradSetFrom(dx, g, gy, mode, from)
		})
	}, x)
}

// HeadDot returns the per-head attention terms of GAT: for h with
// heads*F columns and a (heads × F), out[n, k] = h[n, head k]·a[k]
// (an N × heads matrix). Use it for el = HeadDot(h, aSrc) and
// er = HeadDot(hDst, aDst).
func (t *Tape) HeadDot(h, a *Var) *Var {
	heads, f := a.Shape()
	if heads == 0 || h.Value.Cols != heads*f {
		shapePanic("HeadDot", "%s has %d columns, attention %s is %d×%d", h.Name, h.Value.Cols, a.Name, heads, f)
	}
	n := h.Value.Rows
	out := t.get(n, heads)
	for i := 0; i < n; i++ {
		r := h.Value.Row(i)
		for k := 0; k < heads; k++ {
			out.Data[i*heads+k] = tensor.Dot(r[k*f:(k+1)*f], a.Value.Row(k))
		}
	}
	return t.record("HeadDot", out, func(g tensor.Matrix) error {
		if err := into(h, func(dh tensor.Matrix) error {
			for i := 0; i < n; i++ {
				r := dh.Row(i)
				for k := 0; k < heads; k++ {
					tensor.Axpy(g.Data[i*heads+k], a.Value.Row(k), r[k*f:(k+1)*f])
				}
			}
			return nil
		}); err != nil {
			return err
		}
		return into(a, func(da tensor.Matrix) error {
			for i := 0; i < n; i++ {
				r := h.Value.Row(i)
				for k := 0; k < heads; k++ {
					tensor.Axpy(g.Data[i*heads+k], r[k*f:(k+1)*f], da.Row(k))
				}
			}
			return nil
		})
	}, h, a)
}

// GATAggregate is GAT's attention aggregation (see tensor.GATAggregate):
// h is NumSrc × heads*F, el is NumSrc × heads, er is NumDst × heads; the
// result is NumDst × heads*F (concatenated heads; average them yourself
// for a final layer if wanted).
func (t *Tape) GATAggregate(g *tensor.CSR, h, el, er *Var, heads int, slope float32) *Var {
	return t.GATAggregateDropout(g, h, el, er, heads, slope, 0, 0)
}

// GATAggregateDropout is GATAggregate with dropout p on the attention
// coefficients (each edge and head kept with probability 1-p and scaled by
// 1/(1-p), the mask drawn from seed), as GAT trains. On an inference tape,
// or with p == 0, it is GATAggregate.
func (t *Tape) GATAggregateDropout(g *tensor.CSR, h, el, er *Var, heads int, slope float32, p float64, seed uint64) *Var {
	return t.GATAggregateDropoutKeyed(g, h, el, er, heads, slope, p, seed, nil)
}

// GATAggregateDropoutKeyed is GATAggregateDropout with the attention mask
// of destination i's edges keyed by dstKeys[i] (its node id) rather than
// the edges' positions (tensor.DropoutMaskSegments); nil keys fall back to
// positions.
func (t *Tape) GATAggregateDropoutKeyed(g *tensor.CSR, h, el, er *Var, heads int, slope float32, p float64, seed uint64, dstKeys []int32) *Var {
	out := t.get(g.NumDst(), h.Value.Cols)
	alpha := t.get(1, g.NumEdges()*heads).Data
	var keep []float32
	if p > 0 && !t.noGrad {
		mask := t.get(1, len(alpha))
		if dstKeys != nil && len(dstKeys) == g.NumDst() {
			off := make([]int64, len(g.Indptr))
			for i, e := range g.Indptr {
				off[i] = e * int64(heads)
			}
			must("GATAggregate", tensor.DropoutMaskSegments(mask, p, seed, off, dstKeys))
		} else {
			must("GATAggregate", tensor.DropoutMask(mask, p, seed))
		}
		keep = mask.Data
	}
	must("GATAggregate", tensor.GATAggregateKeep(out, alpha, keep, g, h.Value, el.Value, er.Value, heads, slope))
	if !t.noGrad {
		g.T()
	}
	return t.record("GATAggregate", out, func(gy tensor.Matrix) error {
		if !h.requiresGrad && !el.requiresGrad && !er.requiresGrad {
			return nil
		}
		// The kernel computes all three gradients; scratch for the unneeded.
		dh, del, der := t.gradOrScratch(h), t.gradOrScratch(el), t.gradOrScratch(er)
		return tensor.GATAggregateGradKeep(dh, del, der, g, h.Value, el.Value, er.Value, alpha, keep, gy, heads, slope)
	}, h, el, er)
}

func (t *Tape) gradOrScratch(v *Var) tensor.Matrix {
	if v.requiresGrad {
		return v.grad()
	}
	return t.zeroed(v.Value.Rows, v.Value.Cols)
}

// Custom records an op computed outside the tape, such as an aggregation
// whose rows come from other processes: value is its output, and backward
// receives the output's gradient g and, for every input in order, the
// matrix to add that input's gradient to (a zero-size Matrix for an input
// that needs none). On an inference tape nothing is recorded.
func (t *Tape) Custom(name string, value tensor.Matrix, backward func(g tensor.Matrix, grads []tensor.Matrix) error, inputs ...*Var) *Var {
	return t.record(name, value, func(g tensor.Matrix) error {
		grads := make([]tensor.Matrix, len(inputs))
		for i, in := range inputs {
			if in.requiresGrad {
				grads[i] = in.grad()
			}
		}
		return backward(g, grads)
	}, inputs...)
}

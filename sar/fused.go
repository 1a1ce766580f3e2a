package sar

import (
	"github.com/graphmill/graphmill/tensor"
	"github.com/graphmill/graphmill/tensor/autograd"
)

// Fused layers. GCN's and GraphSAGE's layers run as one op each on the
// tape, act(agg(h)·Wlᵀ + h_dst·Wrᵀ + b), which keeps only what backward
// needs: the aggregated rows when the layer aggregates first, and the
// output (act' is read from it). Op by op, the same layer would keep five
// or six matrices of its width per node; the step's peak memory is what
// bounds the graph a rank can hold.

type fusedLayer struct {
	agg  *linAgg
	wl   *autograd.Var // out × in, applied to the aggregated rows
	wr   *autograd.Var // out × in, applied to the output rows' own input (nil: none)
	b    *autograd.Var
	relu bool
}

func mustGemm(err error) {
	if err != nil {
		panic("sar: " + err.Error()) // shapes are the model's: a programming error
	}
}

// gemm is C = alpha·op(A)·op(B) + beta·C, skipped when a dimension is zero.
func gemm(tA tensor.Op, tB tensor.Op, a, b tensor.Matrix, beta float32, c tensor.Matrix) {
	if a.Rows == 0 || a.Cols == 0 || b.Rows == 0 || b.Cols == 0 || c.Rows == 0 || c.Cols == 0 {
		return
	}
	mustGemm(tensor.Gemm(tA, tB, 1, a, b, beta, c))
}

// gatherRows returns rows pos of m (pos nil: m itself).
func gatherRows(m tensor.Matrix, pos []int32) tensor.Matrix {
	if pos == nil {
		return m
	}
	out := tensor.New(len(pos), m.Cols)
	for i, r := range pos {
		copy(out.Row(i), m.Row(int(r)))
	}
	return out
}

// fused runs layer f on the input rows h of topo t.
func (x *exchanger) fused(tp *autograd.Tape, f fusedLayer, h *autograd.Var, t *topo) (*autograd.Var, error) {
	out, in := f.wl.Shape()
	csr := f.agg.on(t)
	tf := transformFirst(h, in, out)
	var a tensor.Matrix // aggregated input rows (aggregate first), kept for dWl
	var pre tensor.Matrix
	if tf {
		z := tensor.New(h.Value.Rows, out)
		gemm(tensor.NoTrans, tensor.Trans, h.Value, f.wl.Value, 0, z)
		var err error
		if pre, err = x.aggFwd(csr, z, t); err != nil {
			return nil, err
		}
	} else {
		var err error
		if a, err = x.aggFwd(csr, h.Value, t); err != nil {
			return nil, err
		}
		pre = tensor.New(a.Rows, out)
		gemm(tensor.NoTrans, tensor.Trans, a, f.wl.Value, 0, pre)
	}
	if f.wr != nil {
		gemm(tensor.NoTrans, tensor.Trans, gatherRows(h.Value, t.dstInSrc), f.wr.Value, 1, pre)
	}
	if f.b != nil {
		mustGemm(tensor.AddBias(pre, pre, f.b.Value.Data))
	}
	if f.relu {
		for i, v := range pre.Data {
			pre.Data[i] = max(v, 0)
		}
	}
	if tp.NoGrad() {
		return tp.Const(pre), nil
	}
	y := pre
	// The inputs h, Wl, then Wr and b where the layer has them.
	inputs := []*autograd.Var{h, f.wl}
	iwr, ib := -1, -1
	if f.wr != nil {
		iwr, inputs = len(inputs), append(inputs, f.wr)
	}
	if f.b != nil {
		ib, inputs = len(inputs), append(inputs, f.b)
	}
	return tp.Custom("SAR-layer-"+f.agg.name, y, func(g tensor.Matrix, grads []tensor.Matrix) error {
		dh, dwl := grads[0], grads[1]
		gp := g
		if f.relu {
			gp = tensor.New(g.Rows, g.Cols)
			for i, v := range y.Data {
				if v > 0 {
					gp.Data[i] = g.Data[i]
				}
			}
		}
		if ib >= 0 && grads[ib].Data != nil {
			mustGemm(tensor.SumRowsInto(grads[ib].Data, gp))
		}
		if f.wr != nil {
			hd := gatherRows(h.Value, t.dstInSrc)
			if dwr := grads[iwr]; dwr.Data != nil {
				gemm(tensor.Trans, tensor.NoTrans, gp, hd, 1, dwr)
			}
			if dh.Data != nil {
				if t.dstInSrc == nil {
					gemm(tensor.NoTrans, tensor.NoTrans, gp, f.wr.Value, 1, dh)
				} else {
					r := tensor.New(gp.Rows, in)
					gemm(tensor.NoTrans, tensor.NoTrans, gp, f.wr.Value, 0, r)
					scatterAdd(dh, t.dstInSrc, r)
				}
			}
		}
		if tf {
			// pre = A(h Wlᵀ): the gradient of h Wlᵀ is Aᵀ gp, exchanged.
			at := tensor.New(h.Value.Rows, out)
			if err := x.aggBwd(csr, gp, t, at); err != nil {
				return err
			}
			if dwl.Data != nil {
				gemm(tensor.Trans, tensor.NoTrans, at, h.Value, 1, dwl)
			}
			if dh.Data != nil {
				gemm(tensor.NoTrans, tensor.NoTrans, at, f.wl.Value, 1, dh)
			}
			return nil
		}
		if dwl.Data != nil {
			gemm(tensor.Trans, tensor.NoTrans, gp, a, 1, dwl)
		}
		if dh.Data != nil {
			gh := tensor.New(gp.Rows, in)
			gemm(tensor.NoTrans, tensor.NoTrans, gp, f.wl.Value, 0, gh)
			return x.aggBwd(csr, gh, t, dh)
		}
		return nil
	}, inputs...), nil
}

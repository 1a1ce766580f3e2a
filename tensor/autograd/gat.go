package autograd

import "github.com/graphmill/graphmill/tensor"

// GATAttention is a GAT layer's attention as one op (tensor.GATForward and
// tensor.GATBackward): for the projected features h (NumSrc × heads*F, the
// destinations first) and the attention vectors aSrc and aDst (heads × F),
// the attention terms, the edge softmax of their LeakyReLU(slope), the
// attention dropout p and the weighted sum over each destination's
// in-edges: NumDst × heads*F. It equals
//
//	GATAggregateDropoutKeyed(g, h, HeadDot(h, aSrc), HeadDot(Rows(h, 0, NumDst), aDst), …)
//
// to float32 rounding, with the same dropout factors, without the
// intermediate matrices and their gradients; every buffer comes from the
// tape's workspace.
func (t *Tape) GATAttention(g *tensor.CSR, h, aSrc, aDst *Var, slope float32, p float64, seed uint64, dstKeys []int32) *Var {
	heads := aSrc.Value.Rows
	nd, ne := g.NumDst(), g.NumEdges()
	out := t.get(nd, h.Value.Cols)
	el, er := t.get(g.NumSrc, heads), t.get(nd, heads)
	alpha := t.get(1, ne*heads).Data
	var keep []float32
	var keys []int32
	if p > 0 && !t.noGrad {
		keep = t.get(1, ne*heads).Data
		if dstKeys != nil && len(dstKeys) == nd {
			keys = dstKeys // drawn by the kernel
		} else {
			must("GATAttention", tensor.DropoutMask(tensor.Matrix{Rows: 1, Cols: len(keep), Data: keep}, p, seed))
		}
	}
	must("GATAttention", tensor.GATForward(out, el, er, alpha, keep, g, h.Value, aSrc.Value, aDst.Value, slope, keys, p, seed))
	if !t.noGrad {
		g.T()
	}
	return t.record("GATAttention", out, func(gy tensor.Matrix) error {
		scratch := t.get(1, tensor.GATBackwardScratch(g.NumSrc, nd, ne, heads, h.Value.Cols)).Data
		var dh tensor.Matrix
		acc := false
		if h.requiresGrad {
			dh, acc = h.gradSet()
		} else {
			dh = t.get(h.Value.Rows, h.Value.Cols)
		}
		var daSrc, daDst tensor.Matrix
		if aSrc.requiresGrad {
			daSrc = aSrc.grad()
		}
		if aDst.requiresGrad {
			daDst = aDst.grad()
		}
		return tensor.GATBackward(dh, acc, daSrc, daDst, g, h.Value, aSrc.Value, aDst.Value, el, er, alpha, keep, gy, scratch, slope)
	}, h, aSrc, aDst)
}

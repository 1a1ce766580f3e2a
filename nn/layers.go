package nn

import (
	"github.com/graphmill/graphmill/tensor"
	"github.com/graphmill/graphmill/tensor/autograd"
)

// Layer is one message-passing layer: it maps the features x of a block's
// source rows to features of its destination rows.
type Layer interface {
	// Forward computes the layer on block b. train enables attention
	// dropout (GAT) with the given seed.
	Forward(tp *autograd.Tape, b *Block, x *autograd.Var, train bool, seed uint64) *autograd.Var
	// Params returns the layer's parameters, named relative to the layer
	// (e.g. "lin_l.weight").
	Params() []*autograd.Var
	// OutDim is the width of the layer's output.
	OutDim() int
}

// linear computes x·Wᵀ for a weight stored [out, in] like torch.nn.Linear.
func linear(tp *autograd.Tape, x, w *autograd.Var) *autograd.Var {
	return tp.MatMulOp(x, tensor.NoTrans, w, tensor.Trans)
}

// aggregateLinear returns linear(aggregate(x)) over the edges c of block b,
// in whichever order costs less: aggregating the in-dim features then
// transforming the destinations, or transforming every source then
// aggregating out-dim features (the two are equal, aggregation being
// linear).
func aggregateLinear(tp *autograd.Tape, b *Block, c *tensor.CSR, x, w *autograd.Var, mode tensor.Reduce) *autograd.Var {
	out, in := w.Shape()
	if aggregateFirst(BlockShape{Src: c.NumSrc, Dst: b.NumDst, Edges: b.CSR.NumEdges()}, in, out) {
		return linear(tp, tp.Aggregate(c, x, mode), w)
	}
	return tp.Aggregate(c, linear(tp, x, w), mode)
}

package nn

import (
	"fmt"
	"math"

	"github.com/graphmill/graphmill/tensor"
	"github.com/graphmill/graphmill/tensor/autograd"
)

// The public ops of a layer. A layer's Forward is written with the
// Block's graph ops below and the tape's dense and element-wise ops
// (autograd.Tape: MatMul, Linear, Dense, Add, Mul, ReLU, ConcatCols, ...).
// The Block's ops are the only ones that read edges or rows other
// processes own, so one Forward runs unchanged on the full graph, sampled
// blocks, GNNAutoScale batches, data-parallel ranks and SAR shards (whose
// blocks carry a Remote).

// Aggregator is how Block.Aggregate reduces a destination's in-edges.
type Aggregator uint8

// The aggregators.
const (
	// AggSum adds the source rows.
	AggSum Aggregator = iota
	// AggMean averages them (0 for a destination without in-edges).
	AggMean
	// AggMax and AggMin take the element-wise maximum and minimum (0
	// without in-edges), as PyG's max and min aggregations.
	AggMax
	AggMin
	// AggStd is the element-wise standard deviation, sqrt(E[x²]-E[x]²),
	// 0 where the variance is at most 1e-5 (PyG 2.3's StdAggregation).
	AggStd
	// AggGCN is GCN's normalised sum with one self-loop per destination
	// and edge weights 1/sqrt((deg(d)+1)(deg(s)+1)), deg the in-degree in
	// the whole graph (the model's degree table).
	AggGCN
	// AggWeighted adds the source rows times the dataset's own edge
	// weights (graph.CSC.Weights, carried into every block: full graph,
	// sampled, GNNAutoScale and SAR), as PyG's GraphConv with edge_weight.
	// A block of a graph without weights panics with a clear message.
	AggWeighted
)

var aggNames = [...]string{"sum", "mean", "max", "min", "std", "gcn", "weighted"}

// String names the aggregator.
func (a Aggregator) String() string {
	if int(a) < len(aggNames) {
		return aggNames[a]
	}
	return fmt.Sprintf("Aggregator(%d)", uint8(a))
}

// linear reports whether the aggregator is a weighted sum of the rows.
func (a Aggregator) linear() bool {
	return a == AggSum || a == AggMean || a == AggGCN || a == AggWeighted
}

// Conv is the fused form act(agg(x)·Wᵀ + x_dst·Rootᵀ + Bias) of
// GraphConv, GraphSAGE and GCN layers, computed as one op: it keeps only
// what backward needs, and aggregates before or after the product,
// whichever costs less in the block's mode (flops locally, bytes sent on a
// SAR shard).
type Conv struct {
	// Agg is AggSum, AggMean, AggGCN or AggWeighted.
	Agg Aggregator
	// W (out × in) multiplies the aggregated rows.
	W *autograd.Var
	// Root (out × in), when set, multiplies the destinations' own rows.
	Root *autograd.Var
	// Bias (1 × out), when set, is added.
	Bias *autograd.Var
	// ReLU applies a ReLU to the output.
	ReLU bool
	// Drop, when its P > 0, is the next layer's dropout fused into the
	// output (needs ReLU; locally only, see reluFused).
	Drop tensor.RowDropout
}

// RemoteError is what a Remote panics with when its communication fails
// inside a Forward (whose signature has no error). Whoever sets
// Block.Remote recovers it around the Forward and returns Err (sar does).
type RemoteError struct{ Err error }

func (e RemoteError) Error() string { return e.Err.Error() }

// Remote runs a block's graph ops where some source rows live in other
// processes (a SAR shard: the block's sources and destinations are the
// rows this process owns, and every process calls the same ops in the same
// order). Its ops return what the local ones return for the same rows, and
// send the gradients of rows fetched from others back to their owners.
type Remote interface {
	// Aggregate is Block.Aggregate for every aggregator but AggStd (which
	// the Block composes from two means).
	Aggregate(tp *autograd.Tape, x *autograd.Var, a Aggregator) *autograd.Var
	// Conv is Block.Conv (Drop is never set).
	Conv(tp *autograd.Tape, x *autograd.Var, c Conv) *autograd.Var
	// Attention is Block.Attention.
	Attention(tp *autograd.Tape, h, aSrc, aDst *autograd.Var, dropout float64, seed uint64) *autograd.Var
	// DstRows is Block.DstRows; Initial is Block.Initial.
	DstRows(tp *autograd.Tape, x *autograd.Var) *autograd.Var
	Initial(tp *autograd.Tape, h0 *autograd.Var) *autograd.Var
	// SumRows sums x's rows over every process; CountRows adds n over
	// every process.
	SumRows(tp *autograd.Tape, x *autograd.Var) *autograd.Var
	CountRows(n int) int
	// InDegrees is Block.InDegrees.
	InDegrees() []float32
	// Dropout is Block.Dropout: the mask one process draws for the same
	// nodes' rows of the whole graph.
	Dropout(tp *autograd.Tape, x *autograd.Var, p float64, seed uint64) *autograd.Var
}

// NumSrc returns the number of the block's source rows (the rows of a
// layer's input x).
func (b *Block) NumSrc() int {
	if b.CSR == nil {
		return b.NumDst
	}
	return b.CSR.NumSrc
}

// Aggregate reduces the rows of x (one per source) over every
// destination's in-edges with a, returning one row per destination.
func (b *Block) Aggregate(tp *autograd.Tape, x *autograd.Var, a Aggregator) *autograd.Var {
	if a == AggStd {
		m1 := b.Aggregate(tp, x, AggMean)
		m2 := b.Aggregate(tp, tp.Mul(x, x), AggMean)
		return stdFromMoments(tp, m1, m2)
	}
	if b.Remote != nil {
		return b.Remote.Aggregate(tp, x, a)
	}
	switch a {
	case AggSum:
		return tp.Aggregate(b.CSR, x, tensor.Sum)
	case AggMean:
		return tp.Aggregate(b.CSR, x, tensor.Mean)
	case AggGCN:
		return tp.Aggregate(gcnCSR(b, b.degrees()), x, tensor.Weighted)
	case AggWeighted:
		return tp.Aggregate(b.weighted(), x, tensor.Weighted)
	case AggMax, AggMin:
		return extreme(tp, b.CSR, x, a == AggMin)
	}
	panic(fmt.Sprintf("nn: unknown aggregator %v", a))
}

// degrees is the in-degree table GCN's weights read.
func (b *Block) degrees() []float32 {
	if b.deg == nil {
		panic("nn: AggGCN needs the graph's degrees: build the model with them (Spec.NeedsDegrees)")
	}
	return b.deg
}

// weighted is the block's CSR for AggWeighted: it must carry the
// dataset's edge weights.
func (b *Block) weighted() *tensor.CSR {
	if b.CSR.Weights == nil {
		panic("nn: AggWeighted on a block without edge weights: the dataset has none (import it with a weight column), or its blocks came from distributed sampling, which does not carry them; set Spec.EdgeWeights to have training check this up front")
	}
	return b.CSR
}

// extreme is the max (min) aggregation over c on the tape.
func extreme(tp *autograd.Tape, c *tensor.CSR, x *autograd.Var, isMin bool) *autograd.Var {
	e := tensor.NewExtreme(c.NumDst(), x.Value.Cols, isMin)
	mustOp("Aggregate(max/min)", e.Fold(c, x.Value, 0))
	e.Finish()
	return tp.Custom("Aggregate(extreme)", e.Out, func(g tensor.Matrix, grads []tensor.Matrix) error {
		if grads[0].Data == nil {
			return nil
		}
		return e.Grad(grads[0], g, 0)
	}, x)
}

func mustOp(op string, err error) {
	if err != nil {
		panic(fmt.Sprintf("nn.%s: %v", op, err))
	}
}

// stdVarFloor is PyG's StdAggregation floor on the variance.
const stdVarFloor = 1e-5

// stdFromMoments returns sqrt(m2 - m1²) where that variance exceeds 1e-5
// and 0 elsewhere (no gradient there), as PyG's StdAggregation.
func stdFromMoments(tp *autograd.Tape, m1, m2 *autograd.Var) *autograd.Var {
	out := tensor.New(m1.Value.Rows, m1.Value.Cols)
	for i, a := range m1.Value.Data {
		if v := m2.Value.Data[i] - a*a; v > stdVarFloor {
			out.Data[i] = float32(math.Sqrt(float64(v)))
		}
	}
	return tp.Custom("Std", out, func(g tensor.Matrix, grads []tensor.Matrix) error {
		for i, s := range out.Data {
			if s == 0 {
				continue
			}
			dv := g.Data[i] * 0.5 / s
			if grads[1].Data != nil {
				grads[1].Data[i] += dv
			}
			if grads[0].Data != nil {
				grads[0].Data[i] -= 2 * m1.Value.Data[i] * dv
			}
		}
		return nil
	}, m1, m2)
}

// Conv computes c over the block (see Conv).
func (b *Block) Conv(tp *autograd.Tape, x *autograd.Var, c Conv) *autograd.Var {
	if !c.Agg.linear() {
		panic(fmt.Sprintf("nn: Conv aggregates with sum, mean or gcn, not %v", c.Agg))
	}
	if b.Remote != nil {
		if c.Drop.P != 0 {
			panic("nn: Conv with a fused dropout on a remote block")
		}
		return b.Remote.Conv(tp, x, c)
	}
	act := autograd.NoActivation
	if c.ReLU {
		act = autograd.ActReLU
	}
	g, mode := b.CSR, tensor.Sum
	switch c.Agg {
	case AggMean:
		mode = tensor.Mean
	case AggGCN:
		g, mode = gcnCSR(b, b.degrees()), tensor.Weighted
	case AggWeighted:
		g, mode = b.weighted(), tensor.Weighted
	}
	out, in := c.W.Shape()
	var terms []autograd.Term
	if aggregateFirst(BlockShape{Src: b.CSR.NumSrc, Dst: b.NumDst, Edges: b.CSR.NumEdges()}, in, out) {
		terms = []autograd.Term{{X: tp.Aggregate(g, x, mode), W: c.W}}
	} else {
		terms = []autograd.Term{{X: tp.Aggregate(g, linear(tp, x, c.W), mode)}}
	}
	if c.Root != nil {
		terms = append(terms, autograd.Term{X: x, W: c.Root})
	}
	return tp.DenseDropout(b.NumDst, terms, c.Bias, act, c.Drop)
}

// Attention is GAT's attention with one self-loop per destination: for
// h with heads·F columns (one row per source) and aSrc, aDst (heads × F),
// each destination d gets Σ_s α_ds h_s per head, with α the softmax over
// d's in-edges of LeakyReLU_0.2(aSrc·h_s + aDst·h_d) and, when dropout >
// 0, dropout on α (drawn from seed).
func (b *Block) Attention(tp *autograd.Tape, h, aSrc, aDst *autograd.Var, dropout float64, seed uint64) *autograd.Var {
	if b.Remote != nil {
		return b.Remote.Attention(tp, h, aSrc, aDst, dropout, seed)
	}
	return gatAttention(tp, b, b.WithSelfLoops(), h, aSrc, aDst, dropout, seed)
}

// DstRows returns the rows of x (one per source) of the block's
// destinations, for a layer's root or skip terms.
func (b *Block) DstRows(tp *autograd.Tape, x *autograd.Var) *autograd.Var {
	if b.Remote != nil {
		return b.Remote.DstRows(tp, x)
	}
	return b.firstRows(tp, x)
}

// firstRows is x's first NumDst rows (locally the destinations are the
// first sources, and layer 0's first outputs).
func (b *Block) firstRows(tp *autograd.Tape, x *autograd.Var) *autograd.Var {
	if x.Value.Rows == b.NumDst {
		return x
	}
	return tp.Rows(x, 0, b.NumDst)
}

// Dropout zeroes elements of x, whose rows are the block's sources or its
// destinations, with probability p (scaling the rest by 1/(1-p)), drawn
// from seed; outside training (an inference tape) it is the identity.
// Where the block asks for it (NodeDropout) the mask is keyed by node id,
// so every process that holds a node's row draws the same mask for it.
func (b *Block) Dropout(tp *autograd.Tape, x *autograd.Var, p float64, seed uint64) *autograd.Var {
	if p == 0 || tp.NoGrad() {
		return x
	}
	if b.Remote != nil {
		return b.Remote.Dropout(tp, x, p, seed)
	}
	var keys []int32
	if b.NodeDropout {
		switch k, rows := b.dropKeys(), x.Value.Rows; {
		case rows == len(k):
			keys = k
		case rows == b.NumDst && len(k) >= rows:
			keys = k[:rows]
		}
	}
	return tp.DropoutRows(x, p, seed, keys)
}

// Initial returns the rows of h0, the output of the model's layer 0, for
// the block's destinations (an initial residual, as GCNII's and APPNP's).
func (b *Block) Initial(tp *autograd.Tape, h0 *autograd.Var) *autograd.Var {
	if b.Remote != nil {
		return b.Remote.Initial(tp, h0)
	}
	return b.firstRows(tp, h0)
}

// SumRows returns the column sums (1 × cols) of x's rows, over every
// process of a SAR run: batch statistics that match one process's.
func (b *Block) SumRows(tp *autograd.Tape, x *autograd.Var) *autograd.Var {
	if b.Remote != nil {
		return b.Remote.SumRows(tp, x)
	}
	return sumRowsLocal(tp, x)
}

// CountRows returns n summed over every process (n itself locally).
func (b *Block) CountRows(n int) int {
	if b.Remote != nil {
		return b.Remote.CountRows(n)
	}
	return n
}

// InDegrees returns the in-degree of every destination in the block (the
// sampled degree in a sampled block, as PyG's degree scalers see it).
func (b *Block) InDegrees() []float32 {
	if b.Remote != nil {
		return b.Remote.InDegrees()
	}
	d := make([]float32, b.NumDst)
	for i := range d {
		d[i] = float32(b.CSR.Indptr[i+1] - b.CSR.Indptr[i])
	}
	return d
}

// sumRowsLocal is the column sums of x on the tape (Block.SumRows of one
// process).
func sumRowsLocal(tp *autograd.Tape, x *autograd.Var) *autograd.Var {
	cols := x.Value.Cols
	out := tensor.New(1, cols)
	acc := make([]float64, cols)
	for i := 0; i < x.Value.Rows; i++ {
		for j, v := range x.Value.Row(i) {
			acc[j] += float64(v)
		}
	}
	for j, v := range acc {
		out.Data[j] = float32(v)
	}
	return tp.Custom("SumRows", out, func(g tensor.Matrix, grads []tensor.Matrix) error {
		dx := grads[0]
		if dx.Data == nil {
			return nil
		}
		for i := 0; i < dx.Rows; i++ {
			tensor.Axpy(1, g.Data, dx.Row(i))
		}
		return nil
	}, x)
}

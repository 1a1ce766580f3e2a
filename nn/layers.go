package nn

import (
	"math"

	"github.com/graphmill/graphmill/internal/rng"
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

// glorot returns a rows×cols matrix drawn from U(-a, a) with
// a = sqrt(6/(fanIn+fanOut)) (Glorot & Bengio 2010), as PyG's glorot.
func glorot(r *rng.Rand, rows, cols, fanIn, fanOut int) tensor.Matrix {
	m := tensor.New(rows, cols)
	a := float32(math.Sqrt(6 / float64(fanIn+fanOut)))
	for i := range m.Data {
		m.Data[i] = (2*r.Float32() - 1) * a
	}
	return m
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

// SAGEConv is GraphSAGE's layer with mean aggregation and a separate root
// weight: out = lin_l(mean_{j∈N(i)} x_j) + lin_r(x_i), as PyG's SAGEConv
// (lin_l has the bias, lin_r none).
type SAGEConv struct {
	LinL, BiasL, LinR *autograd.Var
	in, out           int
}

// NewSAGEConv returns a SAGEConv from in to out features.
func NewSAGEConv(r *rng.Rand, in, out int) *SAGEConv {
	return &SAGEConv{
		LinL:  autograd.NewParam("lin_l.weight", glorot(r, out, in, in, out)),
		BiasL: autograd.NewParam("lin_l.bias", tensor.New(1, out)),
		LinR:  autograd.NewParam("lin_r.weight", glorot(r, out, in, in, out)),
		in:    in, out: out,
	}
}

// Forward implements Layer.
func (l *SAGEConv) Forward(tp *autograd.Tape, b *Block, x *autograd.Var, _ bool, _ uint64) *autograd.Var {
	neigh := aggregateLinear(tp, b, b.CSR, x, l.LinL, tensor.Mean)
	root := x
	if b.NumDst != x.Value.Rows {
		root = tp.Rows(x, 0, b.NumDst)
	}
	return tp.AddBias(tp.Add(neigh, linear(tp, root, l.LinR)), l.BiasL)
}

// Params implements Layer.
func (l *SAGEConv) Params() []*autograd.Var { return []*autograd.Var{l.LinL, l.BiasL, l.LinR} }

// OutDim implements Layer.
func (l *SAGEConv) OutDim() int { return l.out }

// GCNConv is the graph convolution of Kipf & Welling:
// out = D^-1/2 (A+I) D^-1/2 X W + b, with degrees counted with the self-loop
// (PyG's GCNConv with its defaults). Deg holds every node's in-degree
// without self-loops in the full graph, so sampled blocks use the true
// normalisation.
type GCNConv struct {
	Lin, Bias *autograd.Var
	Deg       []float32
	in, out   int
}

// NewGCNConv returns a GCNConv from in to out features; deg is the full
// graph's in-degree of every node (see InDegrees).
func NewGCNConv(r *rng.Rand, in, out int, deg []float32) *GCNConv {
	return &GCNConv{
		Lin:  autograd.NewParam("lin.weight", glorot(r, out, in, in, out)),
		Bias: autograd.NewParam("bias", tensor.New(1, out)),
		Deg:  deg, in: in, out: out,
	}
}

// gcnCSR returns b's self-looped CSR with GCN weights, cached on the block.
func gcnCSR(b *Block, deg []float32) *tensor.CSR {
	if b.gcn != nil {
		return b.gcn
	}
	c := b.WithSelfLoops()
	w := make([]float32, len(c.Indices))
	for d := 0; d < b.NumDst; d++ {
		dd := deg[b.Src[d]] + 1
		for e := c.Indptr[d]; e < c.Indptr[d+1]; e++ {
			ds := deg[b.Src[c.Indices[e]]] + 1
			w[e] = float32(1 / math.Sqrt(float64(dd)*float64(ds)))
		}
	}
	b.gcn = &tensor.CSR{Indptr: c.Indptr, Indices: c.Indices, Weights: w, NumSrc: c.NumSrc}
	return b.gcn
}

// Forward implements Layer.
func (l *GCNConv) Forward(tp *autograd.Tape, b *Block, x *autograd.Var, _ bool, _ uint64) *autograd.Var {
	c := gcnCSR(b, l.Deg)
	return tp.AddBias(aggregateLinear(tp, b, c, x, l.Lin, tensor.Weighted), l.Bias)
}

// Params implements Layer.
func (l *GCNConv) Params() []*autograd.Var { return []*autograd.Var{l.Lin, l.Bias} }

// OutDim implements Layer.
func (l *GCNConv) OutDim() int { return l.out }

// GATConv is the graph attention layer of Veličković et al. with Heads
// heads of Out features each, attention over in-neighbours plus a
// self-loop, LeakyReLU(0.2) scores, and dropout AttnDropout on the
// attention coefficients during training. With Concat the heads are
// concatenated (Heads*Out outputs), otherwise averaged (Out outputs), as
// PyG's GATConv.
type GATConv struct {
	Lin, AttSrc, AttDst, Bias *autograd.Var
	Heads, In, Out            int
	Concat                    bool
	AttnDropout               float64
}

// NewGATConv returns a GATConv.
func NewGATConv(r *rng.Rand, in, out, heads int, concat bool, attnDropout float64) *GATConv {
	bias := out
	if concat {
		bias = heads * out
	}
	return &GATConv{
		Lin:    autograd.NewParam("lin.weight", glorot(r, heads*out, in, in, heads*out)),
		AttSrc: autograd.NewParam("att_src", glorot(r, heads, out, heads, out)),
		AttDst: autograd.NewParam("att_dst", glorot(r, heads, out, heads, out)),
		Bias:   autograd.NewParam("bias", tensor.New(1, bias)),
		Heads:  heads, In: in, Out: out, Concat: concat, AttnDropout: attnDropout,
	}
}

// Forward implements Layer.
func (l *GATConv) Forward(tp *autograd.Tape, b *Block, x *autograd.Var, train bool, seed uint64) *autograd.Var {
	c := b.WithSelfLoops()
	h := linear(tp, x, l.Lin)
	el := tp.HeadDot(h, l.AttSrc)
	hd := h
	if b.NumDst != h.Value.Rows {
		hd = tp.Rows(h, 0, b.NumDst)
	}
	er := tp.HeadDot(hd, l.AttDst)
	p := 0.0
	if train {
		p = l.AttnDropout
	}
	out := gatAggregate(tp, c, h, el, er, l.Heads, p, seed)
	if !l.Concat && l.Heads > 1 {
		out = meanHeads(tp, out, l.Heads)
	}
	return tp.AddBias(out, l.Bias)
}

// Params implements Layer.
func (l *GATConv) Params() []*autograd.Var {
	return []*autograd.Var{l.Lin, l.AttSrc, l.AttDst, l.Bias}
}

// OutDim implements Layer.
func (l *GATConv) OutDim() int {
	if l.Concat {
		return l.Heads * l.Out
	}
	return l.Out
}

package nn

import (
	"math"

	"github.com/graphmill/graphmill/tensor"
	"github.com/graphmill/graphmill/tensor/autograd"
)

// GCNConv is the graph convolution of Kipf & Welling:
// out = D^-1/2 (A+I) D^-1/2 X W + b, with degrees counted with the self-loop
// (PyG's GCNConv with its defaults). The degrees are every node's in-degree
// without self-loops in the full graph (the model's table, which it gives
// every block), so sampled blocks use the true normalisation.
type GCNConv struct {
	Lin, Bias *autograd.Var
	in, out   int
}

// NewGCNConv returns a GCNConv from in to out features.
func NewGCNConv(ini *Init, in, out int) *GCNConv {
	return &GCNConv{
		Lin:  autograd.NewParam("lin.weight", ini.glorot(out, in, in, out)),
		Bias: autograd.NewParam("bias", ini.matrix(1, out)),
		in:   in, out: out,
	}
}

// gcnCSR returns b's self-looped CSR with GCN weights, cached on the block.
func gcnCSR(b *Block, deg []float32) *tensor.CSR {
	if b.gcn != nil {
		return b.gcn
	}
	c := b.WithSelfLoops()
	var w []float32
	if b.scratch != nil {
		b.scratch.weights = grow(b.scratch.weights, len(c.Indices))
		w = b.scratch.weights
	} else {
		w = make([]float32, len(c.Indices))
	}
	for d := 0; d < b.NumDst; d++ {
		dd := deg[b.Src[d]] + 1
		for e := c.Indptr[d]; e < c.Indptr[d+1]; e++ {
			ds := deg[b.Src[c.Indices[e]]] + 1
			w[e] = float32(1 / math.Sqrt(float64(dd)*float64(ds)))
		}
	}
	b.gcn = &tensor.CSR{Indptr: c.Indptr, Indices: c.Indices, Weights: w, NumSrc: c.NumSrc}
	if b.scratch != nil {
		b.gcn.TScratch = &b.scratch.tGCN
	}
	return b.gcn
}

// Forward implements Layer.
func (l *GCNConv) Forward(tp *autograd.Tape, b *Block, x *autograd.Var, _ bool, _ uint64) *autograd.Var {
	return l.forward(tp, b, x, autograd.NoActivation, tensor.RowDropout{})
}

// forwardReLU is Forward followed by ReLU (and drop), fused (see reluFused).
func (l *GCNConv) forwardReLU(tp *autograd.Tape, b *Block, x *autograd.Var, drop tensor.RowDropout) *autograd.Var {
	return l.forward(tp, b, x, autograd.ActReLU, drop)
}

// forward computes act(Â·x·Wᵀ + bias) as one fused op (Block.Conv).
func (l *GCNConv) forward(tp *autograd.Tape, b *Block, x *autograd.Var, act autograd.Activation, drop tensor.RowDropout) *autograd.Var {
	return b.Conv(tp, x, Conv{Agg: AggGCN, W: l.Lin, Bias: l.Bias, ReLU: act == autograd.ActReLU, Drop: drop})
}

// Params implements Layer.
func (l *GCNConv) Params() []*autograd.Var { return []*autograd.Var{l.Lin, l.Bias} }

// OutDim implements Layer.
func (l *GCNConv) OutDim() int { return l.out }

func init() {
	Register(Spec{
		Kind: GCN, Help: "graph convolution of Kipf & Welling (symmetric normalisation with self-loops)", NeedsDegrees: true,
		Defaults: Defaults{Hidden: 16, Dropout: 0.5, DecayFirstLayerOnly: true, Note: "hidden 16, dropout 0.5, Adam lr 0.01, weight decay 5e-4 on the first layer, 200 epochs (Kipf & Welling)"},
		Build: func(ini *Init, c *Config, _ []float32) ([]Layer, error) {
			return StackLayers(c, func(l, in, out int) Layer { return NewGCNConv(ini, in, out) }), nil
		},
	})
}

func (l *GCNConv) plan(p *planner, s BlockShape, x pv) pv { return l.planAct(p, s, x, false) }

func (l *GCNConv) planReLU(p *planner, s BlockShape, x pv) pv { return l.planAct(p, s, x, true) }

func (l *GCNConv) planAct(p *planner, s BlockShape, x pv, relu bool) pv {
	return planAggregateDense(p, s, x, l.in, l.out, relu, 1)
}

func (l *GCNConv) indexBytes(s BlockShape, train bool) int64 { return gcnIndexBytes(s, train) }

// gcnIndexBytes is what gcnCSR derives from a block (the self-looped copy
// and its weights) plus, in training, its transpose.
func gcnIndexBytes(s BlockShape, train bool) int64 {
	e := int64(s.LoopEdges)
	return selfLoopBytes(s) + 4*e + transposeBytes(s, e, train)
}

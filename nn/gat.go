package nn

import (
	"github.com/graphmill/graphmill/tensor/autograd"
)

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
func NewGATConv(ini *Init, in, out, heads int, concat bool, attnDropout float64) *GATConv {
	bias := out
	if concat {
		bias = heads * out
	}
	return &GATConv{
		Lin:    autograd.NewParam("lin.weight", ini.glorot(heads*out, in, in, heads*out)),
		AttSrc: autograd.NewParam("att_src", ini.glorot(heads, out, heads, out)),
		AttDst: autograd.NewParam("att_dst", ini.glorot(heads, out, heads, out)),
		Bias:   autograd.NewParam("bias", ini.matrix(1, bias)),
		Heads:  heads, In: in, Out: out, Concat: concat, AttnDropout: attnDropout,
	}
}

// Forward implements Layer.
func (l *GATConv) Forward(tp *autograd.Tape, b *Block, x *autograd.Var, train bool, seed uint64) *autograd.Var {
	h := linear(tp, x, l.Lin)
	p := 0.0
	if train && !tp.NoGrad() {
		p = l.AttnDropout
	}
	out := b.Attention(tp, h, l.AttSrc, l.AttDst, p, seed)
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

func init() {
	Register(Spec{
		Kind: GAT, Help: "graph attention of Veličković et al. (multi-head, ELU between layers)",
		Defaults:   Defaults{Hidden: 8, Heads: 8, OutHeads: 1, Dropout: 0.6, AttnDropout: 0.6, LR: 0.005, Epochs: 1000, Patience: 100, Note: "8 heads x 8 hidden, dropout 0.6 (attention 0.6), lr 0.005, 1000 epochs, patience 100 (Veličković et al.)"},
		Activation: func(tp *autograd.Tape, h *autograd.Var) *autograd.Var { return tp.ELU(h, 1) },
		Build: func(ini *Init, c *Config, _ []float32) ([]Layer, error) {
			c.Heads, c.OutHeads = max(c.Heads, 1), max(c.OutHeads, 1)
			return StackLayers(c, func(l, in, out int) Layer {
				if l == c.Layers-1 {
					return NewGATConv(ini, in, out, c.OutHeads, false, c.AttnDropout)
				}
				return NewGATConv(ini, in, out, c.Heads, true, c.AttnDropout)
			}), nil
		},
	})
}

func (l *GATConv) plan(p *planner, s BlockShape, x pv) pv {
	hh := p.linear(x, l.Heads*l.Out)
	prob := 0.0
	if p.train {
		prob = l.AttnDropout
	}
	h := p.gat(hh, s, l.Heads, prob)
	if !l.Concat && l.Heads > 1 {
		p.alloc(l.Heads*l.Out, l.Out) // the averaging matrix
		h = p.out(h.rows, l.Out, true)
	}
	return p.bias(h)
}

// indexBytes: the self-looped copy of the block, and its transpose.
func (l *GATConv) indexBytes(s BlockShape, train bool) int64 {
	return selfLoopBytes(s) + transposeBytes(s, int64(s.LoopEdges), train)
}

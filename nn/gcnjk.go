package nn

import "github.com/graphmill/graphmill/tensor/autograd"

// GCN with jumping knowledge (Xu et al., ICML 2018; PyG's BasicGNN with
// jk="cat"), written only with the public ops: layer l computes
// h_l = dropout(ReLU(GCNConv(h_{l-1}))), and the classifier reads the
// concatenation of every layer's h_l. Each layer passes on that
// concatenation so far: its output is [h_1 ‖ … ‖ h_l] for its
// destinations, and it convolves only the last part of its input. So
// the model is a plain stack of layers, and the concatenation is what
// GNNAutoScale keeps as history. The layers drop and activate their own
// outputs (Spec.LayerDropout), as PyG's BasicGNN does (no dropout on the
// input features).

// GCNJK is the model kind.
const GCNJK Kind = "gcn-jk"

// JKLayer is one GCN-JK layer: it convolves columns [from, from+width)
// of its input and passes on its first carry columns (the layers below's
// outputs); Head, on the last layer, is the classifier over the whole
// concatenation.
type JKLayer struct {
	Conv                       *Linear
	Head                       *Linear
	from, width, carry, hidden int
	dropout                    float64
}

// Forward implements Layer.
func (l *JKLayer) Forward(tp *autograd.Tape, b *Block, x *autograd.Var, train bool, seed uint64) *autograd.Var {
	cur := Cols(tp, x, l.from, l.from+l.width)
	h := tp.ReLU(b.Conv(tp, cur, Conv{Agg: AggGCN, W: l.Conv.W, Bias: l.Conv.B}))
	if train {
		h = b.Dropout(tp, h, l.dropout, seed)
	}
	if l.carry > 0 {
		h = tp.ConcatCols(b.DstRows(tp, x), h)
	}
	if l.Head != nil {
		return l.Head.Forward(tp, h)
	}
	return h
}

// Params implements Layer.
func (l *JKLayer) Params() []*autograd.Var {
	if l.Head == nil {
		return l.Conv.Params()
	}
	return append(l.Conv.Params(), l.Head.Params()...)
}

// OutDim implements Layer.
func (l *JKLayer) OutDim() int {
	if l.Head != nil {
		return l.Head.W.Value.Rows
	}
	return l.carry + l.hidden
}

func init() {
	Register(Spec{
		Kind: GCNJK, Help: "GCN with jumping knowledge (every layer's output concatenated into the classifier)", NeedsDegrees: true,
		LayerDropout: true,
		Activation:   func(_ *autograd.Tape, h *autograd.Var) *autograd.Var { return h }, // the layers apply ReLU
		Defaults:     Defaults{Hidden: 64, Layers: 3, Dropout: 0.5, Note: "3 layers of 64, dropout 0.5, Adam lr 0.01, weight decay 5e-4, 200 epochs"},
		Build: func(ini *Init, c *Config, _ []float32) ([]Layer, error) {
			var layers []Layer
			for l := 0; l < c.Layers; l++ {
				// Layer 0 convolves the features; layer l >= 1 carries
				// [h_1 ‖ … ‖ h_l] and convolves h_l.
				jl := &JKLayer{from: 0, width: c.In, hidden: c.Hidden, dropout: c.Dropout}
				if l > 0 {
					jl.carry, jl.from, jl.width = l*c.Hidden, (l-1)*c.Hidden, c.Hidden
				}
				jl.Conv = ini.Linear("conv.", jl.width, c.Hidden, true)
				if l == c.Layers-1 {
					jl.Head = ini.Linear("lin.", (l+1)*c.Hidden, c.Out, true)
				}
				layers = append(layers, jl)
			}
			return layers, nil
		},
	})
}

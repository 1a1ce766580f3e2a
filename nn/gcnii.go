package nn

import (
	"fmt"
	"math"
	"strings"

	"github.com/graphmill/graphmill/tensor"
	"github.com/graphmill/graphmill/tensor/autograd"
)

// GCNII (Chen et al., ICML 2020, "Simple and Deep Graph Convolutional
// Networks"), written only with the public ops: layer 0 is a Linear with
// ReLU whose output h0 every later layer reads (the initial residual), and
// layer l = 1..L is a GCN2Conv,
//
//	s = (1-α)·Â·h + α·h0,   out = (1-β_l)·s + β_l·s·W_l,   β_l = log(λ/l + 1)
//
// (the identity mapping; PyG's GCN2Conv with shared weights), with ReLU
// and dropout between layers. The last layer ends in the classifier
// Linear. Tensors: layer 0 lin.*, GCN2Conv weight1, the last layer also
// lin.*.

// GCNII is the model kind.
const GCNII Kind = "gcnii"

// gcniiInput is GCNII's layer 0: a Linear on the block's destinations.
type gcniiInput struct{ lin *Linear }

func (l *gcniiInput) Forward(tp *autograd.Tape, b *Block, x *autograd.Var, _ bool, _ uint64) *autograd.Var {
	return l.lin.Forward(tp, b.DstRows(tp, x))
}
func (l *gcniiInput) Params() []*autograd.Var { return l.lin.Params() }
func (l *gcniiInput) OutDim() int             { return l.lin.W.Value.Rows }

// GCN2Conv is one GCNII layer (see GCNII); Head, when set, is the
// classifier the last layer applies after ReLU and dropout.
type GCN2Conv struct {
	Weight      *autograd.Var // channels × channels, applied as s·W
	Alpha, Beta float32
	Head        *Linear
	dropout     float64
}

// Forward implements Layer; GCN2Conv needs h0 (ForwardH0), so Forward
// panics.
func (l *GCN2Conv) Forward(*autograd.Tape, *Block, *autograd.Var, bool, uint64) *autograd.Var {
	panic("nn: GCN2Conv reads h0: the model calls ForwardH0")
}

// ForwardH0 implements H0Layer.
func (l *GCN2Conv) ForwardH0(tp *autograd.Tape, b *Block, x, h0 *autograd.Var, train bool, seed uint64) *autograd.Var {
	s := Mix(tp, 1-l.Alpha, b.Aggregate(tp, x, AggGCN), l.Alpha, h0)
	// (1-β)·s + β·s·W = s·((1-β)·I + β·W): one product with a small matrix.
	out := tp.MatMul(s, Mix(tp, 1-l.Beta, tp.Const(eye(l.Weight.Value.Rows)), l.Beta, l.Weight))
	if l.Head == nil {
		return out
	}
	out = tp.ReLU(out)
	if train {
		out = b.Dropout(tp, out, l.dropout, seed)
	}
	return l.Head.Forward(tp, out)
}

// Params implements Layer.
func (l *GCN2Conv) Params() []*autograd.Var {
	if l.Head == nil {
		return []*autograd.Var{l.Weight}
	}
	return append([]*autograd.Var{l.Weight}, l.Head.Params()...)
}

// OutDim implements Layer.
func (l *GCN2Conv) OutDim() int {
	if l.Head != nil {
		return l.Head.W.Value.Rows
	}
	return l.Weight.Value.Cols
}

func init() {
	Register(Spec{
		Kind: GCNII, Help: "GCNII of Chen et al. (initial residual and identity mapping; --layers convolutions)", NeedsDegrees: true,
		InitialResidual: true, ExtraLayers: 1,
		Defaults: Defaults{Hidden: 64, Layers: 64, Alpha: 0.1, Theta: 0.5, Dropout: 0.6, LR: 0.01, WeightDecay: 5e-4, Epochs: 1500, Patience: 100,
			Note: "64 layers of 64, alpha 0.1, lambda 0.5, dropout 0.6, lr 0.01, weight decay 0.01 on the convolutions and 5e-4 on the linear layers, 1500 epochs, patience 100 (Chen et al.)"},
		// The paper's two weight decays: 0.01 for the convolutions, 5e-4
		// (the configured one) for the linear layers.
		Decay: func(_ int, name string, base float64) float64 {
			if strings.HasPrefix(name, "weight1") {
				return 20 * base
			}
			return base
		},
		Build: func(ini *Init, c *Config, _ []float32) ([]Layer, error) {
			if c.Alpha == 0 {
				c.Alpha = 0.1
			}
			if c.Theta == 0 {
				c.Theta = 0.5
			}
			if !(c.Alpha > 0 && c.Alpha <= 1) || c.Theta <= 0 || c.Hidden < 1 {
				return nil, fmt.Errorf("nn: GCNII needs alpha in (0, 1], theta > 0 and hidden >= 1, got %g, %g and %d", c.Alpha, c.Theta, c.Hidden)
			}
			layers := []Layer{&gcniiInput{lin: ini.Linear("lin.", c.In, c.Hidden, true)}}
			for l := 1; l <= c.Layers; l++ {
				conv := &GCN2Conv{Weight: ini.Glorot("weight1", c.Hidden, c.Hidden), Alpha: float32(c.Alpha),
					Beta: float32(math.Log(c.Theta/float64(l) + 1)), dropout: c.Dropout}
				if l == c.Layers {
					conv.Head = ini.Linear("lin.", c.Hidden, c.Out, true)
				}
				layers = append(layers, conv)
			}
			return layers, nil
		},
	})
}

// eye returns the n×n identity matrix.
func eye(n int) tensor.Matrix {
	m := tensor.New(n, n)
	for i := range n {
		m.Data[i*n+i] = 1
	}
	return m
}

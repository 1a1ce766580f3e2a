package nn

import (
	"fmt"

	"github.com/graphmill/graphmill/tensor/autograd"
)

// APPNP (Klicpera et al., ICLR 2019, "Predict then Propagate") is one of
// the deep models of the GNNAutoScale paper: an MLP predicts per node, then
// K propagation layers spread the predictions with personalised PageRank,
// h_{k+1} = (1-α)·Â·h_k + α·h_0 with Â the GCN-normalised adjacency with
// self-loops. In a Model of Kind APPNP, layer 0 is the MLP and layers 1..K
// propagate; each propagation layer is a message-passing layer of its own,
// so GNNAutoScale keeps a history per layer.

// mlpLayer is APPNP's predictor: lin2(dropout(relu(lin1(x)))) on the
// block's destination rows.
type mlpLayer struct {
	Lin1, Bias1, Lin2, Bias2 *autograd.Var
	dropout                  float64
	out                      int
}

func newMLPLayer(ini *Init, in, hidden, out int, dropout float64) *mlpLayer {
	return &mlpLayer{
		Lin1:    autograd.NewParam("lin1.weight", ini.glorot(hidden, in, in, hidden)),
		Bias1:   autograd.NewParam("lin1.bias", ini.matrix(1, hidden)),
		Lin2:    autograd.NewParam("lin2.weight", ini.glorot(out, hidden, hidden, out)),
		Bias2:   autograd.NewParam("lin2.bias", ini.matrix(1, out)),
		dropout: dropout, out: out,
	}
}

// Forward implements Layer.
func (l *mlpLayer) Forward(tp *autograd.Tape, b *Block, x *autograd.Var, train bool, seed uint64) *autograd.Var {
	x = b.DstRows(tp, x)
	h := tp.ReLU(tp.AddBias(linear(tp, x, l.Lin1), l.Bias1))
	if train {
		h = b.Dropout(tp, h, l.dropout, seed)
	}
	return tp.AddBias(linear(tp, h, l.Lin2), l.Bias2)
}

// Params implements Layer.
func (l *mlpLayer) Params() []*autograd.Var { return []*autograd.Var{l.Lin1, l.Bias1, l.Lin2, l.Bias2} }

// OutDim implements Layer.
func (l *mlpLayer) OutDim() int { return l.out }

// propLayer is one APPNP propagation step; it has no parameters.
type propLayer struct {
	alpha float32
	dim   int
}

// Forward implements Layer without the teleport term; the model calls
// propagate instead.
func (l *propLayer) Forward(tp *autograd.Tape, b *Block, x *autograd.Var, _ bool, _ uint64) *autograd.Var {
	return b.Aggregate(tp, x, AggGCN)
}

// propagate returns (1-α)·Â·x + α·h0 for the block's destinations, where
// h0 holds the predictions of those destinations.
func (l *propLayer) propagate(tp *autograd.Tape, b *Block, x, h0 *autograd.Var) *autograd.Var {
	return tp.Add(tp.Scale(l.Forward(tp, b, x, false, 0), 1-l.alpha), tp.Scale(h0, l.alpha))
}

// Params implements Layer.
func (l *propLayer) Params() []*autograd.Var { return nil }

// OutDim implements Layer.
func (l *propLayer) OutDim() int { return l.dim }

func init() {
	Register(Spec{
		Kind: APPNP, Help: "APPNP: an MLP, then K personalised-PageRank propagation steps (--layers sets K)", NeedsDegrees: true,
		Defaults: Defaults{Hidden: 64, Layers: 10, Alpha: 0.1, DecayFirstLayerOnly: true, Note: "MLP of hidden 64, K=10 steps, alpha 0.1, dropout 0.5, 200 epochs (Klicpera et al.)"},
		Teleport: true, ExtraLayers: 1,
		Build: func(ini *Init, c *Config, _ []float32) ([]Layer, error) {
			if c.Alpha == 0 {
				c.Alpha = 0.1
			}
			alpha := c.Alpha
			if !(alpha > 0 && alpha <= 1) || c.Hidden < 1 {
				return nil, fmt.Errorf("nn: APPNP needs alpha in (0, 1] and hidden >= 1, got %g and %d", alpha, c.Hidden)
			}
			layers := []Layer{newMLPLayer(ini, c.In, c.Hidden, c.Out, c.Dropout)}
			for k := 0; k < c.Layers; k++ {
				layers = append(layers, &propLayer{alpha: float32(alpha), dim: c.Out})
			}
			return layers, nil
		},
	})
}

func (l *mlpLayer) plan(p *planner, s BlockShape, x pv) pv {
	x = p.rowsIf(x, s.Dst)
	h := p.same(p.bias(p.linear(x, l.Lin1.Value.Rows)))
	h = p.dropout(h, l.dropout)
	return p.bias(p.linear(h, l.out))
}

// indexBytes: the MLP reads no edges.
func (l *mlpLayer) indexBytes(BlockShape, bool) int64 { return 0 }

// plan covers Â·x and the (1-α) scale; the model plans the teleport terms.
func (l *propLayer) plan(p *planner, s BlockShape, x pv) pv {
	return p.same(p.aggregate(x, s.Dst))
}

func (l *propLayer) indexBytes(s BlockShape, train bool) int64 { return gcnIndexBytes(s, train) }

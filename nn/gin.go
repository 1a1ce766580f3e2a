package nn

import "github.com/graphmill/graphmill/tensor/autograd"

// GINConv is the layer of the graph isomorphism network of Xu et al. (ICLR 2019), written
// only with the public ops: each layer sums its in-neighbours' rows into
// its own, (1+ε)·x_i + Σ_j x_j with ε = 0 (PyG's GINConv default), and
// applies an MLP, Linear (no bias) → BatchNorm → ReLU → Linear. Its tensors carry
// PyG's names for GINConv(Sequential(Linear(bias=False), BatchNorm1d, ReLU,
// Linear)):
// nn.0.*, nn.1.* (with the running statistics) and nn.3.*, and checkpoints
// hold PyG's buffer eps (shape [1], 0) too (see ConstBuffers).
type GINConv struct {
	Lin1 *Linear
	Norm *BatchNorm
	Lin2 *Linear
	out  int
}

// NewGINConv returns a GIN layer from in to out features with an MLP of
// hidden width hidden.
func NewGINConv(ini *Init, in, hidden, out int) *GINConv {
	return &GINConv{
		// No bias before the batch norm, which removes it: its gradient
		// would be rounding noise, which Adam turns into steps of the
		// learning rate's size, of a sign no two processes agree on.
		Lin1: ini.Linear("nn.0.", in, hidden, false),
		Norm: NewBatchNorm("nn.1.", hidden),
		Lin2: ini.Linear("nn.3.", hidden, out, true),
		out:  out,
	}
}

// Forward implements Layer.
func (l *GINConv) Forward(tp *autograd.Tape, b *Block, x *autograd.Var, train bool, _ uint64) *autograd.Var {
	h := tp.Add(b.Aggregate(tp, x, AggSum), b.DstRows(tp, x))
	h = l.Lin1.Forward(tp, h)
	h = tp.ReLU(l.Norm.Forward(tp, b, h, train))
	return l.Lin2.Forward(tp, h)
}

// Params implements Layer.
func (l *GINConv) Params() []*autograd.Var {
	return append(append(l.Lin1.Params(), l.Norm.Params()...), l.Lin2.Params()...)
}

// Buffers implements Buffered.
func (l *GINConv) Buffers() []*autograd.Var { return l.Norm.Buffers() }

// ConstBuffers implements ConstBuffered: PyG's GINConv(eps=0,
// train_eps=False) registers eps as a buffer of shape [1].
func (l *GINConv) ConstBuffers() []ConstBuffer {
	return []ConstBuffer{{Name: "eps", Value: []float32{0},
		Why: "graphmill's GIN computes (1+eps)·x_i + Σ_j x_j with eps fixed at 0, as PyG's GINConv(nn, eps=0, train_eps=False); " +
			"a GINConv built with another eps, or trained with train_eps=True, is another model"}}
}

// OutDim implements Layer.
func (l *GINConv) OutDim() int { return l.out }

// GIN is the model kind of GINConv layers.
const GIN Kind = "gin"

func init() {
	Register(Spec{
		Kind: GIN, Help: "GIN of Xu et al. (sum aggregation into an MLP with batch norm; PyG's GINConv)",
		// The features as stored: row-normalised sparse features make the
		// first layer's outputs so small that batch norm's epsilon weighs
		// on their variance.
		Defaults: Defaults{Hidden: 64, Dropout: 0.5, RawFeatures: true, Note: "hidden 64, dropout 0.5, Adam lr 0.01, weight decay 5e-4, 200 epochs, features not normalised"},
		Build: func(ini *Init, c *Config, _ []float32) ([]Layer, error) {
			return StackLayers(c, func(l, in, out int) Layer { return NewGINConv(ini, in, c.Hidden, out) }), nil
		},
	})
}

package nn

import (
	"fmt"
	"strings"

	"github.com/graphmill/graphmill/internal/rng"
	"github.com/graphmill/graphmill/tensor"
	"github.com/graphmill/graphmill/tensor/autograd"
)

// Kind names a model family.
type Kind string

// The model families.
const (
	SAGE Kind = "sage"
	GCN  Kind = "gcn"
	GAT  Kind = "gat"
)

// ParseKind parses "sage", "gcn" or "gat".
func ParseKind(s string) (Kind, error) {
	switch k := Kind(strings.ToLower(s)); k {
	case SAGE, GCN, GAT:
		return k, nil
	}
	return "", fmt.Errorf("unknown model %q: want sage, gcn or gat", s)
}

// Config describes a model.
type Config struct {
	Kind Kind `json:"kind"`
	// In, Hidden and Out are the input, hidden and output widths (for GAT,
	// Hidden is per head).
	In     int `json:"in"`
	Hidden int `json:"hidden"`
	Out    int `json:"out"`
	// Layers is the number of message-passing layers (>= 1).
	Layers int `json:"layers"`
	// Dropout is applied to the input of every layer during training.
	Dropout float64 `json:"dropout"`
	// Heads and OutHeads are GAT's attention heads in hidden layers and in
	// the output layer (whose heads are averaged).
	Heads    int `json:"heads,omitempty"`
	OutHeads int `json:"out_heads,omitempty"`
	// AttnDropout is GAT's dropout on attention coefficients.
	AttnDropout float64 `json:"attn_dropout,omitempty"`
	// Seed initialises the weights.
	Seed uint64 `json:"seed"`
}

// Model is a stack of layers with dropout before each layer and an
// activation (ReLU; ELU for GAT) between layers.
type Model struct {
	Config Config
	Layers []Layer
}

// NewModel builds a model. deg (every node's in-degree in the full graph)
// is needed by GCN and may be nil for other kinds.
func NewModel(c Config, deg []float32) (*Model, error) {
	if c.Layers < 1 || c.In < 1 || c.Out < 1 || (c.Layers > 1 && c.Hidden < 1) {
		return nil, fmt.Errorf("nn: bad model shape: %d layers, in %d, hidden %d, out %d", c.Layers, c.In, c.Hidden, c.Out)
	}
	if c.Dropout < 0 || c.Dropout >= 1 || c.AttnDropout < 0 || c.AttnDropout >= 1 {
		return nil, fmt.Errorf("nn: dropout must be in [0, 1)")
	}
	if c.Kind == GCN && deg == nil {
		return nil, fmt.Errorf("nn: GCN needs the graph's degrees")
	}
	if c.Kind == GAT {
		c.Heads = max(c.Heads, 1)
		c.OutHeads = max(c.OutHeads, 1)
	}
	r := rng.New(rng.Derive(c.Seed, 0x1417))
	m := &Model{Config: c}
	in := c.In
	for l := 0; l < c.Layers; l++ {
		last := l == c.Layers-1
		out := c.Hidden
		if last {
			out = c.Out
		}
		var layer Layer
		switch c.Kind {
		case SAGE:
			layer = NewSAGEConv(r, in, out)
		case GCN:
			layer = NewGCNConv(r, in, out, deg)
		case GAT:
			if last {
				layer = NewGATConv(r, in, out, c.OutHeads, false, c.AttnDropout)
			} else {
				layer = NewGATConv(r, in, out, c.Heads, true, c.AttnDropout)
			}
		default:
			return nil, fmt.Errorf("nn: unknown model kind %q", c.Kind)
		}
		m.Layers = append(m.Layers, layer)
		in = layer.OutDim()
	}
	return m, nil
}

// Params returns every parameter with its full name
// ("convs.0.lin_l.weight", ...), in a fixed order.
func (m *Model) Params() []*autograd.Var {
	var ps []*autograd.Var
	for _, l := range m.Layers {
		ps = append(ps, l.Params()...)
	}
	return ps
}

// NamedParams maps full parameter names to parameters.
func (m *Model) NamedParams() ([]string, []*autograd.Var) {
	var names []string
	var ps []*autograd.Var
	for i, l := range m.Layers {
		for _, p := range l.Params() {
			names = append(names, fmt.Sprintf("convs.%d.%s", i, p.Name))
			ps = append(ps, p)
		}
	}
	return names, ps
}

// NumParams returns the number of scalar parameters.
func (m *Model) NumParams() int {
	n := 0
	for _, p := range m.Params() {
		n += len(p.Value.Data)
	}
	return n
}

// ForwardLayer runs layer l on block b: dropout on the input (training
// only), the layer, and the activation unless l is the last layer.
func (m *Model) ForwardLayer(tp *autograd.Tape, l int, b *Block, x *autograd.Var, train bool, seed uint64) *autograd.Var {
	if train && m.Config.Dropout > 0 {
		x = tp.Dropout(x, m.Config.Dropout, rng.Derive(seed, uint64(2*l)))
	}
	h := m.Layers[l].Forward(tp, b, x, train, rng.Derive(seed, uint64(2*l+1)))
	if l < len(m.Layers)-1 {
		if m.Config.Kind == GAT {
			h = tp.ELU(h, 1)
		} else {
			h = tp.ReLU(h)
		}
	}
	return h
}

// Forward runs all layers: blocks[l] is layer l's block (input layer
// first); a single block is reused by every layer (full-graph training).
// It returns the logits of the last block's destination nodes.
func (m *Model) Forward(tp *autograd.Tape, blocks []*Block, x *autograd.Var, train bool, seed uint64) *autograd.Var {
	h := x
	for l := range m.Layers {
		b := blocks[0]
		if len(blocks) > 1 {
			b = blocks[l]
		}
		h = m.ForwardLayer(tp, l, b, h, train, seed)
	}
	return h
}

// meanHeads averages the heads of x (rows × heads*F) into rows × F.
func meanHeads(tp *autograd.Tape, x *autograd.Var, heads int) *autograd.Var {
	f := x.Value.Cols / heads
	avg := tensor.New(heads*f, f)
	for k := 0; k < heads; k++ {
		for j := 0; j < f; j++ {
			avg.Set(k*f+j, j, 1/float32(heads))
		}
	}
	return tp.MatMul(x, tp.Const(avg))
}

// gatAggregate is GAT's attention aggregation with attention dropout p.
func gatAggregate(tp *autograd.Tape, c *tensor.CSR, h, el, er *autograd.Var, heads int, p float64, seed uint64) *autograd.Var {
	return tp.GATAggregateDropout(c, h, el, er, heads, 0.2, p, seed)
}

package nn

import (
	"fmt"
	"math"
	"sync"

	"github.com/graphmill/graphmill/internal/memstat"
	"github.com/graphmill/graphmill/internal/rng"
	"github.com/graphmill/graphmill/internal/units"
	"github.com/graphmill/graphmill/tensor"
	"github.com/graphmill/graphmill/tensor/autograd"
)

// Kind names a model family.
type Kind string

// The model families.
const (
	SAGE  Kind = "sage"
	GCN   Kind = "gcn"
	GAT   Kind = "gat"
	APPNP Kind = "appnp"
)

// Config describes a model.
type Config struct {
	Kind Kind `json:"kind"`
	// In, Hidden and Out are the input, hidden and output widths (for GAT,
	// Hidden is per head).
	In     int `json:"in"`
	Hidden int `json:"hidden"`
	Out    int `json:"out"`
	// Layers is the number of message-passing layers (>= 1); for APPNP
	// the number of propagation steps K (after its MLP).
	Layers int `json:"layers"`
	// Dropout is applied to the input of every layer during training.
	Dropout float64 `json:"dropout"`
	// Heads and OutHeads are GAT's attention heads in hidden layers and in
	// the output layer (whose heads are averaged).
	Heads    int `json:"heads,omitempty"`
	OutHeads int `json:"out_heads,omitempty"`
	// AttnDropout is GAT's dropout on attention coefficients.
	AttnDropout float64 `json:"attn_dropout,omitempty"`
	// Alpha is APPNP's teleport probability (default 0.1) and GCNII's
	// initial-residual weight.
	Alpha float64 `json:"alpha,omitempty"`
	// Theta is GCNII's identity-mapping strength λ: layer l mixes in its
	// weight by β_l = log(λ/l + 1).
	Theta float64 `json:"theta,omitempty"`
	// AvgLogDegree is the mean over all nodes of log(in-degree+1), which
	// degree scalers divide by (PNA's δ); NewModel computes it from the
	// degree table when 0.
	AvgLogDegree float64 `json:"avg_log_degree,omitempty"`
	// Seed initialises the weights.
	Seed uint64 `json:"seed"`

	// stored is the number of elements in the tensors of the checkpoint
	// the config was read from (ReadConfig), 0 if none: a model of more
	// parameters cannot be the checkpoint's, and NewModel refuses it
	// before making them.
	stored int64
}

// Model is a stack of layers with dropout before each layer and an
// activation (ReLU; ELU for GAT) between layers. An APPNP model is its MLP
// (layer 0, dropout inside) followed by Config.Layers propagation steps
// without weights, dropout or activation.
type Model struct {
	Config  Config
	Layers  []Layer
	spec    Spec
	deg     []float32 // the in-degree table (Spec.NeedsDegrees)
	dryOnce sync.Once // the memory plan's dry runs (see dryRun)
	dry     *dryRunner
	reuse   *blockReuse     // see ReuseBlocks
	scratch []*blockScratch // per layer; see ScratchBlocks
}

// Clone returns a new model of m's config holding a copy of m's weights
// (deg as NewModel's, usually m.Degrees(); a snapshot evaluated while
// training goes on).
func (m *Model) Clone(deg []float32) (*Model, error) {
	c, err := NewModel(m.Config, deg)
	if err != nil {
		return nil, err
	}
	_, src := m.NamedTensors()
	_, dst := c.NamedTensors()
	for i := range src {
		copy(dst[i].Value.Data, src[i].Value.Data)
	}
	return c, nil
}

// NewModel builds a model. deg (every node's in-degree in the full graph,
// indexed by node id) is needed by the kinds whose Spec sets NeedsDegrees
// (GCN, APPNP, GCNII, GCN-JK, PNA: their normalisation or scalers) and may
// be nil for the others. It must cover every node the model will run on:
// NewModel cannot know the graph, so the engine and layer-wise inference
// check it (CheckDegrees) before a step. An empty, non-nil table is for a
// model whose blocks all carry a Remote that supplies the degrees (SAR's
// shards); a step on a local block then fails with CheckDegrees' error.
func NewModel(c Config, deg []float32) (*Model, error) {
	if c.Layers < 1 || c.In < 1 || c.Out < 1 || (c.Layers > 1 && c.Hidden < 1) {
		return nil, fmt.Errorf("nn: bad model shape: %d layers, in %d, hidden %d, out %d", c.Layers, c.In, c.Hidden, c.Out)
	}
	if !(c.Dropout >= 0 && c.Dropout < 1) { // NaN too
		return nil, fmt.Errorf("nn: dropout must be in [0, 1), got %g", c.Dropout)
	}
	if c.Heads < 0 || c.OutHeads < 0 {
		return nil, fmt.Errorf("nn: %d heads and %d output heads: want 1 or more (0: one)", c.Heads, c.OutHeads)
	}
	if !(c.AttnDropout >= 0 && c.AttnDropout < 1) {
		return nil, fmt.Errorf("nn: attention dropout must be in [0, 1), got %g", c.AttnDropout)
	}
	spec, ok := Lookup(c.Kind)
	if !ok {
		return nil, fmt.Errorf("nn: unknown model kind %q", c.Kind)
	}
	if spec.NeedsDegrees && deg == nil {
		return nil, fmt.Errorf("nn: %s needs the graph's degrees", c.Kind)
	}
	if c.AvgLogDegree == 0 && len(deg) > 0 {
		// Checked once, where the mean is first taken (clones carry it).
		for v, d := range deg {
			if !(d >= 0) || math.IsInf(float64(d), 1) {
				return nil, fmt.Errorf("nn: degree of node %d is %v; degrees must be finite and >= 0", v, d)
			}
		}
		c.AvgLogDegree = AvgLogDegree(deg)
	}
	ini := NewInit(rng.Derive(c.Seed, 0x1417))
	memory := memoryLimit()
	if memory > 0 {
		ini.limit = memory / 4
	}
	if c.stored > 0 {
		ini.limit = min(ini.limit, c.stored)
	}
	layers, err := build(spec, ini, &c, deg)
	if t, ok := err.(tooMany); ok {
		shape := fmt.Sprintf("%s, %d layers, in %d, hidden %d, out %d", c.Kind, c.Layers, c.In, c.Hidden, c.Out)
		if c.stored > 0 && t.atLeast > c.stored {
			return nil, fmt.Errorf("nn: the checkpoint's config (%s) makes more than the %s parameters its tensors hold: config and tensors do not match",
				shape, units.Count(c.stored))
		}
		if memory <= 0 { // unknown: only sizes whose products overflow get here
			return nil, fmt.Errorf("nn: the model's sizes (%s) overflow", shape)
		}
		return nil, fmt.Errorf("nn: the model's parameters (%s) take more than the %s of memory this process may use (%s at least)",
			shape, units.Bytes(memory), units.Bytes(min(t.atLeast, math.MaxInt64/4)*4))
	}
	if err != nil {
		return nil, err
	}
	return &Model{Config: c, Layers: layers, spec: spec, deg: deg}, nil
}

// Degrees returns the in-degree table the model was built with (NewModel's
// deg; nil when it was given none). The model and its clones share it:
// do not modify it. Clone(m.Degrees()) copies m with the same table.
func (m *Model) Degrees() []float32 { return m.deg }

// NeedsDegrees reports whether the model's kind normalises by the graph's
// in-degrees (Spec.NeedsDegrees).
func (m *Model) NeedsDegrees() bool { return m.spec.NeedsDegrees }

// CheckDegrees returns an error when the model's kind needs the graph's
// in-degrees and its degree table does not cover node ids [0, nodes): a
// step on such a graph would index past the table. The engine checks the
// ids of every batch's input nodes, layer-wise inference the graph's node
// count.
func (m *Model) CheckDegrees(nodes int) error {
	if !m.spec.NeedsDegrees || len(m.deg) >= nodes {
		return nil
	}
	if len(m.deg) == 0 {
		return fmt.Errorf("nn: the %s model has no degree table (it was built for remote blocks, or cloned without one), and a step on local blocks needs every node's in-degree: build or clone it with the graph's in-degrees", m.Config.Kind)
	}
	return fmt.Errorf("nn: the %s model's degree table holds %d nodes, but it runs on node ids up to %d: build it with the in-degrees of the graph it runs on", m.Config.Kind, len(m.deg), nodes-1)
}

// memoryLimit is the memory the process may use, read once (tests
// replace it).
var memoryLimit = sync.OnceValue(memstat.Limit)

// build runs spec.Build, returning Init's tooMany panic (a parameter
// past its limit) as the error.
func build(spec Spec, ini *Init, c *Config, deg []float32) (layers []Layer, err error) {
	defer func() {
		if e := recover(); e != nil {
			t, ok := e.(tooMany)
			if !ok {
				panic(e)
			}
			layers, err = nil, t
		}
	}()
	return spec.Build(ini, c, deg)
}

// AvgLogDegree returns the mean of log(d+1) over the in-degrees deg.
func AvgLogDegree(deg []float32) float64 {
	if len(deg) == 0 {
		return 0
	}
	var s float64
	for _, d := range deg {
		s += math.Log(float64(d) + 1)
	}
	return s / float64(len(deg))
}

// Params returns every parameter, layer by layer, in a fixed order (the
// optimiser's and the checkpoint's). Each is named within its layer
// ("lin_l.weight"); NamedParams gives the full names ("convs.0.lin_l.weight").
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

// NamedTensors is NamedParams followed by the layers' buffers (see
// Buffered): everything a checkpoint holds.
func (m *Model) NamedTensors() ([]string, []*autograd.Var) {
	names, ps := m.NamedParams()
	for i, l := range m.Layers {
		if b, ok := l.(Buffered); ok {
			for _, v := range b.Buffers() {
				names = append(names, fmt.Sprintf("convs.%d.%s", i, v.Name))
				ps = append(ps, v)
			}
		}
	}
	return names, ps
}

// BatchStatistics reports whether a layer normalises with statistics of
// the batch (batch normalisation): then a batch split into micro-batches
// (a memory bound) trains on each micro-batch's statistics, as gradient
// accumulation does in PyTorch, not exactly the whole batch's gradients.
func (m *Model) BatchStatistics() bool {
	for _, l := range m.Layers {
		if _, ok := l.(Buffered); ok {
			return true
		}
	}
	return false
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
// only), the layer, and the activation unless l is the last layer. For
// APPNP's propagation layers (l >= 1) use ForwardLayerH0.
func (m *Model) ForwardLayer(tp *autograd.Tape, l int, b *Block, x *autograd.Var, train bool, seed uint64) *autograd.Var {
	return m.ForwardLayerH0(tp, l, b, x, nil, train, seed)
}

// NeedsH0 reports whether layer l reads the predictions h0 of its
// destinations (APPNP's teleport term), the output of layer 0.
func (m *Model) NeedsH0(l int) bool { return (m.spec.Teleport || m.spec.InitialResidual) && l > 0 }

// H0Layer is a layer that reads h0, the output of the model's layer 0 for
// its block's destinations (Spec.InitialResidual; GCNII's initial
// residual): the model calls ForwardH0 instead of Forward.
type H0Layer interface {
	ForwardH0(tp *autograd.Tape, b *Block, x, h0 *autograd.Var, train bool, seed uint64) *autograd.Var
}

// ForwardLayerH0 is ForwardLayer with h0, the output of layer 0 for the
// block's destination rows, for layers where NeedsH0 holds (nil otherwise).
func (m *Model) ForwardLayerH0(tp *autograd.Tape, l int, b *Block, x, h0 *autograd.Var, train bool, seed uint64) *autograd.Var {
	return m.forwardLayer(tp, l, b, x, h0, train, seed, false, tensor.RowDropout{})
}

// forwardLayer is ForwardLayerH0 where x may already carry this layer's
// input dropout (dropped: fused into the layer below) and next, when its
// P > 0, is the next layer's input dropout to fuse into this layer's
// output (see nextDropout).
func (m *Model) forwardLayer(tp *autograd.Tape, l int, b *Block, x, h0 *autograd.Var, train bool, seed uint64, dropped bool, next tensor.RowDropout) *autograd.Var {
	if b.Remote == nil {
		if b.deg == nil {
			b.deg = m.deg
		}
		if m.reuse != nil {
			m.reuse.apply(b)
			defer m.reuse.keep(b)
		}
		if train {
			m.scratchFor(l, b)
		}
	}
	if m.spec.Teleport {
		if l == 0 {
			if train && !dropped {
				x = b.Dropout(tp, x, m.Config.Dropout, rng.Derive(seed, 0))
			}
			return m.Layers[0].Forward(tp, b, x, train, rng.Derive(seed, 1))
		}
		return m.Layers[l].(*propLayer).propagate(tp, b, x, h0)
	}
	if train && !dropped && !m.spec.LayerDropout {
		x = b.Dropout(tp, x, m.Config.Dropout, rng.Derive(seed, uint64(2*l)))
	}
	if m.fusesReLU(l) {
		return m.Layers[l].(reluFused).forwardReLU(tp, b, x, next)
	}
	var h *autograd.Var
	if hl, ok := m.Layers[l].(H0Layer); ok && h0 != nil {
		h = hl.ForwardH0(tp, b, x, h0, train, rng.Derive(seed, uint64(2*l+1)))
	} else {
		h = m.Layers[l].Forward(tp, b, x, train, rng.Derive(seed, uint64(2*l+1)))
	}
	if l < len(m.Layers)-1 {
		if m.spec.Activation != nil {
			h = m.spec.Activation(tp, h)
		} else {
			h = tp.ReLU(h)
		}
	}
	return h
}

// rowKeys returns the node ids of the rows of a block's input (rows of
// them) when the block asks for node-keyed dropout (Block.NodeDropout)
// and names a source node per row; otherwise dropout is keyed by position.
func rowKeys(b *Block, rows int) []int32 {
	if b != nil && b.NodeDropout && len(b.dropKeys()) == rows {
		return b.dropKeys()
	}
	return nil
}

// nextDropout returns the input dropout of layer l+1 when it can be fused
// into layer l's output (layer l on block b): in training, for a hidden
// layer that fuses its ReLU, whose output is layer l+1's input as it is
// (nothing stacked below it) and whose rows are node-keyed. Otherwise P
// is 0 and layer l+1 draws its own.
func (m *Model) nextDropout(blocks []*Block, l int, b *Block, train, stacked bool, seed uint64) tensor.RowDropout {
	if !train || stacked || b.Remote != nil || m.Config.Dropout == 0 || !m.fusesReLU(l) || l+1 >= len(m.Layers) {
		return tensor.RowDropout{}
	}
	nb := blocks[0]
	if len(blocks) > 1 {
		nb = blocks[l+1]
	}
	keys := rowKeys(nb, b.NumDst)
	if keys == nil {
		return tensor.RowDropout{}
	}
	return tensor.RowDropout{P: m.Config.Dropout, Seed: rng.Derive(seed, uint64(2*(l+1))), Keys: keys}
}

// fusesReLU reports whether layer l applies the model's ReLU itself: a
// hidden layer of a model whose activation is ReLU, of a kind that fuses
// it into its output op.
func (m *Model) fusesReLU(l int) bool {
	if m.spec.Teleport || m.spec.Activation != nil || l >= len(m.Layers)-1 {
		return false
	}
	_, ok := m.Layers[l].(reluFused)
	return ok
}

// Forward runs all layers: blocks[l] is layer l's block (input layer
// first); a single block is reused by every layer (full-graph training).
// It returns the logits of the last block's destination nodes.
func (m *Model) Forward(tp *autograd.Tape, blocks []*Block, x *autograd.Var, train bool, seed uint64) *autograd.Var {
	logits, _ := m.ForwardStacked(tp, blocks, x, nil, train, seed, false)
	return logits
}

// InputDropout returns the probability of the dropout layer 0 applies to
// its input in training, which a caller may apply ahead instead (see
// ForwardStacked's inputDropped): row i of the input dropped as
// Block.Dropout does, keyed by blocks[0]'s dropKeys when it asks for
// node-keyed dropout, with the seed rng.Derive(seed, 0) for the step's
// seed. It is 0 when layer 0 applies none, or the layers draw their own
// (Spec.LayerDropout).
func (m *Model) InputDropout() float64 {
	if m.spec.LayerDropout {
		return 0
	}
	return m.Config.Dropout
}

// ForwardStacked is Forward where layer l >= 1 reads layer l-1's output
// stacked over below[l-1] (when it has rows): the rows of the block's
// sources past those layer l-1 computed, e.g. GNNAutoScale's history rows
// of a batch's halo (below may be nil). It also returns every hidden
// layer's output; with below nil, in training, a hidden output may carry
// the next layer's node-keyed input dropout already (fused into the layer
// that computes it, see nextDropout). inputDropped says that x carries
// layer 0's input dropout already (InputDropout), applied by the caller.
func (m *Model) ForwardStacked(tp *autograd.Tape, blocks []*Block, x *autograd.Var, below []tensor.Matrix, train bool, seed uint64, inputDropped bool) (*autograd.Var, []*autograd.Var) {
	h := x
	var h0 *autograd.Var // layer 0's output (APPNP's teleport term)
	var hidden []*autograd.Var
	dropped := inputDropped // h carries layer l's input dropout already
	for l := range m.Layers {
		b := blocks[0]
		if len(blocks) > 1 {
			b = blocks[l]
		}
		var h0dst *autograd.Var
		if m.NeedsH0(l) {
			h0dst = b.Initial(tp, h0)
		}
		next := m.nextDropout(blocks, l, b, train, below != nil, seed)
		out := m.forwardLayer(tp, l, b, h, h0dst, train, seed, dropped, next)
		dropped = next.P != 0
		if l == 0 {
			h0 = out
		}
		if l == len(m.Layers)-1 {
			return out, hidden
		}
		hidden = append(hidden, out)
		h = out
		if below != nil && below[l].Rows > 0 {
			h = tp.ConcatRows(out, tp.Const(below[l]))
		}
	}
	panic("nn: model without layers")
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

// gatAttention is GAT's attention (tp.GATAttention) with attention dropout
// p. With b.NodeDropout the mask of each destination's edges is keyed by
// its node id (see Block.NodeDropout).
func gatAttention(tp *autograd.Tape, b *Block, c *tensor.CSR, h, aSrc, aDst *autograd.Var, p float64, seed uint64) *autograd.Var {
	var keys []int32
	if b != nil && b.NodeDropout && len(b.dropKeys()) >= b.NumDst {
		keys = b.dropKeys()[:b.NumDst]
	}
	return tp.GATAttention(c, h, aSrc, aDst, 0.2, p, seed, keys)
}

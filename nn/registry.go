package nn

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/graphmill/graphmill/tensor"
	"github.com/graphmill/graphmill/tensor/autograd"
)

// Spec describes a model kind. Each built-in kind registers its Spec from
// the file that defines its layers (sage.go, gcn.go, gat.go, appnp.go);
// a kind may as well be registered from a package outside this module
// (examples/custom-layer), with nn's public ops. Either way NewModel,
// every training mode, the memory planner and the tests that iterate
// Kinds pick it up (graphmill's CLI offers the kinds registered in its
// own binary).
type Spec struct {
	Kind Kind
	// Help is a one-line description for --help.
	Help string
	// NeedsDegrees says the layers need every node's in-degree in the full
	// graph (GCN-style normalisation).
	NeedsDegrees bool
	// EdgeWeights says the layers aggregate by the dataset's edge weights
	// (AggWeighted): training refuses a dataset without them up front,
	// rather than failing in the first step.
	EdgeWeights bool
	// Build returns the model's layers for c, their weights drawn from ini
	// (it may fill defaults in c, which the model then records).
	Build func(ini *Init, c *Config, deg []float32) ([]Layer, error)
	// Activation is applied between layers (nil: ReLU).
	Activation func(tp *autograd.Tape, h *autograd.Var) *autograd.Var
	// Teleport marks APPNP-style models: layer 0 predicts, and every later
	// layer propagates and adds α·h0 (see Model.NeedsH0); no dropout or
	// activation around the propagation layers.
	Teleport bool
	// InitialResidual marks models whose layers l >= 1 read h0, layer 0's
	// output for their destinations (GCNII), through ForwardH0 (see
	// H0Layer); dropout and activation apply as for any layer.
	InitialResidual bool
	// LayerDropout says the layers apply Config.Dropout themselves: the
	// model drops no layer's input (GCN-JK drops each layer's output).
	LayerDropout bool
	// ExtraLayers is how many layers the model has beyond Config.Layers
	// (APPNP's and GCNII's input MLP: 1); each takes a block.
	ExtraLayers int
	// Defaults are the model's training settings (train.Defaults).
	Defaults Defaults
	// Decay, when set, gives a parameter of layer l its weight decay from
	// the configured one (GCNII decays its convolutions 20× more than its
	// linear layers); nil: every parameter gets the configured decay.
	Decay func(layer int, name string, base float64) float64
}

// Defaults are a model kind's good training settings: the published
// ones where a paper gives them. Zero fields take train's general
// defaults (hidden 16, 2 layers, dropout 0.5, Adam lr 0.01, weight decay
// 5e-4, 200 epochs, full-graph mode).
type Defaults struct {
	Hidden, Layers  int
	Dropout         float64
	Heads, OutHeads int
	AttnDropout     float64
	Alpha, Theta    float64
	LR, WeightDecay float64
	Epochs          int
	Patience        int
	// Sampled trains in sampled mode by default, with Fanouts (one per
	// block) and Batch seeds.
	Sampled bool
	Fanouts []int
	Batch   int
	// DecayFirstLayerOnly applies weight decay to the first layer only
	// (GCN as Kipf & Welling).
	DecayFirstLayerOnly bool
	// RawFeatures trains on the features as stored, not row-normalised.
	RawFeatures bool
	// Note is a few words on where the settings come from, for --help.
	Note string
}

// NumLayers returns the number of layers (and of blocks a sampled
// minibatch needs) of a model of config c.
func NumLayers(c Config) int {
	s, _ := Lookup(c.Kind)
	return c.Layers + s.ExtraLayers
}

// planned is what every layer implements for the memory planner: the
// matrices its Forward allocates on a block of shape s from input x, and
// the index arrays it derives from the block (an upper bound).
type planned interface {
	plan(p *planner, s BlockShape, x pv) pv
	indexBytes(s BlockShape, train bool) int64
}

// reluFused is a layer that applies the model's ReLU itself, fused into
// its output op (Forward without it, forwardReLU with it, and with the
// next layer's node-keyed input dropout when drop.P > 0), and plans that
// fused form (planReLU).
type reluFused interface {
	forwardReLU(tp *autograd.Tape, b *Block, x *autograd.Var, drop tensor.RowDropout) *autograd.Var
	planReLU(p *planner, s BlockShape, x pv) pv
}

var (
	registryMu sync.RWMutex
	registry   = map[Kind]Spec{}
)

// Register adds a model kind; it panics on a duplicate or incomplete Spec
// (a programming error, caught by every test run).
func Register(s Spec) {
	registryMu.Lock()
	defer registryMu.Unlock()
	if s.Kind == "" || s.Build == nil {
		panic("nn: Register needs a Kind and a Build function")
	}
	if _, dup := registry[s.Kind]; dup {
		panic(fmt.Sprintf("nn: model kind %q registered twice", s.Kind))
	}
	registry[s.Kind] = s
}

// Lookup returns the Spec of a kind.
func Lookup(k Kind) (Spec, bool) {
	registryMu.RLock()
	defer registryMu.RUnlock()
	s, ok := registry[k]
	return s, ok
}

// Kinds returns every registered kind, sorted.
func Kinds() []Kind {
	registryMu.RLock()
	defer registryMu.RUnlock()
	ks := make([]Kind, 0, len(registry))
	for k := range registry {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// KindsHelp lists the registered kinds with their descriptions, one per
// line, for --help.
func KindsHelp() string {
	var b strings.Builder
	for _, k := range Kinds() {
		s, _ := Lookup(k)
		fmt.Fprintf(&b, "  %-7s %s\n", k, s.Help)
		if d := s.Defaults.Note; d != "" {
			fmt.Fprintf(&b, "          defaults: %s\n", d)
		}
	}
	return b.String()
}

// ParseKind parses a registered model kind (case-insensitive).
func ParseKind(s string) (Kind, error) {
	k := Kind(strings.ToLower(s))
	if _, ok := Lookup(k); ok {
		return k, nil
	}
	names := make([]string, 0)
	for _, k := range Kinds() {
		names = append(names, string(k))
	}
	return "", fmt.Errorf("unknown model %q: want one of %s", s, strings.Join(names, ", "))
}

// StackLayers builds c.Layers layers from c.In to c.Hidden to c.Out
// features with mk(l, in, out), each layer's input the previous one's
// OutDim: the usual shape of a Spec's Build.
func StackLayers(c *Config, mk func(l, in, out int) Layer) []Layer {
	var layers []Layer
	in := c.In
	for l := 0; l < c.Layers; l++ {
		out := c.Hidden
		if l == c.Layers-1 {
			out = c.Out
		}
		layer := mk(l, in, out)
		layers = append(layers, layer)
		in = layer.OutDim()
	}
	return layers
}

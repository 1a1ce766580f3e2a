package nn

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/graphmill/graphmill/internal/rng"
	"github.com/graphmill/graphmill/tensor"
	"github.com/graphmill/graphmill/tensor/autograd"
)

// Spec describes a model kind. Each kind registers its Spec from the file
// that defines its layers (sage.go, gcn.go, gat.go, appnp.go), so adding a
// model is one file in nn plus its tests: the CLI's --model, NewModel, the
// memory planner and the tests that iterate Kinds pick it up.
type Spec struct {
	Kind Kind
	// Help is a one-line description for --help.
	Help string
	// NeedsDegrees says the layers need every node's in-degree in the full
	// graph (GCN-style normalisation).
	NeedsDegrees bool
	// Build returns the model's layers for c (it may fill defaults in c,
	// which the model then records). Every layer must plan its own memory
	// (the unexported planned interface): NewModel refuses one that does
	// not, so the memory bound never counts an unknown layer as 0 bytes.
	Build func(r *rng.Rand, c *Config, deg []float32) ([]Layer, error)
	// Activation is applied between layers (nil: ReLU).
	Activation func(tp *autograd.Tape, h *autograd.Var) *autograd.Var
	// Teleport marks APPNP-style models: layer 0 predicts, and every later
	// layer propagates and adds α·h0 (see Model.NeedsH0); no dropout or
	// activation around the propagation layers.
	Teleport bool
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
		fmt.Fprintf(&b, "  %-6s %s\n", k, s.Help)
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

// stackLayers builds c.Layers layers from in to hidden to out widths with
// mk(l, in, out).
func stackLayers(c *Config, mk func(l, in, out int) Layer) []Layer {
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

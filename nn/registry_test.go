package nn

import (
	"strings"
	"testing"

	"github.com/graphmill/graphmill/internal/rng"
	"github.com/graphmill/graphmill/tensor/autograd"
)

// unplannedLayer is a layer without a memory plan.
type unplannedLayer struct{}

func (unplannedLayer) Forward(_ *autograd.Tape, _ *Block, x *autograd.Var, _ bool, _ uint64) *autograd.Var {
	return x
}
func (unplannedLayer) Params() []*autograd.Var { return nil }
func (unplannedLayer) OutDim() int             { return 1 }

func TestRegistry(t *testing.T) {
	for _, k := range []Kind{SAGE, GCN, GAT, APPNP} {
		if got, err := ParseKind(strings.ToUpper(string(k))); err != nil || got != k {
			t.Fatalf("ParseKind(%q) = %q, %v", k, got, err)
		}
		if !strings.Contains(KindsHelp(), string(k)) {
			t.Fatalf("KindsHelp lacks %s", k)
		}
	}
	if _, err := ParseKind("gin"); err == nil || !strings.Contains(err.Error(), "appnp") {
		t.Fatalf("ParseKind(gin) = %v; want an error listing the kinds", err)
	}
	// A kind whose layer cannot plan its memory is refused by NewModel,
	// never counted as 0 bytes by the memory bound.
	const fake Kind = "unplanned-test"
	Register(Spec{Kind: fake, Build: func(*rng.Rand, *Config, []float32) ([]Layer, error) {
		return []Layer{unplannedLayer{}}, nil
	}})
	defer func() {
		registryMu.Lock()
		delete(registry, fake)
		registryMu.Unlock()
	}()
	_, err := NewModel(Config{Kind: fake, In: 3, Out: 1, Layers: 1}, nil)
	if err == nil || !strings.Contains(err.Error(), "does not plan its memory") {
		t.Fatalf("NewModel with an unplanned layer: %v", err)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("registering a kind twice did not panic")
		}
	}()
	Register(Spec{Kind: GCN, Build: func(*rng.Rand, *Config, []float32) ([]Layer, error) { return nil, nil }})
}

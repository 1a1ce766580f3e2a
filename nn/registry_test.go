package nn

import (
	"strings"
	"testing"
)

func TestRegistry(t *testing.T) {
	for _, k := range []Kind{SAGE, GCN, GAT, APPNP, GIN, GCNII, PNA, GCNJK} {
		if got, err := ParseKind(strings.ToUpper(string(k))); err != nil || got != k {
			t.Fatalf("ParseKind(%q) = %q, %v", k, got, err)
		}
		if !strings.Contains(KindsHelp(), string(k)) {
			t.Fatalf("KindsHelp lacks %s", k)
		}
	}
	if _, err := ParseKind("chebnet"); err == nil || !strings.Contains(err.Error(), "appnp") {
		t.Fatalf("ParseKind(chebnet) = %v; want an error listing the kinds", err)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("registering a kind twice did not panic")
		}
	}()
	Register(Spec{Kind: GCN, Build: func(*Init, *Config, []float32) ([]Layer, error) { return nil, nil }})
}

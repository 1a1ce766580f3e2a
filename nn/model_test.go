package nn

import (
	"math"
	"strings"
	"testing"
)

// TestNewModelWithinMemory: a config whose parameters take more than the
// process's memory is an error before they are made, whatever the kind,
// and sizes whose products overflow are too.
func TestNewModelWithinMemory(t *testing.T) {
	defer func(f func() int64) { memoryLimit = f }(memoryLimit)
	memoryLimit = func() int64 { return 1 << 20 } // 1 MiB: 262,144 parameters
	deg := []float32{1, 2, 3}
	for _, tc := range []struct {
		c    Config
		want string // "" when the model fits
	}{
		{Config{Kind: GCN, In: 1433, Hidden: 16, Out: 7, Layers: 2}, ""},
		{Config{Kind: GCN, In: 1433, Hidden: 256, Out: 7, Layers: 2}, "(gcn, 2 layers, in 1433, hidden 256, out 7) take more than the 1 MiB of memory this process may use (1.4 MiB at least)"},
		{Config{Kind: SAGE, In: 1433, Hidden: 128, Out: 7, Layers: 2}, "take more than the 1 MiB"},
		{Config{Kind: GAT, In: 1433, Hidden: 8, Out: 7, Layers: 2, Heads: 8}, ""},
		{Config{Kind: GAT, In: 1433, Hidden: 8, Out: 7, Layers: 2, Heads: 64}, "take more than the 1 MiB"},
		{Config{Kind: GAT, In: 1433, Hidden: 1 << 40, Out: 7, Layers: 2, Heads: 1 << 40}, "take more than the 1 MiB"},
		{Config{Kind: APPNP, In: 1433, Hidden: 1 << 30, Out: 7, Layers: 10}, "take more than the 1 MiB"},
		{Config{Kind: "gcnii", In: 100, Hidden: 1 << 20, Out: 7, Layers: 4}, "take more than the 1 MiB"},
		{Config{Kind: "gin", In: 100, Hidden: 1 << 20, Out: 7, Layers: 2}, "take more than the 1 MiB"},
		{Config{Kind: "pna", In: 100, Hidden: 1 << 20, Out: 7, Layers: 2, AvgLogDegree: 1}, "take more than the 1 MiB"},
	} {
		m, err := NewModel(tc.c, deg)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%+v: %v", tc.c, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%+v: %v, want an error containing %q", tc.c, err, tc.want)
		case err == nil && int64(m.NumParams()) > 1<<18:
			t.Errorf("%+v: %d parameters made, past the limit", tc.c, m.NumParams())
		}
	}
}

// TestNewModelRefusesBadSettings: settings outside their range are errors,
// not clamped (negative heads were one head) or carried into training
// (a NaN dropout panicked in the first step).
func TestNewModelRefusesBadSettings(t *testing.T) {
	base := Config{Kind: GAT, In: 10, Hidden: 4, Out: 3, Layers: 2}
	for _, tc := range []struct {
		set  func(*Config)
		want string
	}{
		{func(c *Config) { c.Heads = -3 }, "heads"},
		{func(c *Config) { c.OutHeads = -1 }, "heads"},
		{func(c *Config) { c.Dropout = math.NaN() }, "dropout must be in [0, 1), got NaN"},
		{func(c *Config) { c.AttnDropout = math.NaN() }, "attention dropout"},
		{func(c *Config) { c.Dropout = 1 }, "dropout must be in [0, 1)"},
	} {
		c := base
		tc.set(&c)
		if _, err := NewModel(c, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an error containing %q", c, err, tc.want)
		}
	}
}

// TestNewModelRefusesBadDegrees: a negative, NaN or infinite degree (a
// hand-made table) is an error, not a NaN normalisation in every step.
func TestNewModelRefusesBadDegrees(t *testing.T) {
	c := Config{Kind: GCN, In: 10, Hidden: 4, Out: 3, Layers: 2}
	for _, bad := range []float32{-1, -0.5, float32(math.NaN()), float32(math.Inf(1))} {
		deg := []float32{1, 2, bad, 3}
		if _, err := NewModel(c, deg); err == nil || !strings.Contains(err.Error(), "degree of node 2") {
			t.Errorf("degree %v: %v, want an error naming node 2", bad, err)
		}
	}
	if _, err := NewModel(c, []float32{0, 1, 2, 3}); err != nil {
		t.Errorf("valid degrees: %v", err)
	}
}

// TestCheckDegrees: a kind that normalises by in-degrees needs a table
// covering every node it runs on; other kinds need none.
func TestCheckDegrees(t *testing.T) {
	for _, tc := range []struct {
		kind  Kind
		deg   []float32
		nodes int
		want  string // "" when it covers them
	}{
		{GCN, make([]float32, 8), 8, ""},
		{GCN, make([]float32, 8), 9, "holds 8 nodes, but it runs on node ids up to 8"},
		{APPNP, []float32{1, 2}, 8, "holds 2 nodes"},
		{GCN, []float32{}, 1, "has no degree table"},
		{SAGE, nil, 1000, ""},
		{SAGE, []float32{1}, 1000, ""},
	} {
		m, err := NewModel(Config{Kind: tc.kind, In: 4, Hidden: 8, Out: 2, Layers: 2}, tc.deg)
		if err != nil {
			t.Fatal(err)
		}
		if len(m.Degrees()) != len(tc.deg) || m.NeedsDegrees() != (tc.kind != SAGE) {
			t.Errorf("%s: Degrees %d, NeedsDegrees %v", tc.kind, len(m.Degrees()), m.NeedsDegrees())
		}
		err = m.CheckDegrees(tc.nodes)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s, %d degrees, %d nodes: %v, want %q", tc.kind, len(tc.deg), tc.nodes, err, tc.want)
		}
	}
}

package distbench

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/graphmill/graphmill/dataset"
	"github.com/graphmill/graphmill/synth"
)

// TestCheckGraph generates a small graph and checks that a reused data
// directory is accepted only for the sizes, feature count and seed it
// was generated with.
func TestCheckGraph(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "graph")
	if _, err := synth.Generate(context.Background(), dir, synth.Config{Nodes: 300, Edges: 1500, FeatureDim: 4, Classes: 4, Seed: 3}, false); err != nil {
		t.Fatal(err)
	}
	d, err := dataset.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ok := Config{Nodes: 300, Edges: 1500, Dim: 4, Seed: 3}
	for _, c := range []struct {
		name string
		edit func(*Config)
		meta func(*dataset.Meta)
		want string // "" for accepted
	}{
		{name: "as generated"},
		{name: "other node count", edit: func(c *Config) { c.Nodes = 50_000 }, want: "holds 300 nodes"},
		{name: "other edge count", edit: func(c *Config) { c.Edges = 300_000 }, want: "1500 edges"},
		{name: "other feature count", edit: func(c *Config) { c.Dim = 100 }, want: "4 features"},
		{name: "other seed", edit: func(c *Config) { c.Seed = 1 }, want: "seed 3"},
		{name: "not generated", meta: func(m *dataset.Meta) { m.Source = "ogbn-arxiv" }, want: "no generator seed"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, m := ok, d.Meta
			if c.edit != nil {
				c.edit(&cfg)
			}
			if c.meta != nil {
				c.meta(&m)
			}
			err := checkGraph(dir, m, cfg)
			switch {
			case c.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case c.want != "" && err == nil:
				t.Errorf("accepted %+v for a graph of %d nodes, %d edges, %d features (%s)", cfg, m.NumNodes, m.NumEdges, m.FeatureDim, m.Source)
			case c.want != "" && !strings.Contains(err.Error(), c.want):
				t.Errorf("error %q lacks %q", err, c.want)
			}
		})
	}
}

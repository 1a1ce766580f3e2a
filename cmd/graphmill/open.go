package main

import (
	"fmt"
	"io"
	"path/filepath"

	"github.com/graphmill/graphmill/dataset/parts"
	"github.com/graphmill/graphmill/internal/units"
)

// printBook describes a partitioned dataset ('graphmill data info' on it).
func printBook(w io.Writer, dir string, b *parts.Book) {
	fmt.Fprintf(w, "%s  (%s: partitioned dataset, format v%d)\n", b.Name, dir, b.FormatVersion)
	fmt.Fprintf(w, "  source      %s\n", b.Source)
	fmt.Fprintf(w, "  nodes       %d\n  edges       %d\n", b.NumNodes, b.NumEdges)
	vc := ""
	if b.VCycles != 0 {
		vc = fmt.Sprintf(", --vcycles %d", b.VCycles)
	}
	fmt.Fprintf(w, "  parts       %d by %s (imbalance tolerance %.3f, balancing %v, seed %d%s)\n", b.NumParts, b.Method, b.Imbalance, b.Balance, b.Seed, vc)
	fmt.Fprintf(w, "  edge cut    %s (%.2f%% of undirected edges), node imbalance %.3f\n", units.Count(b.Stats.EdgeCut), 100*b.Stats.CutFraction, b.Stats.Imbalance)
	for p, pi := range b.Parts {
		fmt.Fprintf(w, "  part %-4d   %s: %s inner + %s halo nodes, %s edges, split %d/%d/%d\n", p, pi.Dir, units.Count(pi.NumInner), units.Count(pi.NumHalo), units.Count(pi.NumEdges), pi.Train, pi.Val, pi.Test)
	}
	fmt.Fprintf(w, "  each part is a dataset ('graphmill data info %s'); train reads the whole dataset (%s) in modes full, sampled and gas, and these parts in modes sar, sa and one-shot, or sampled under a launcher with one rank per part\n", filepath.Join(dir, b.Parts[0].Dir), b.Source)
}

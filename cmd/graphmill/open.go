package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/graphmill/graphmill/dataset"
	"github.com/graphmill/graphmill/dataset/builtin"
	"github.com/graphmill/graphmill/dataset/parts"
	"github.com/graphmill/graphmill/internal/units"
)

// isPartitioned reports whether dir holds a partitioned dataset's book.
func isPartitioned(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, parts.BookFile))
	return err == nil
}

// openDataset opens a native dataset or a built-in one for command what
// ("train", "eval", ...). A partitioned dataset is not one: the error says
// what it is and what to give instead.
func openDataset(ctx context.Context, nameOrDir, what string) (*dataset.Dataset, error) {
	if isPartitioned(nameOrDir) {
		book, err := parts.ReadBook(nameOrDir)
		if err != nil {
			return nil, err
		}
		src := book.Source
		if src == "" {
			src = "the original dataset"
		}
		return nil, fmt.Errorf("%s is a partitioned dataset (%d parts of %s, made by 'graphmill partition'), not a dataset: 'graphmill %s' reads a whole dataset in modes full, sampled and gas (gas partitions it itself): give %s, or one part, which is a dataset of its nodes and halo (%s); or train over the parts with --mode sar, sa or one-shot (under a launcher, or alone)",
			nameOrDir, book.NumParts, book.Name, what, src, filepath.Join(nameOrDir, book.Parts[0].Dir))
	}
	return builtin.Open(ctx, nameOrDir)
}

// printBook describes a partitioned dataset ('graphmill data info' on it).
func printBook(w io.Writer, dir string, b *parts.Book) {
	fmt.Fprintf(w, "%s  (%s: partitioned dataset, format v%d)\n", b.Name, dir, b.FormatVersion)
	fmt.Fprintf(w, "  source      %s\n", b.Source)
	fmt.Fprintf(w, "  nodes       %d\n  edges       %d\n", b.NumNodes, b.NumEdges)
	fmt.Fprintf(w, "  parts       %d by %s (imbalance tolerance %.3f, balancing %v, seed %d)\n", b.NumParts, b.Method, b.Imbalance, b.Balance, b.Seed)
	fmt.Fprintf(w, "  edge cut    %s (%.2f%% of undirected edges), node imbalance %.3f\n", units.Count(b.Stats.EdgeCut), 100*b.Stats.CutFraction, b.Stats.Imbalance)
	for p, pi := range b.Parts {
		fmt.Fprintf(w, "  part %-4d   %s: %s inner + %s halo nodes, %s edges, split %d/%d/%d\n", p, pi.Dir, units.Count(pi.NumInner), units.Count(pi.NumHalo), units.Count(pi.NumEdges), pi.Train, pi.Val, pi.Test)
	}
	fmt.Fprintf(w, "  each part is a dataset ('graphmill data info %s'); train reads the whole dataset (%s) in modes full, sampled and gas, and these parts in modes sar, sa and one-shot\n", filepath.Join(dir, b.Parts[0].Dir), b.Source)
}

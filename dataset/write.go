package dataset

import (
	"context"
	"fmt"
	"slices"

	"github.com/graphmill/graphmill/graph"
)

// WriteOptions controls Write.
type WriteOptions struct {
	// Build overrides the importer's recommended graph build options when
	// non-nil.
	Build *graph.BuildOptions
	// Overwrite replaces an existing dataset at the destination.
	Overwrite bool
	// Workers bounds the goroutines of the graph builder (0: all cores).
	Workers int
}

// Validate checks a Raw dataset's internal consistency: lengths, id and
// label ranges, finite edge weights, and splits (CheckSplits). Importers
// call it before returning; Write calls it again.
func (r *Raw) Validate() error {
	if r.NumNodes < 0 || r.NumNodes > graph.MaxNodes {
		return fmt.Errorf("%s: %d nodes is outside [0, %d]", r.Name, r.NumNodes, graph.MaxNodes)
	}
	if len(r.Src) != len(r.Dst) {
		return fmt.Errorf("%s: %d edge sources but %d destinations", r.Name, len(r.Src), len(r.Dst))
	}
	if r.EdgeWeights != nil && len(r.EdgeWeights) != len(r.Src) {
		return fmt.Errorf("%s: %d edge weights for %d edges", r.Name, len(r.EdgeWeights), len(r.Src))
	}
	n := int32(r.NumNodes)
	for i := range r.Src {
		if r.Src[i] < 0 || r.Src[i] >= n || r.Dst[i] < 0 || r.Dst[i] >= n {
			return fmt.Errorf("%s: edge %d (%d -> %d) has a node id outside [0, %d)", r.Name, i, r.Src[i], r.Dst[i], n)
		}
	}
	if r.FeatureDim < 0 || r.FeatureDim == 0 && len(r.Features) > 0 {
		return fmt.Errorf("%s: feature dimension %d with %d feature values", r.Name, r.FeatureDim, len(r.Features))
	}
	if r.FeatureDim > 0 && len(r.Features) != r.NumNodes*r.FeatureDim {
		return fmt.Errorf("%s: %d feature values, want num_nodes*feature_dim = %d*%d", r.Name, len(r.Features), r.NumNodes, r.FeatureDim)
	}
	if r.Labels != nil && r.NumClasses == 0 && !slices.ContainsFunc(r.Labels, func(c int32) bool { return c >= 0 }) {
		return fmt.Errorf("%s: every one of the %d labels is -1 (unlabelled): no class to learn (%s)", r.Name, len(r.Labels), r.Source)
	}
	if (r.Labels == nil) != (r.NumClasses == 0) {
		return fmt.Errorf("%s: %d classes with %d labels", r.Name, r.NumClasses, len(r.Labels))
	}
	if r.Labels != nil && len(r.Labels) != r.NumNodes {
		return fmt.Errorf("%s: %d labels for %d nodes", r.Name, len(r.Labels), r.NumNodes)
	}
	for v, c := range r.Labels {
		if c < -1 || int(c) >= r.NumClasses {
			return fmt.Errorf("%s: label of node %d is %d, outside [-1, %d)", r.Name, v, c, r.NumClasses)
		}
	}
	if err := CheckWeights(r.EdgeWeights); err != nil {
		return fmt.Errorf("%s: %w", r.Name, err)
	}
	if err := CheckSplits(r.NumNodes, r.Labels, r.Train, r.Val, r.Test, false); err != nil {
		return fmt.Errorf("%s: %w", r.Name, err)
	}
	return nil
}

// Write builds the graph of r and writes the dataset atomically to dir.
func Write(ctx context.Context, dir string, r *Raw, opts WriteOptions) error {
	if err := r.Validate(); err != nil {
		return err
	}
	bo := r.Build
	if opts.Build != nil {
		bo = *opts.Build
	}
	bo.Workers = opts.Workers
	bo.EdgeIDs = false
	g, err := graph.Build(ctx, r.NumNodes, r.Src, r.Dst, r.EdgeWeights, bo)
	if err != nil {
		return fmt.Errorf("%s: %w", r.Name, err)
	}
	return WriteGraph(ctx, dir, r, g, bo, opts.Overwrite)
}

// WriteGraph writes r with an already built graph g (r's edges are ignored).
func WriteGraph(ctx context.Context, dir string, r *Raw, g *graph.CSC, bo graph.BuildOptions, overwrite bool) error {
	w, err := NewWriter(dir, overwrite)
	if err != nil {
		return err
	}
	defer w.Abort()
	m := Meta{
		Name: r.Name, Source: r.Source,
		NumNodes: r.NumNodes, NumEdges: g.NumEdges(),
		FeatureDim: r.FeatureDim, NumClasses: r.NumClasses,
		Graph:  GraphMeta{Symmetric: bo.Symmetrize, Dedup: bo.Dedup, SelfLoops: bo.SelfLoops.String(), HasWeights: g.Weights != nil},
		Splits: map[string]int{},
	}
	steps := []func() error{
		func() error { return Put(w, ArrayIndptr, g.Indptr) },
		func() error { return Put(w, ArrayIndices, g.Indices) },
	}
	if g.Weights != nil {
		steps = append(steps, func() error { return Put(w, ArrayEdgeWeight, g.Weights) })
	}
	if r.FeatureDim > 0 {
		steps = append(steps, func() error { return Put(w, ArrayFeatures, r.Features, r.NumNodes, r.FeatureDim) })
	}
	if r.Labels != nil {
		steps = append(steps, func() error { return Put(w, ArrayLabels, r.Labels) })
	}
	for _, s := range []struct {
		name string
		ids  []int32
	}{{"train", r.Train}, {"val", r.Val}, {"test", r.Test}} {
		if s.ids != nil {
			m.Splits[s.name] = len(s.ids)
			steps = append(steps, func() error { return Put(w, s.name+"_idx", s.ids) })
		}
	}
	for _, step := range steps {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := step(); err != nil {
			return err
		}
	}
	return w.Commit(m)
}

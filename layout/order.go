// Package layout renumbers a dataset's nodes so that the feature rows that
// training reads together share disk pages (graphmill data pack): what a
// batch misses in the cache then costs fewer pages read from disk.
//
// Order computes the new order of the nodes; Write writes a renumbered copy
// of a dataset whose orig_ids array maps every new id back to the original
// one, so that the ids that go into and come out of graphmill (splits,
// predictions, the Python loaders' n_id) stay the original ones.
//
// The orders follow DiskGNN (offline sampling, 2024) and GNNLab's
// pre-sampling: sampled epochs count how often each node's row is read,
// and nodes read equally often are placed side by side, so that the pages
// of rows likely to be missed together hold several of them. With
// Partition, nodes are first grouped by part of graphmill's partitioner,
// which keeps a seed's neighbourhood on few pages on graphs with locality.
package layout

import (
	"context"
	"fmt"
	"slices"

	"github.com/graphmill/graphmill/dataset"
	"github.com/graphmill/graphmill/feature"
	"github.com/graphmill/graphmill/partition"
	"github.com/graphmill/graphmill/sample"
)

// Method is how Order ranks the nodes.
type Method string

// The methods of Order.
const (
	// Sample orders nodes by how many sampled batches read their row,
	// most first (offline sampling over the training seeds).
	Sample Method = "sample"
	// Degree orders nodes by out-degree, highest first: no sampling, a
	// proxy for how often a node is drawn as a neighbour.
	Degree Method = "degree"
	// Partition groups nodes by part, and orders each part as Sample.
	Partition Method = "partition"
)

// Methods lists the methods for help texts and errors.
var Methods = []Method{Sample, Degree, Partition}

// ParseMethod parses a method's name.
func ParseMethod(s string) (Method, error) {
	for _, m := range Methods {
		if string(m) == s {
			return m, nil
		}
	}
	return "", fmt.Errorf("layout: unknown method %q (want one of %v)", s, Methods)
}

// Config configures Order.
type Config struct {
	// Method is the ranking (default Sample).
	Method Method
	// Fanouts and BatchSize are the sampling of the training the layout
	// is for (default [25, 10] and 1024).
	Fanouts   []int
	BatchSize int
	// Epochs is the number of sampled epochs counted (default 1).
	Epochs int
	// Parts is the number of parts for Partition (default: one per 64k
	// nodes, at least 2).
	Parts int
	// Seed draws the counted epochs and the partition.
	Seed uint64
	// Workers bounds the goroutines (0: all cores).
	Workers int
}

func (c Config) withDefaults(n int) Config {
	if c.Method == "" {
		c.Method = Sample
	}
	if len(c.Fanouts) == 0 {
		c.Fanouts = []int{25, 10}
	}
	if c.BatchSize <= 0 {
		c.BatchSize = 1024
	}
	if c.Epochs <= 0 {
		c.Epochs = 1
	}
	if c.Parts <= 0 {
		c.Parts = max(2, n/65536)
	}
	c.Parts = min(c.Parts, max(1, n))
	return c
}

// Order returns the nodes of d in their new order: order[new] is the
// original id of new node new. Every node appears once.
func Order(ctx context.Context, d *dataset.Dataset, cfg Config) ([]int32, error) {
	g := d.Graph
	n := g.NumNodes
	cfg = cfg.withDefaults(n)
	var score []uint32
	switch cfg.Method {
	case Degree:
		deg := g.OutDegrees()
		score = make([]uint32, n)
		for v, k := range deg {
			score[v] = uint32(k)
		}
	case Sample, Partition:
		var err error
		if score, err = Counts(ctx, d, cfg); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("layout: unknown method %q (want one of %v)", cfg.Method, Methods)
	}
	order := complete(feature.HotOrder(score), n)
	if cfg.Method != Partition || cfg.Parts < 2 {
		return order, nil
	}
	parts, err := partition.Assign(ctx, g, cfg.Parts, cfg.Seed, cfg.Workers)
	if err != nil {
		return nil, err
	}
	// A stable sort by part keeps the hottest first within every part.
	slices.SortStableFunc(order, func(a, b int32) int { return int(parts[a]) - int(parts[b]) })
	return order, nil
}

// Counts samples cfg.Epochs epochs of batches over d's training seeds (all
// nodes when it has no split) and returns how many batches read each
// node's row.
func Counts(ctx context.Context, d *dataset.Dataset, cfg Config) ([]uint32, error) {
	cfg = cfg.withDefaults(d.Graph.NumNodes)
	s, err := sample.New(d.Graph, sample.Config{Fanouts: cfg.Fanouts})
	if err != nil {
		return nil, err
	}
	seeds := d.Train
	if len(seeds) == 0 {
		seeds = make([]int32, d.Graph.NumNodes)
		for i := range seeds {
			seeds[i] = int32(i)
		}
	}
	total := make([]uint32, d.Graph.NumNodes)
	for e := range cfg.Epochs {
		key := sample.EpochKey(cfg.Seed, e)
		bs, err := sample.Batches(seeds, cfg.BatchSize, true, key, false)
		if err != nil {
			return nil, err
		}
		c, err := s.CountInputs(ctx, bs, key, cfg.Workers)
		if err != nil {
			return nil, err
		}
		for v, k := range c {
			total[v] += k
		}
	}
	return total, nil
}

// complete appends to order (distinct nodes of [0, n)) the nodes it lacks,
// in id order.
func complete(order []int32, n int) []int32 {
	if len(order) == n {
		return order
	}
	in := make([]bool, n)
	for _, v := range order {
		in[v] = true
	}
	out := slices.Grow(order, n-len(order))
	for v := range n {
		if !in[v] {
			out = append(out, int32(v))
		}
	}
	return out
}

// Inverse returns the inverse of the permutation order: inv[order[i]] = i.
func Inverse(order []int32) []int32 {
	inv := make([]int32, len(order))
	for i, v := range order {
		inv[v] = int32(i)
	}
	return inv
}

// Package graph holds graphmill's in-memory graph: a compressed sparse
// column (CSC) adjacency keyed by destination, so that for every node the
// list of its in-neighbours (the nodes whose messages it aggregates) is one
// contiguous slice.
//
// Node ids are int32: one graph (or one partition of a larger graph) holds at
// most 2^31-1 nodes. Edge offsets are int64, so the number of edges is
// limited only by memory. A graph costs 8 bytes per node plus 4 bytes per
// edge, plus 4 more per edge with weights and 8 more with edge ids.
//
// Build turns an edge list into a CSC graph in parallel, sorting every
// neighbour list and optionally symmetrizing, removing duplicates and
// removing or adding self-loops:
//
//	g, err := graph.Build(ctx, numNodes, src, dst, nil, graph.BuildOptions{Symmetrize: true, Dedup: true})
//	for _, u := range g.InNeighbors(v) { ... }
//
// Reverse gives the out-neighbour view (the CSC of the reversed graph).
package graph

import (
	"fmt"
	"math"
	"sync/atomic"

	"github.com/graphmill/graphmill/internal/par"
)

// MaxNodes is the largest number of nodes a graph may hold (int32 ids).
const MaxNodes = math.MaxInt32

// CSC is a graph stored as compressed in-neighbour lists: the in-neighbours
// of node v are Indices[Indptr[v]:Indptr[v+1]], sorted ascending. Weights
// and EdgeIDs, when non-nil, run parallel to Indices.
type CSC struct {
	// NumNodes is the number of nodes; ids run from 0 to NumNodes-1.
	NumNodes int
	// Indptr has NumNodes+1 offsets into Indices, starting at 0.
	Indptr []int64
	// Indices holds the source node of every edge, grouped by destination.
	Indices []int32
	// Weights holds an optional weight per edge.
	Weights []float32
	// EdgeIDs holds an optional id per edge (its position in the input edge
	// list, or -1 for an added self-loop).
	EdgeIDs []int64
}

// NumEdges returns the number of stored (directed) edges.
func (g *CSC) NumEdges() int64 { return int64(len(g.Indices)) }

// InDegree returns the number of in-edges of v.
func (g *CSC) InDegree(v int32) int { return int(g.Indptr[v+1] - g.Indptr[v]) }

// InNeighbors returns the sorted in-neighbours of v, aliasing the graph.
func (g *CSC) InNeighbors(v int32) []int32 { return g.Indices[g.Indptr[v]:g.Indptr[v+1]] }

// InDegrees returns the in-degree of every node.
func (g *CSC) InDegrees() []int32 {
	d := make([]int32, g.NumNodes)
	for v := range d {
		d[v] = int32(g.Indptr[v+1] - g.Indptr[v])
	}
	return d
}

// OutDegrees returns the out-degree of every node (how often it appears as
// a source).
// Large graphs count on every core, with atomic increments: the count is
// bound by the random accesses into the degrees, which cores overlap (4.6 s
// on one core for 321M edges).
func (g *CSC) OutDegrees() []int32 {
	d := make([]int32, g.NumNodes)
	if len(g.Indices) < 1<<22 {
		for _, u := range g.Indices {
			d[u]++
		}
		return d
	}
	par.For(par.Workers(0), len(g.Indices), func(_, lo, hi int) {
		for _, u := range g.Indices[lo:hi] {
			atomic.AddInt32(&d[u], 1)
		}
	})
	return d
}

// Bytes returns the memory the graph's arrays occupy.
func (g *CSC) Bytes() int64 {
	return int64(len(g.Indptr))*8 + int64(len(g.Indices))*4 + int64(len(g.Weights))*4 + int64(len(g.EdgeIDs))*8
}

// Validate checks the structural invariants: offsets start at 0, never
// decrease and end at len(Indices); every source id is in range; optional
// arrays have one entry per edge. It does not require sorted lists.
func (g *CSC) Validate() error {
	if g.NumNodes < 0 || g.NumNodes > MaxNodes {
		return fmt.Errorf("graph: %d nodes is outside [0, %d]", g.NumNodes, MaxNodes)
	}
	if len(g.Indptr) != g.NumNodes+1 {
		return fmt.Errorf("graph: indptr has %d entries, want num_nodes+1 = %d", len(g.Indptr), g.NumNodes+1)
	}
	if g.Indptr[0] != 0 {
		return fmt.Errorf("graph: indptr[0] = %d, want 0", g.Indptr[0])
	}
	for v := 0; v < g.NumNodes; v++ {
		if g.Indptr[v+1] < g.Indptr[v] {
			return fmt.Errorf("graph: indptr decreases at node %d (%d > %d)", v, g.Indptr[v], g.Indptr[v+1])
		}
	}
	if g.Indptr[g.NumNodes] != int64(len(g.Indices)) {
		return fmt.Errorf("graph: indptr ends at %d but there are %d indices", g.Indptr[g.NumNodes], len(g.Indices))
	}
	n := int32(g.NumNodes)
	for i, u := range g.Indices {
		if u < 0 || u >= n {
			return fmt.Errorf("graph: indices[%d] = %d is outside [0, %d)", i, u, n)
		}
	}
	if g.Weights != nil && len(g.Weights) != len(g.Indices) {
		return fmt.Errorf("graph: %d weights for %d edges", len(g.Weights), len(g.Indices))
	}
	if g.EdgeIDs != nil && len(g.EdgeIDs) != len(g.Indices) {
		return fmt.Errorf("graph: %d edge ids for %d edges", len(g.EdgeIDs), len(g.Indices))
	}
	return nil
}

// DegreeStats summarises a degree distribution.
type DegreeStats struct {
	Min, Max int32
	Mean     float64
	Median   int32
	// Zero counts nodes of degree 0.
	Zero int
}

// Stats computes min, max, mean, median and the number of zeros of degrees.
func Stats(degrees []int32) DegreeStats {
	if len(degrees) == 0 {
		return DegreeStats{}
	}
	s := DegreeStats{Min: math.MaxInt32}
	var sum int64
	maxd := int32(0)
	for _, d := range degrees {
		sum += int64(d)
		s.Min = min(s.Min, d)
		maxd = max(maxd, d)
		if d == 0 {
			s.Zero++
		}
	}
	s.Max = maxd
	s.Mean = float64(sum) / float64(len(degrees))
	// Median by counting, O(n + max degree) without copying the degrees.
	counts := make([]int, int(maxd)+1)
	for _, d := range degrees {
		counts[d]++
	}
	half, seen := (len(degrees)+1)/2, 0
	for d, c := range counts {
		seen += c
		if seen >= half {
			s.Median = int32(d)
			break
		}
	}
	return s
}

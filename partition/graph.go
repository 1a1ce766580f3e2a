package partition

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/graphmill/graphmill/graph"
	"github.com/graphmill/graphmill/internal/par"
)

// checkShape checks what the partitioners index by, so that a malformed
// graph is an error rather than a panic in one of their goroutines: the
// offsets run from 0 to the adjacency's length without decreasing, the
// neighbours are nodes, and the weights match. It is one pass over the
// arrays, well under 1 % of a partitioning run; Validate checks the rest
// (symmetry, self-loops, repeats).
func (g *Graph) checkShape() error {
	if g == nil || len(g.Xadj) == 0 {
		return fmt.Errorf("partition: no graph, or one without offsets (want NumNodes+1)")
	}
	n := g.NumNodes()
	if n > graph.MaxNodes {
		return fmt.Errorf("partition: %d nodes exceeds %d", n, graph.MaxNodes)
	}
	if g.Xadj[0] != 0 || g.Xadj[n] != int64(len(g.Adjncy)) {
		return fmt.Errorf("partition: offsets run from %d to %d, want 0 to %d", g.Xadj[0], g.Xadj[n], len(g.Adjncy))
	}
	if g.EdgeWeights != nil && len(g.EdgeWeights) != len(g.Adjncy) {
		return fmt.Errorf("partition: %d edge weights for %d entries", len(g.EdgeWeights), len(g.Adjncy))
	}
	for v := 0; v < n; v++ {
		if g.Xadj[v+1] < g.Xadj[v] {
			return fmt.Errorf("partition: offsets decrease at node %d", v)
		}
	}
	for j, u := range g.Adjncy {
		if uint32(u) >= uint32(n) {
			v, _ := slices.BinarySearch(g.Xadj, int64(j)+1) // the node whose list holds entry j
			return fmt.Errorf("partition: node %d has neighbour %d outside [0, %d)", v-1, u, n)
		}
	}
	return nil
}

// Graph is the compact undirected graph the partitioners work on: a
// symmetric CSR without self-loops or repeated edges, with int32 node ids.
// Every undirected edge {u, v} is stored twice, as u in v's list and v in
// u's. It costs 8 bytes per node plus 8 bytes per undirected edge (4 per
// stored entry), plus 8 more per undirected edge with EdgeWeights.
type Graph struct {
	// Xadj has NumNodes+1 offsets: the neighbours of v are
	// Adjncy[Xadj[v]:Xadj[v+1]].
	Xadj []int64
	// Adjncy holds the neighbour lists.
	Adjncy []int32
	// EdgeWeights holds a positive weight per entry of Adjncy (equal for
	// both copies of an edge), or nil for unit weights.
	EdgeWeights []int32
}

// NumNodes returns the number of nodes.
func (g *Graph) NumNodes() int { return len(g.Xadj) - 1 }

// NumEdges returns the number of undirected edges (half the stored entries).
func (g *Graph) NumEdges() int64 { return int64(len(g.Adjncy)) / 2 }

// Degree returns the number of neighbours of v.
func (g *Graph) Degree(v int32) int { return int(g.Xadj[v+1] - g.Xadj[v]) }

// Neighbors returns the neighbours of v, aliasing the graph.
func (g *Graph) Neighbors(v int32) []int32 { return g.Adjncy[g.Xadj[v]:g.Xadj[v+1]] }

// Bytes returns the memory held by the graph's arrays.
func (g *Graph) Bytes() int64 {
	return int64(len(g.Xadj))*8 + int64(len(g.Adjncy))*4 + int64(len(g.EdgeWeights))*4
}

// Validate checks that the graph is a valid symmetric CSR: offsets
// non-decreasing, ids in range, no self-loops, every edge present in both
// directions with the same weight, positive weights. It costs O(edges log
// degree) and is meant for graphs built by hand.
func (g *Graph) Validate() error {
	if err := g.checkShape(); err != nil {
		return err
	}
	n := g.NumNodes()
	// Sorted lists (as FromEdges and FromCSC build them) are searched;
	// others are scanned.
	sorted := make([]bool, n)
	for v := range sorted {
		sorted[v] = slices.IsSorted(g.Adjncy[g.Xadj[v]:g.Xadj[v+1]])
	}
	for v := 0; v < n; v++ {
		for j := g.Xadj[v]; j < g.Xadj[v+1]; j++ {
			u := g.Adjncy[j]
			if u < 0 || int(u) >= n {
				return fmt.Errorf("partition: node %d has neighbour %d outside [0, %d)", v, u, n)
			}
			if int(u) == v {
				return fmt.Errorf("partition: node %d has a self-loop", v)
			}
			w := int32(1)
			if g.EdgeWeights != nil {
				w = g.EdgeWeights[j]
				if w <= 0 {
					return fmt.Errorf("partition: edge %d-%d has weight %d, want > 0", v, u, w)
				}
			}
			k, cnt := int64(-1), 0
			if lst := g.Adjncy[g.Xadj[u]:g.Xadj[u+1]]; sorted[u] {
				if i, ok := slices.BinarySearch(lst, int32(v)); ok {
					k = g.Xadj[u] + int64(i)
					for cnt = 1; i+cnt < len(lst) && lst[i+cnt] == int32(v); cnt++ {
					}
				}
			} else {
				for i, x := range lst {
					if int(x) == v {
						k = g.Xadj[u] + int64(i)
						cnt++
					}
				}
			}
			if k < 0 {
				return fmt.Errorf("partition: edge %d-%d is not symmetric", v, u)
			}
			if cnt > 1 {
				return fmt.Errorf("partition: edge %d-%d is repeated", u, v)
			}
			if g.EdgeWeights != nil && g.EdgeWeights[k] != w {
				return fmt.Errorf("partition: edge %d-%d has weights %d and %d in its two directions", v, u, w, g.EdgeWeights[k])
			}
		}
	}
	return nil
}

// FromCSC returns the undirected graph underlying g: u and v are
// neighbours if g has an edge u->v or v->u (u != v). Self-loops and
// repeated edges are dropped; edge weights of g are ignored (every edge has
// unit weight, as in METIS's edge cut). It runs on workers goroutines (0:
// all cores) and needs, besides its result, a reversed copy of g's
// indices (4 bytes per input edge) while it runs. g's lists must be sorted
// (as graph.Build and dataset.Open produce).
func FromCSC(ctx context.Context, g *graph.CSC, workers int) (*Graph, error) {
	if g == nil {
		return nil, errors.New("partition: no graph")
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	n := g.NumNodes
	workers = par.Workers(workers)
	rev := (&graph.CSC{NumNodes: n, Indptr: g.Indptr, Indices: g.Indices}).Reverse(workers)
	// Pass 1: merged, de-duplicated degree of every node.
	xadj := make([]int64, n+1)
	par.For(workers, n, func(_, lo, hi int) {
		for v := lo; v < hi; v++ {
			xadj[v+1] = int64(mergeSorted(nil, g.InNeighbors(int32(v)), rev.InNeighbors(int32(v)), int32(v)))
		}
	})
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for v := 0; v < n; v++ {
		xadj[v+1] += xadj[v]
	}
	adj := make([]int32, xadj[n])
	par.For(workers, n, func(_, lo, hi int) {
		for v := lo; v < hi; v++ {
			mergeSorted(adj[xadj[v]:xadj[v+1]], g.InNeighbors(int32(v)), rev.InNeighbors(int32(v)), int32(v))
		}
	})
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return &Graph{Xadj: xadj, Adjncy: adj}, nil
}

// mergeSorted merges sorted lists a and b into out (if non-nil), dropping
// duplicates and self (v), and returns the merged length.
func mergeSorted(out, a, b []int32, self int32) int {
	k := 0
	last := int32(-1)
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		var x int32
		if j >= len(b) || i < len(a) && a[i] <= b[j] {
			x = a[i]
			i++
		} else {
			x = b[j]
			j++
		}
		if x == last || x == self {
			continue
		}
		last = x
		if out != nil {
			out[k] = x
		}
		k++
	}
	return k
}

// FromEdges builds the undirected graph of the edge list src[i]-dst[i] on n
// nodes (self-loops and repeated edges dropped), as FromCSC does.
func FromEdges(ctx context.Context, n int, src, dst []int32, workers int) (*Graph, error) {
	g, err := graph.Build(ctx, n, src, dst, nil, graph.BuildOptions{Symmetrize: true, Dedup: true, SelfLoops: graph.RemoveSelfLoops, Workers: workers})
	if err != nil {
		return nil, err
	}
	return &Graph{Xadj: g.Indptr, Adjncy: g.Indices}, nil
}

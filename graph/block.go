package graph

import (
	"fmt"
	"math"
)

// Block is one layer's message-flow graph (MFG), compressed over
// destinations: the one block type that sampling produces and a minibatch
// carries (the layers take an nn.Block, which engine.Blocks makes from
// these, with the degrees their normalisation needs). It follows DGL's to_block convention:
// the layer's source nodes start with its destination nodes, so
// destination i is also source i. The in-edges of destination i are
// Indices[Indptr[i]:Indptr[i+1]], each the local position of its source
// node among the block's NumSrc sources.
//
// A block holds no node ids: which global node a position stands for is
// the minibatch's business (batch.MiniBatch: the sources of the first block
// are its input nodes, and every later block's sources are the previous
// block's destinations, followed by any history rows).
type Block struct {
	// NumSrc and NumDst are the numbers of source and destination nodes;
	// NumDst <= NumSrc.
	NumSrc, NumDst int
	// Indptr has NumDst+1 non-decreasing offsets into Indices, starting at 0.
	Indptr []int64
	// Indices holds, for every edge, the local position of its source, in
	// [0, NumSrc).
	Indices []int32
	// EdgeIDs optionally holds every edge's global id (graph.CSC.EdgeIDs of
	// the sampled edge when the graph has edge ids, else its CSC position);
	// nil or len(Indices) entries.
	EdgeIDs []int64
	// Weights optionally holds a weight per edge; nil or len(Indices)
	// entries.
	Weights []float32
}

// NumEdges returns the number of edges.
func (b *Block) NumEdges() int { return len(b.Indices) }

// Reset empties b, keeping its arrays' capacity for reuse.
func (b *Block) Reset() {
	*b = Block{Indptr: b.Indptr[:0], Indices: b.Indices[:0], EdgeIDs: b.EdgeIDs[:0], Weights: b.Weights[:0]}
}

// Validate checks b's shape: counts, offsets, source positions, and the
// lengths and values of the optional arrays (edge ids >= 0, weights
// finite). It reads every edge.
func (b *Block) Validate() error {
	if b.NumDst < 0 || b.NumSrc < b.NumDst {
		return fmt.Errorf("graph: block with %d destinations and %d sources (destinations are the first sources)", b.NumDst, b.NumSrc)
	}
	if b.NumSrc > MaxNodes {
		return fmt.Errorf("graph: block with %d sources, more than %d", b.NumSrc, MaxNodes)
	}
	if len(b.Indptr) != b.NumDst+1 {
		return fmt.Errorf("graph: block indptr has %d entries for %d destinations", len(b.Indptr), b.NumDst)
	}
	if b.Indptr[0] != 0 {
		return fmt.Errorf("graph: block indptr starts at %d, not 0", b.Indptr[0])
	}
	for i := 0; i < b.NumDst; i++ {
		if b.Indptr[i+1] < b.Indptr[i] {
			return fmt.Errorf("graph: block indptr decreases at destination %d (%d -> %d)", i, b.Indptr[i], b.Indptr[i+1])
		}
	}
	if b.Indptr[b.NumDst] != int64(len(b.Indices)) {
		return fmt.Errorf("graph: block indptr ends at %d for %d edges", b.Indptr[b.NumDst], len(b.Indices))
	}
	n := uint32(b.NumSrc)
	for e, u := range b.Indices {
		if uint32(u) >= n {
			return fmt.Errorf("graph: block edge %d has source position %d, not in [0, %d)", e, u, b.NumSrc)
		}
	}
	if b.EdgeIDs != nil {
		if len(b.EdgeIDs) != len(b.Indices) {
			return fmt.Errorf("graph: block has %d edge ids for %d edges", len(b.EdgeIDs), len(b.Indices))
		}
		for e, id := range b.EdgeIDs {
			if id < 0 {
				return fmt.Errorf("graph: block edge %d has id %d", e, id)
			}
		}
	}
	if b.Weights != nil {
		if len(b.Weights) != len(b.Indices) {
			return fmt.Errorf("graph: block has %d weights for %d edges", len(b.Weights), len(b.Indices))
		}
		for e, w := range b.Weights {
			if math.IsNaN(float64(w)) || math.IsInf(float64(w), 0) {
				return fmt.Errorf("graph: block edge %d has weight %v", e, w)
			}
		}
	}
	return nil
}

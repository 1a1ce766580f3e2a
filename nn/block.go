// Package nn holds graphmill's GNN layers (SAGEConv, GCNConv, GATConv, and
// APPNP's MLP and propagation steps), the models stacked from them,
// optimisers (SGD, Adam, AdamW), learning-rate schedules, the memory plan
// of a step (StepBytes, InferLayerBytes) and safetensors checkpoints.
//
// A layer maps the features of a block's source nodes to features of its
// destination nodes. A Block is one message-flow graph: its destination
// nodes are the first NumDst of its source nodes (DGL's to_block and PyG's
// "seeds first" convention), so a layer finds each destination's own
// features in the first rows of its input. Full-graph training uses one
// block whose sources and destinations are all nodes (FullGraph), reused
// by every layer; sampled and GNNAutoScale training use one block per
// layer, input layer first.
//
//	deg := ... // every node's in-degree in the full graph as float32 (GCN, APPNP; nil otherwise)
//	m, err := nn.NewModel(nn.Config{Kind: nn.SAGE, In: 1433, Hidden: 256, Out: 7, Layers: 2, Dropout: 0.5}, deg)
//	opt, err := nn.NewOptimizer(nn.OptimConfig{Name: "adam", LR: 0.01})
//	autograd.ZeroGrad(m.Params()...) // gradients accumulate until zeroed
//	tp := autograd.NewTape()
//	logits := m.Forward(tp, blocks, tp.Const(x), true, seed)
//	loss := tp.CrossEntropy(logits, labels)
//	err = tp.Backward(loss)
//	opt.Step(m.Params())
//
// Parameter names and layouts follow PyTorch Geometric's modules (weights
// are [out, in] like torch.nn.Linear), so a checkpoint written by Save
// loads into the equivalent PyG model with load_state_dict (see README).
package nn

import (
	"fmt"

	"github.com/graphmill/graphmill/graph"
	"github.com/graphmill/graphmill/tensor"
)

// Block is one message-flow graph: edges from source rows to destination
// rows, compressed over destinations. Src holds the global id of every
// source row (destinations first); CSR.Indices are positions in Src.
type Block struct {
	CSR    *tensor.CSR
	NumDst int
	Src    []int32
	// NodeDropout keys the dropout masks of this block's input rows by
	// their node ids (Src) instead of their positions, so that a node's row
	// is dropped alike in every minibatch, rank or process that computes
	// it in the same step: sampled training sets it, which is what lets a
	// distributed step reproduce the single process's exactly.
	NodeDropout bool
	// Keys, when set, are the node ids NodeDropout keys the masks by, one
	// per source, in place of Src: a packed dataset's original ids (see
	// dataset.Dataset.OrigIDs), so that it draws the masks the original
	// dataset does.
	Keys []int32
	// Remote, when set, runs the block's graph ops over rows other
	// processes own (a SAR shard; see Remote). CSR is then unused.
	Remote Remote

	deg   []float32   // the model's in-degree table (AggGCN), set by Model
	loops *tensor.CSR // CSR plus one self-loop per destination, built on demand
	gcn   *tensor.CSR // loops with GCN weights, built on demand
	// scratch, when set, is where loops and gcn are built (Model.ScratchBlocks).
	scratch *blockScratch
}

// NewBlock wraps a destination-compressed block. src holds the global ids
// of the sources, destinations first; indptr has numDst+1 offsets and
// indices hold positions in src. Edge weights (for AggWeighted) go in
// the returned block's CSR.Weights.
func NewBlock(indptr []int64, indices []int32, src []int32, numDst int) (*Block, error) {
	b := &Block{CSR: &tensor.CSR{Indptr: indptr, Indices: indices, NumSrc: len(src)}, NumDst: numDst, Src: src}
	if numDst > len(src) || len(indptr) != numDst+1 {
		return nil, fmt.Errorf("nn: block with %d destinations, %d sources and %d offsets", numDst, len(src), len(indptr))
	}
	if err := b.CSR.Validate(); err != nil {
		return nil, err
	}
	return b, nil
}

// FullGraph returns the block of a whole graph: every node is both a source
// and a destination, and Src is the identity.
func FullGraph(g *graph.CSC) *Block {
	src := make([]int32, g.NumNodes)
	for i := range src {
		src[i] = int32(i)
	}
	return &Block{CSR: &tensor.CSR{Indptr: g.Indptr, Indices: g.Indices, Weights: g.Weights, NumSrc: g.NumNodes}, NumDst: g.NumNodes, Src: src}
}

// WithSelfLoops returns the block's CSR with exactly one self-loop per
// destination (existing self-loops are dropped first), as GCN and GAT use.
// It is built once and cached.
func (b *Block) WithSelfLoops() *tensor.CSR {
	if b.loops != nil {
		return b.loops
	}
	c := b.CSR
	s := b.scratch
	if s == nil {
		s = &blockScratch{indices: make([]int32, 0, len(c.Indices)+b.NumDst)}
	}
	indptr := grow(s.indptr, b.NumDst+1)
	indptr[0] = 0
	indices := grow(s.indices, len(c.Indices)+b.NumDst)[:0]
	for d := 0; d < b.NumDst; d++ {
		indices = append(indices, int32(d))
		for e := c.Indptr[d]; e < c.Indptr[d+1]; e++ {
			if s := c.Indices[e]; s != int32(d) {
				indices = append(indices, s)
			}
		}
		indptr[d+1] = int64(len(indices))
	}
	b.loops = &tensor.CSR{Indptr: indptr, Indices: indices, NumSrc: c.NumSrc}
	if b.scratch != nil {
		s.indptr, s.indices = indptr, indices
		b.loops.TScratch = &s.tLoops
	}
	return b.loops
}

// dropKeys returns the ids NodeDropout keys its masks by: Keys, else Src.
func (b *Block) dropKeys() []int32 {
	if b.Keys != nil {
		return b.Keys
	}
	return b.Src
}

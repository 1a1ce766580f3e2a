package nn

import "github.com/graphmill/graphmill/tensor"

// blockReuse keeps the index arrays a model derives from the block of one
// registered graph (the self-looped CSR, its GCN weights, and the
// transposes cached in them) from one step to the next.
type blockReuse struct {
	indptr  []int64
	indices []int32
	src     []int32 // the last block's, which the GCN weights were computed for
	loops   *tensor.CSR
	gcn     *tensor.CSR
}

// ReuseBlocks makes m keep what its layers derive from a block over the
// graph with these indptr and indices arrays (one self-loop per node, GCN's
// edge weights, the transposes backward gathers over) and reuse it for
// every later block over the same arrays and sources, instead of building
// it again each step: for full-graph training, whose block is the whole
// graph every step. The arrays must not change afterwards. Blocks over
// other arrays are unaffected; nil arrays turn reuse off.
func (m *Model) ReuseBlocks(indptr []int64, indices []int32) {
	if len(indptr) == 0 {
		m.reuse = nil
		return
	}
	m.reuse = &blockReuse{indptr: indptr, indices: indices}
}

// sameArray reports whether a and b are the same array (not just equal).
func sameArray[T any](a, b []T) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// matches reports whether b is a block over the registered graph with the
// sources the kept arrays were derived for.
func (r *blockReuse) matches(b *Block) bool {
	return r != nil && b != nil && sameArray(r.indptr, b.CSR.Indptr) && sameArray(r.indices, b.CSR.Indices) &&
		b.NumDst == len(r.indptr)-1 && (r.src == nil || sameArray(r.src, b.Src))
}

// apply gives b the kept arrays, before a layer runs on it.
func (r *blockReuse) apply(b *Block) {
	if !r.matches(b) || r.src == nil {
		return
	}
	if b.loops == nil {
		b.loops = r.loops
	}
	if b.gcn == nil {
		b.gcn = r.gcn
	}
}

// keep takes what a layer derived from b, after it ran.
func (r *blockReuse) keep(b *Block) {
	if !r.matches(b) {
		return
	}
	if r.src == nil || r.loops == nil || r.gcn == nil {
		r.src, r.loops, r.gcn = b.Src, b.loops, b.gcn
	}
}

// blockScratch holds the arrays derived from one layer's training blocks,
// rebuilt in place every step (see ScratchBlocks).
type blockScratch struct {
	indptr       []int64
	indices      []int32
	weights      []float32
	tLoops, tGCN tensor.Transposed
}

// ScratchBlocks makes m build what its layers derive from the blocks of
// training steps (one self-loop per node, GCN's edge weights, the
// transposes) in arrays it keeps and refills every step, instead of fresh
// ones, so that steady-state steps allocate nothing for them. Only for a
// loop whose training steps run one after the other on one goroutine and
// never use a step's block once the next step's forward has begun
// (GNNAutoScale's); inference is unaffected.
func (m *Model) ScratchBlocks(on bool) {
	m.scratch = nil
	if on {
		m.scratch = []*blockScratch{}
	}
}

// scratchFor gives a training block of layer l without derived arrays yet
// the scratch of layer l (a block shared by every layer keeps layer 0's).
func (m *Model) scratchFor(l int, b *Block) {
	if m.scratch == nil || b.scratch != nil || b.loops != nil || m.reuse.matches(b) {
		return
	}
	for len(m.scratch) <= l {
		m.scratch = append(m.scratch, &blockScratch{})
	}
	b.scratch = m.scratch[l]
}

// grow returns s with length n, reusing its array when it is large enough.
func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n, n+n/4)
	}
	return s[:n]
}

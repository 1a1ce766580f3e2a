// Package batch holds MiniBatch, the one value every stage of training
// passes on (sampler → feature fetch → history pull → step, in every mode:
// full graph, neighbour-sampled, GNNAutoScale, micro-batches and layer-wise
// inference), and its wire encoding (see docs/wire.md), so that the same
// value can cross a socket to a remote trainer or a Python client.
//
// A MiniBatch follows DGL's block convention (PyG's "seeds first"):
//
//   - InputNodes (PyG's n_id) holds the global ids of the first block's
//     sources: the nodes whose features the first layer reads. Features
//     holds their rows, in the same order.
//   - Blocks holds one graph.Block per layer, input layer first. Block 0's
//     sources are the input nodes. Block l's sources (l >= 1) are block
//     l-1's destinations, followed by Halo[l-1].Nodes, whose rows come from
//     a history table (GNNAutoScale) instead of the layer below.
//   - Every block's destinations are the first NumDst of its sources, so
//     every block's destinations are a prefix of the input nodes; the last
//     block's destinations are the seeds: Seeds == InputNodes[:len(Seeds)].
//   - Labels holds the seeds' labels (-1: none), or is nil.
//   - EdgeIndex and InputLabels, when set, hold the batch in PyG's layout
//     as well: every hop's edges as (source, destination) positions among
//     the input nodes, and every input node's label.
//
// Node ids are int64 (global ids across partitions); ids within one local
// graph fit int32 and Local returns them as such for the local graph and
// feature store.
//
// Batches are recycled: a pipeline hands out a batch whose arrays it reuses
// once the consumer calls Release, so steady-state steps allocate nothing
// large. Anything that must outlive the step must be copied before Release.
package batch

import (
	"errors"
	"fmt"
	"math"
	"unsafe"

	"github.com/graphmill/graphmill/graph"
	"github.com/graphmill/graphmill/internal/hugemem"
	"github.com/graphmill/graphmill/internal/stream"
)

// DType is the element type of an array in a MiniBatch and on the wire.
// Its values are the wire's dtype codes.
type DType uint8

// The element types; the numbers are the wire's dtype codes.
const (
	Int32    DType = 1 // little-endian two's-complement 32-bit integer (numpy "<i4")
	Int64    DType = 2 // little-endian 64-bit integer ("<i8")
	Float32  DType = 3 // IEEE binary32 ("<f4")
	Float16  DType = 4 // IEEE binary16 ("<f2")
	BFloat16 DType = 5 // bfloat16: the top 16 bits of a binary32 (numpy has none: read "<u2", shift left by 16, view as "<f4")
)

// Size returns the bytes per element (0 for an unknown dtype).
func (t DType) Size() int {
	switch t {
	case Int32, Float32:
		return 4
	case Int64:
		return 8
	case Float16, BFloat16:
		return 2
	}
	return 0
}

// String returns the dtype's name ("int32", "float16", ...).
func (t DType) String() string {
	switch t {
	case Int32:
		return "int32"
	case Int64:
		return "int64"
	case Float32:
		return "float32"
	case Float16:
		return "float16"
	case BFloat16:
		return "bfloat16"
	}
	return fmt.Sprintf("DType(%d)", uint8(t))
}

// IsFloat reports whether t is one of the feature dtypes (float32, float16,
// bfloat16).
func (t DType) IsFloat() bool { return t == Float32 || t == Float16 || t == BFloat16 }

// Rows is a row-major matrix of Rows x Dim values of one float dtype:
// F32 holds them for Float32, Bits (the raw 16-bit patterns) for Float16
// and BFloat16. The zero value is "no rows".
type Rows struct {
	DType     DType
	Rows, Dim int
	F32       []float32
	Bits      []uint16
}

// Len returns the number of values the dtype's array should hold.
func (r *Rows) Len() int { return r.Rows * r.Dim }

// Empty reports whether r holds no matrix at all (Dim 0).
func (r *Rows) Empty() bool { return r.Dim == 0 }

// SetF32 makes r a float32 matrix of rows x dim, reusing F32's capacity,
// and returns its values (to be filled).
func (r *Rows) SetF32(rows, dim int) []float32 {
	n := rows * dim
	if cap(r.F32) < n {
		r.F32 = hugemem.Make[float32](n, n+n/4)
	}
	r.DType, r.Rows, r.Dim, r.F32 = Float32, rows, dim, r.F32[:n]
	r.Bits = r.Bits[:0]
	return r.F32
}

// SetHalf makes r a 16-bit matrix (Float16 or BFloat16) of rows x dim,
// reusing Bits' capacity, and returns its raw values (to be filled).
func (r *Rows) SetHalf(t DType, rows, dim int) []uint16 {
	n := rows * dim
	if cap(r.Bits) < n {
		r.Bits = hugemem.Make[uint16](n, n+n/4)
	}
	r.DType, r.Rows, r.Dim, r.Bits = t, rows, dim, r.Bits[:n]
	r.F32 = r.F32[:0]
	return r.Bits
}

func (r *Rows) validate(what string, rows int) error {
	if r.Dim == 0 && r.Rows == 0 && len(r.F32) == 0 && len(r.Bits) == 0 {
		return nil
	}
	if r.Dim <= 0 || r.Rows < 0 {
		return fmt.Errorf("batch: %s: %d rows of dimension %d", what, r.Rows, r.Dim)
	}
	if r.Rows != rows {
		return fmt.Errorf("batch: %s has %d rows for %d nodes", what, r.Rows, rows)
	}
	if hi, lo := mul64(uint64(r.Rows), uint64(r.Dim)); hi != 0 || lo > math.MaxInt64/8 {
		return fmt.Errorf("batch: %s: %d x %d values overflow", what, r.Rows, r.Dim)
	}
	switch r.DType {
	case Float32:
		if len(r.F32) != r.Len() {
			return fmt.Errorf("batch: %s: %d float32 values for %d x %d", what, len(r.F32), r.Rows, r.Dim)
		}
	case Float16, BFloat16:
		if len(r.Bits) != r.Len() {
			return fmt.Errorf("batch: %s: %d %s values for %d x %d", what, len(r.Bits), r.DType, r.Rows, r.Dim)
		}
	default:
		return fmt.Errorf("batch: %s has dtype %s; features are float32, float16 or bfloat16", what, r.DType)
	}
	return nil
}

// Halo holds the history sources of one layer l >= 1 (GNNAutoScale): the
// global ids of the sources of block l beyond block l-1's destinations,
// and, once pulled, their rows from layer l-1's history table.
type Halo struct {
	Nodes []int64
	Rows  Rows
}

// MiniBatch is one minibatch as every stage sees it (see the package
// documentation for the conventions that tie its fields together).
type MiniBatch struct {
	// Sender, Epoch and Seq identify the batch in a stream: the producer
	// (a sampler rank or service), the epoch and the batch's position in
	// the epoch.
	Sender uint32
	Epoch  uint32
	Seq    uint64

	// Seeds holds the global ids of the seeds, the last block's
	// destinations; it is always InputNodes[:len(Seeds)].
	Seeds []int64
	// InputNodes holds the global ids of the first block's sources.
	InputNodes []int64
	// Blocks holds one block per layer, input layer first.
	Blocks []graph.Block
	// Features holds the input nodes' rows (empty before the fetch stage).
	Features Rows
	// Labels holds the seeds' labels (-1 for unlabelled), or is nil.
	Labels []int32
	// Halo is nil, or holds len(Blocks)-1 entries: Halo[l-1] for block l.
	Halo []Halo
	// EdgeIndex is nil, or the blocks' edges in PyG's edge_index layout
	// (SetEdgeIndex): 2·E positions among the input nodes, the E sources
	// then the E destinations, hop by hop from the seeds (block L-1's edges
	// first). A client that trains on PyG's layout reads it as is.
	EdgeIndex []int64
	// InputLabels is nil, or every input node's label (-1 for unlabelled),
	// as int64 (PyG's y; SetInputLabels).
	InputLabels []int64

	eiStore, ilStore []int64 // EdgeIndex's and InputLabels' storage, kept over Reset

	local    []int32 // InputNodes as int32 (see Local)
	localOK  bool
	borrowed bool // the arrays belong to someone else (an aliased frame, a graph): never written, never reused

	release func(*MiniBatch)
}

// NumLayers returns the number of blocks.
func (mb *MiniBatch) NumLayers() int { return len(mb.Blocks) }

// NumEdges returns the number of edges over all blocks.
func (mb *MiniBatch) NumEdges() int {
	n := 0
	for i := range mb.Blocks {
		n += len(mb.Blocks[i].Indices)
	}
	return n
}

// HaloLen returns the number of history sources of block l (0 for l = 0
// or without Halo).
func (mb *MiniBatch) HaloLen(l int) int {
	if l == 0 || mb.Halo == nil {
		return 0
	}
	return len(mb.Halo[l-1].Nodes)
}

// Reset empties mb for refilling, keeping its arrays' capacity (unless
// they are borrowed: see SetBorrowed). The stream metadata (Sender, Epoch,
// Seq) and the release hook are kept.
func (mb *MiniBatch) Reset() {
	if mb.borrowed {
		*mb = MiniBatch{Sender: mb.Sender, Epoch: mb.Epoch, Seq: mb.Seq, release: mb.release}
		return
	}
	mb.Seeds = nil
	mb.InputNodes = mb.InputNodes[:0]
	for i := range mb.Blocks {
		// A block sharing an earlier block's arrays (one block reused by
		// every layer) gives them up, so that no two blocks are ever
		// refilled into the same storage.
		shared := false
		for k := 0; k < i && !shared; k++ {
			shared = sameArrays(&mb.Blocks[i], &mb.Blocks[k])
		}
		if shared {
			mb.Blocks[i] = graph.Block{}
		} else {
			mb.Blocks[i].Reset()
		}
	}
	mb.Blocks = mb.Blocks[:0]
	mb.Features.DType, mb.Features.Rows, mb.Features.Dim = 0, 0, 0
	mb.Features.F32, mb.Features.Bits = mb.Features.F32[:0], mb.Features.Bits[:0]
	mb.Labels = mb.Labels[:0]
	if mb.Labels != nil && cap(mb.Labels) == 0 {
		mb.Labels = nil
	}
	for i := range mb.Halo {
		h := &mb.Halo[i]
		h.Nodes = h.Nodes[:0]
		if overlaps(h.Nodes, mb.InputNodes) || i > 0 && overlaps(h.Nodes, mb.Halo[i-1].Nodes) {
			h.Nodes = nil // a view of the input nodes (GAS), not storage of its own
		}
		h.Rows.DType, h.Rows.Rows, h.Rows.Dim = 0, 0, 0
		h.Rows.F32, h.Rows.Bits = h.Rows.F32[:0], h.Rows.Bits[:0]
	}
	mb.Halo = mb.Halo[:0]
	mb.EdgeIndex, mb.InputLabels = nil, nil
	mb.localOK = false
}

// SetBlocks sets the number of blocks to n, reusing the arrays of the
// blocks mb held before (each block is Reset), and returns them.
func (mb *MiniBatch) SetBlocks(n int) []graph.Block {
	if cap(mb.Blocks) < n {
		nb := make([]graph.Block, n)
		copy(nb, mb.Blocks[:cap(mb.Blocks)])
		mb.Blocks = nb
	}
	mb.Blocks = mb.Blocks[:n]
	for i := range mb.Blocks {
		mb.Blocks[i].Reset()
	}
	return mb.Blocks
}

// SetEdgeIndex fills EdgeIndex from the blocks, which must be frontier
// blocks (sample.Config.Frontier, PyG's draws): block L-1-h has in-edges
// only for the destinations first reached at hop h, those past block
// L-h's destinations, so that the blocks' edges, hop by hop, are PyG's
// edge_index with nothing repeated. It fails on blocks that drew again for
// earlier destinations, and on history sources.
func (mb *MiniBatch) SetEdgeIndex() error {
	if mb.Halo != nil {
		return errors.New("batch: an edge index of a batch with history sources")
	}
	L, e := len(mb.Blocks), mb.NumEdges()
	ei := mb.eiStore
	if cap(ei) < 2*e || mb.borrowed {
		ei = hugemem.Make[int64](2*e, 2*e+2*e/4)
	}
	ei = ei[:2*e]
	src, dst := ei[:e], ei[e:]
	for h := 0; h < L; h++ {
		b := &mb.Blocks[L-1-h]
		first := 0
		if h > 0 {
			first = mb.Blocks[L-h].NumDst
		}
		if len(b.Indptr) != b.NumDst+1 || first > b.NumDst {
			return fmt.Errorf("batch: block %d has %d offsets for %d destinations, %d of them reached before", L-1-h, len(b.Indptr), b.NumDst, first)
		}
		if b.Indptr[first] != 0 {
			return fmt.Errorf("batch: block %d has in-edges for destinations reached at an earlier hop: not frontier draws (sample.Config.Frontier)", L-1-h)
		}
		n := len(b.Indices)
		widen(src[:n], b.Indices)
		for d := first; d < b.NumDst; d++ {
			lo, hi := b.Indptr[d], b.Indptr[d+1]
			if lo > hi || hi > int64(n) {
				return fmt.Errorf("batch: block %d: offsets %d..%d of destination %d outside its %d edges", L-1-h, lo, hi, d, n)
			}
			row := dst[lo:hi]
			for k := range row {
				row[k] = int64(d)
			}
		}
		src, dst = src[n:], dst[n:]
	}
	mb.eiStore, mb.EdgeIndex = ei, ei
	return nil
}

// SetInputLabels sets InputLabels to labels[v] for every input node v
// (its local id, Local): labels is a local graph's label array.
func (mb *MiniBatch) SetInputLabels(labels []int32) error {
	ids, err := mb.Local()
	if err != nil {
		return err
	}
	y := mb.ilStore
	if cap(y) < len(ids) || mb.borrowed {
		y = make([]int64, len(ids), len(ids)+len(ids)/4)
	}
	y = y[:len(ids)]
	for i, v := range ids {
		if uint32(v) >= uint32(len(labels)) {
			return fmt.Errorf("batch: input node %d (position %d) has no label among %d", v, i, len(labels))
		}
		y[i] = int64(labels[v])
	}
	mb.ilStore, mb.InputLabels = y, y
	return nil
}

// LocalBuffer returns mb's int32 id array emptied (capacity kept), for a
// producer to append local input ids to and pass to SetInputs.
func (mb *MiniBatch) LocalBuffer() []int32 {
	mb.localOK = false
	if mb.borrowed {
		return nil
	}
	return mb.local[:0]
}

// SetInputs sets InputNodes from local int32 ids (widened into
// InputNodes' storage), the first numSeeds of which are the seeds. mb keeps
// local itself as what Local returns: the caller must not modify it
// afterwards (a producer builds it in LocalBuffer's array).
func (mb *MiniBatch) SetInputs(local []int32, numSeeds int) {
	if cap(mb.InputNodes) < len(local) || mb.borrowed {
		mb.InputNodes = make([]int64, len(local), len(local)+len(local)/4)
	}
	mb.InputNodes = mb.InputNodes[:len(local)]
	if len(local) >= streamMin && stream.Enabled() {
		stream.Widen(mb.InputNodes, local)
		stream.Fence()
	} else {
		widen(mb.InputNodes, local)
	}
	mb.local = local
	mb.localOK = true
	mb.Seeds = mb.InputNodes[:numSeeds]
}

// SetInputs64 sets InputNodes to a copy of ids (reusing capacity), the first
// numSeeds of which are the seeds.
func (mb *MiniBatch) SetInputs64(ids []int64, numSeeds int) {
	mb.InputNodes = append(mb.InputNodes[:0], ids...)
	mb.Seeds = mb.InputNodes[:numSeeds]
	mb.localOK = false
}

// Local returns the input nodes as int32 ids of a local graph (the first
// len(Seeds) are the seeds). The slice is cached until the next Reset,
// SetInputs or decode; do not modify it. It fails when an id is outside
// [0, 2^31-1).
func (mb *MiniBatch) Local() ([]int32, error) {
	if mb.localOK && len(mb.local) == len(mb.InputNodes) {
		return mb.local, nil
	}
	mb.local = mb.local[:0]
	for i, v := range mb.InputNodes {
		if v < 0 || v >= graph.MaxNodes {
			return nil, fmt.Errorf("batch: input node %d (position %d) is not a local int32 node id", v, i)
		}
		mb.local = append(mb.local, int32(v))
	}
	mb.localOK = true
	return mb.local, nil
}

// Borrow makes mb share src's arrays (no copy) and marks them borrowed
// (SetBorrowed): a pipeline stage handing out a batch built once, such as
// the whole graph of full-graph training. mb's stream metadata and release
// hook are kept.
func (mb *MiniBatch) Borrow(src *MiniBatch) {
	sender, epoch, seq, rel := mb.Sender, mb.Epoch, mb.Seq, mb.release
	*mb = *src
	mb.Sender, mb.Epoch, mb.Seq, mb.release = sender, epoch, seq, rel
	mb.borrowed = true
}

// SetBorrowed marks mb's current arrays as someone else's (a graph's
// arrays, a cached full-graph batch, a decoded frame): Reset then drops them
// instead of keeping them for reuse, so that no later fill writes into
// them.
func (mb *MiniBatch) SetBorrowed() { mb.borrowed = true }

// SetRelease sets the function Release calls once (a pipeline recycling
// mb sets it every time it hands mb out).
func (mb *MiniBatch) SetRelease(f func(*MiniBatch)) { mb.release = f }

// Release hands mb back to whoever produced it for reuse; mb must not be
// used afterwards, and releasing it twice is a bug (the producer may be
// refilling it already). It calls the release hook and clears it; without
// a hook it does nothing.
func (mb *MiniBatch) Release() {
	if f := mb.release; f != nil {
		mb.release = nil
		f(mb)
	}
}

// Validate checks every invariant of the package documentation: counts,
// the chain of blocks, every block's offsets and source positions, seeds
// as the input nodes' prefix, ids >= 0 (and < numNodes when numNodes > 0),
// the lengths of labels, features and halos. It reads every array once.
func (mb *MiniBatch) Validate(numNodes int64) error {
	if len(mb.Blocks) == 0 {
		return errors.New("batch: no blocks")
	}
	if len(mb.Blocks) > maxLayers {
		return fmt.Errorf("batch: %d blocks, more than %d", len(mb.Blocks), maxLayers)
	}
	n := len(mb.InputNodes)
	if len(mb.Seeds) > n {
		return fmt.Errorf("batch: %d seeds but %d input nodes", len(mb.Seeds), n)
	}
	if len(mb.Seeds) > 0 && &mb.Seeds[0] != &mb.InputNodes[0] {
		for i, v := range mb.Seeds {
			if mb.InputNodes[i] != v {
				return fmt.Errorf("batch: seed %d (position %d) is not input node %d: seeds must be the first input nodes", v, i, mb.InputNodes[i])
			}
		}
	}
	if err := checkIDs("input node", mb.InputNodes, numNodes); err != nil {
		return err
	}
	if mb.Halo != nil && len(mb.Halo) != len(mb.Blocks)-1 {
		return fmt.Errorf("batch: %d halos for %d blocks (want one per block after the first)", len(mb.Halo), len(mb.Blocks))
	}
	for l := range mb.Blocks {
		b := &mb.Blocks[l]
		want := n
		if l > 0 {
			want = mb.Blocks[l-1].NumDst + mb.HaloLen(l)
		}
		if b.NumSrc != want {
			if l == 0 {
				return fmt.Errorf("batch: block 0 has %d sources for %d input nodes", b.NumSrc, n)
			}
			return fmt.Errorf("batch: block %d has %d sources; block %d has %d destinations and %d history sources", l, b.NumSrc, l-1, mb.Blocks[l-1].NumDst, mb.HaloLen(l))
		}
		if err := b.Validate(); err != nil {
			return fmt.Errorf("batch: block %d: %w", l, err)
		}
		if l > 0 && mb.Halo != nil {
			h := &mb.Halo[l-1]
			if err := checkIDs(fmt.Sprintf("block %d history node", l), h.Nodes, numNodes); err != nil {
				return err
			}
			if err := h.Rows.validate(fmt.Sprintf("block %d history rows", l), len(h.Nodes)); err != nil {
				return err
			}
		}
	}
	if last := mb.Blocks[len(mb.Blocks)-1].NumDst; last != len(mb.Seeds) {
		return fmt.Errorf("batch: the last block has %d destinations for %d seeds", last, len(mb.Seeds))
	}
	if mb.Labels != nil && len(mb.Labels) != len(mb.Seeds) {
		return fmt.Errorf("batch: %d labels for %d seeds", len(mb.Labels), len(mb.Seeds))
	}
	for i, y := range mb.Labels {
		if y < -1 {
			return fmt.Errorf("batch: seed %d (position %d) has label %d; labels are >= 0, or -1 for none", mb.Seeds[i], i, y)
		}
	}
	if mb.EdgeIndex != nil {
		if e := mb.NumEdges(); len(mb.EdgeIndex) != 2*e {
			return fmt.Errorf("batch: edge index of %d entries for %d edges (want 2 x %d)", len(mb.EdgeIndex), e, e)
		}
		for i, v := range mb.EdgeIndex {
			if uint64(v) >= uint64(n) {
				return fmt.Errorf("batch: edge index entry %d (position %d) is not an input node position in [0, %d)", v, i, n)
			}
		}
	}
	if mb.InputLabels != nil && len(mb.InputLabels) != n {
		return fmt.Errorf("batch: %d input labels for %d input nodes", len(mb.InputLabels), n)
	}
	for i, y := range mb.InputLabels {
		if y < -1 {
			return fmt.Errorf("batch: input node %d (position %d) has label %d; labels are >= 0, or -1 for none", mb.InputNodes[i], i, y)
		}
	}
	return mb.Features.validate("features", n)
}

func checkIDs(what string, ids []int64, numNodes int64) error {
	for i, v := range ids {
		if v < 0 || numNodes > 0 && v >= numNodes {
			if numNodes > 0 {
				return fmt.Errorf("batch: %s %d (position %d) is not in [0, %d)", what, v, i, numNodes)
			}
			return fmt.Errorf("batch: %s %d (position %d) is negative", what, v, i)
		}
	}
	return nil
}

// maxLayers bounds the number of blocks (the wire's uint16 count).
const maxLayers = 1 << 12

// sameArrays reports whether two blocks share their index arrays.
func sameArrays(a, b *graph.Block) bool {
	return cap(a.Indptr) > 0 && unsafe.SliceData(a.Indptr) == unsafe.SliceData(b.Indptr) ||
		cap(a.Indices) > 0 && unsafe.SliceData(a.Indices) == unsafe.SliceData(b.Indices)
}

// overlaps reports whether a's storage lies within b's.
func overlaps[T any](a, b []T) bool {
	if cap(a) == 0 || cap(b) == 0 {
		return false
	}
	var z T
	sz := unsafe.Sizeof(z)
	pa := uintptr(unsafe.Pointer(unsafe.SliceData(a)))
	pb := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return pa >= pb && pa < pb+uintptr(cap(b))*sz
}

// streamMin is the fewest input nodes SetInputs widens with streaming
// stores (stream.Widen, where the CPU has them: elsewhere widen's unrolled
// loop is the faster; 512 KiB of int64s): a minibatch's input nodes are
// read when its features are gathered, usually minibatches later, and a
// large array of them would only push out of the cache the lines that
// the sampler reads again. Measured (Xeon with AMX, stream's
// BenchmarkWiden, 512k ids into arrays far larger than the cache): 0.34
// ns an id against 0.90 for widen; in the sampler's minibatches of
// [15,10,5] on the 10M-node synthetic graph (645k input nodes,
// alternated in one process) the minibatch took 0.967 and 0.974 of the
// time.
const streamMin = 1 << 16

// widen sets d[i] = s[i] (len(d) == len(s)), eight at a time: the copy is
// bound by memory bandwidth, and the unrolled loop gets close to it (about
// 0.7 ns an id against 1.1 for the plain loop on these machines).
func widen(d []int64, s []int32) {
	for len(s) >= 8 && len(d) >= 8 {
		d[0], d[1], d[2], d[3] = int64(s[0]), int64(s[1]), int64(s[2]), int64(s[3])
		d[4], d[5], d[6], d[7] = int64(s[4]), int64(s[5]), int64(s[6]), int64(s[7])
		s, d = s[8:], d[8:]
	}
	for i, v := range s {
		d[i] = int64(v)
	}
}

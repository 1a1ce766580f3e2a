package train

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/graphmill/graphmill/batch"
	"github.com/graphmill/graphmill/engine"
	"github.com/graphmill/graphmill/feature"
	"github.com/graphmill/graphmill/graph"
	"github.com/graphmill/graphmill/internal/units"
	"github.com/graphmill/graphmill/nn"
	"github.com/graphmill/graphmill/pipeline"
	"github.com/graphmill/graphmill/tensor"
	"github.com/graphmill/graphmill/tensor/autograd"
)

// Infer computes the model's output for every node layer by layer with
// full neighbourhoods, as DGL's layer-wise inference: layer l is computed
// for all nodes, batchSize destination nodes at a time, from layer l-1's
// output of their in-neighbours. Memory is two N × width matrices plus one
// batch, whatever the depth; on a graph of at most batchSize nodes it is a
// plain full-graph forward pass. With maxBytes > 0 a batch whose step would
// allocate more than maxBytes (its activations, gathered input rows and
// index arrays; the N × width results are not counted) is halved until it
// fits.
func Infer(ctx context.Context, m *nn.Model, g *graph.CSC, x feature.Source, batchSize int, maxBytes int64) (tensor.Matrix, error) {
	switch {
	case m == nil || g == nil || x == nil:
		return tensor.Matrix{}, errors.New("infer: no model, graph or features")
	case batchSize < 0 || maxBytes < 0:
		return tensor.Matrix{}, fmt.Errorf("infer: batch size %d and memory bound %d: want >= 0 (0: none)", batchSize, maxBytes)
	}
	if x.NumRows() != g.NumNodes {
		return tensor.Matrix{}, fmt.Errorf("infer: %d feature rows for %d nodes", x.NumRows(), g.NumNodes)
	}
	io := &matrixIO{src: x, n: g.NumNodes}
	if err := inferLayers(ctx, m, g, batchSize, maxBytes, len(m.Layers), io); err != nil {
		return tensor.Matrix{}, err
	}
	return io.h, nil
}

// layerIO is where layer-wise inference reads the input rows of a layer and
// puts its output rows.
type layerIO interface {
	// input returns layer l's input rows of nodes ids (all nodes in order
	// when full).
	input(ctx context.Context, l int, ids []int32, full bool) (tensor.Matrix, error)
	// inputInto copies layer l's input rows of nodes ids into out.
	inputInto(ctx context.Context, l int, ids []int32, out []float32) error
	// h0 returns layer 0's output rows of nodes ids (APPNP).
	h0(ids []int32) (tensor.Matrix, error)
	// output takes layer l's output rows y of nodes ids.
	output(l int, ids []int32, y tensor.Matrix) error
}

// matrixIO reads layer 0's input from a feature source and keeps every
// later layer's output for all nodes in memory.
type matrixIO struct {
	src            feature.Source
	n              int
	h, next, first tensor.Matrix // input of the current layer (l > 0), its output, layer 0's output
}

func (o *matrixIO) input(ctx context.Context, l int, ids []int32, full bool) (tensor.Matrix, error) {
	switch {
	case l == 0 && full:
		return denseRows(ctx, o.src)
	case l == 0:
		return gatherSource(ctx, o.src, ids, nil)
	case full:
		return o.h, nil
	}
	return gatherRows(o.h, ids), nil
}

func (o *matrixIO) inputInto(ctx context.Context, l int, ids []int32, out []float32) error {
	if l == 0 {
		return o.src.Gather(ctx, ids, out)
	}
	w := o.h.Cols
	for i, v := range ids {
		copy(out[i*w:(i+1)*w], o.h.Row(int(v)))
	}
	return nil
}

func (o *matrixIO) h0(ids []int32) (tensor.Matrix, error) {
	return o.first.RowSlice(int(ids[0]), int(ids[0])+len(ids)), nil // ids are a run of nodes
}

func (o *matrixIO) output(l int, ids []int32, y tensor.Matrix) error {
	if o.next.Data == nil {
		o.next = tensor.New(o.n, y.Cols)
	}
	copy(o.next.Data[int(ids[0])*y.Cols:], y.Data)
	if int(ids[len(ids)-1]) == o.n-1 { // the layer is complete
		if l == 0 {
			o.first = o.next
		}
		o.h, o.next = o.next, tensor.Matrix{}
	}
	return nil
}

// inferLayers runs the first layers layers of m for every node, in runs of
// at most batchSize destinations (halved while a run exceeds maxBytes),
// reading and writing rows through io. The runs of a layer go through a
// pipeline: the next run's neighbourhood is built and its input rows
// gathered while the current one computes (one run at a time under a
// memory bound, which counts a run's gathered rows).
func inferLayers(ctx context.Context, m *nn.Model, g *graph.CSC, batchSize int, maxBytes int64, layers int, io layerIO) error {
	n := g.NumNodes
	if err := m.CheckDegrees(n); err != nil {
		return fmt.Errorf("infer: %w", err)
	}
	if batchSize <= 0 || batchSize >= n {
		batchSize = n
	}
	var full *nn.Block // the whole graph, when a batch covers it
	if batchSize == n {
		full = nn.FullGraph(g)
	}
	run := &inferRuns{m: m, g: g, io: io, batchSize: batchSize, maxBytes: maxBytes, pos: newPos(n)}
	buffers := 3
	if maxBytes > 0 {
		buffers = 1
	}
	p, err := pipeline.New(pipeline.Config{Buffers: buffers, Prefetch: 1, Stages: []pipeline.Stage{
		{Name: "build", Workers: 1, Run: run.build},
		{Name: "gather", Run: run.gather},
	}})
	if err != nil {
		return err
	}
	for l := 0; l < layers; l++ {
		run.layer(l)
		if full != nil && (maxBytes <= 0 || run.bytes(full, false) <= maxBytes) {
			// One run covers the graph: a plain full-graph layer.
			x, err := io.input(ctx, l, full.Src, true)
			if err != nil {
				return err
			}
			if err := run.compute(l, full, full.Src, x); err != nil {
				return err
			}
			continue
		}
		it := p.Epoch(ctx, l, math.MaxInt)
		for it.Next() {
			mb := it.Batch()
			blocks, err := engine.Blocks(mb)
			if err == nil {
				ids, _ := mb.Local()
				err = run.compute(l, blocks[0], ids[:blocks[0].NumDst], tensor.Matrix{Rows: mb.Features.Rows, Cols: mb.Features.Dim, Data: mb.Features.F32})
			}
			mb.Release()
			if err != nil {
				it.Close()
				return err
			}
		}
		it.Close()
		if err := it.Err(); err != nil {
			return err
		}
	}
	return nil
}

// inferRuns cuts a layer of layer-wise inference into runs of destinations
// (the pipeline's build stage, in order), gathers their input rows (its
// gather stage) and computes them (the consumer).
type inferRuns struct {
	m         *nn.Model
	g         *graph.CSC
	io        layerIO
	batchSize int
	maxBytes  int64
	pos       []int32 // node -> position scratch of build (all -1)

	// The current layer; lo and size are the build stage's cursor.
	l, in    int
	lo, size int
	buf      []int32
}

// layer starts layer l.
func (r *inferRuns) layer(l int) {
	r.l, r.lo, r.size = l, 0, r.batchSize
	r.in = r.m.Config.In
	if l > 0 {
		r.in = r.m.Layers[l-1].OutDim()
	}
}

// bytes is what computing the current layer on block b allocates; copies
// counts the block's own arrays and gathered input (not the full graph's).
func (r *inferRuns) bytes(b *nn.Block, copies bool) int64 {
	sh := nn.ShapeOf(b)
	c := r.m.InferLayerBytes(r.l, sh) + engine.IndexBytes(r.m, sh, false, copies)
	if copies {
		c += 4 * int64(r.in) * int64(sh.Src)
	}
	return c
}

// build makes the next run's batch: a run of node ids with all their
// in-neighbours, halved while it exceeds the bound, then grown back
// towards batchSize.
func (r *inferRuns) build(_ context.Context, _ int, mb *batch.MiniBatch) error {
	n := r.g.NumNodes
	if r.lo >= n {
		return pipeline.Done
	}
	lo := r.lo
	hi := min(n, lo+r.size)
	for {
		r.buf = r.buf[:0]
		for v := lo; v < hi; v++ {
			r.buf = append(r.buf, int32(v))
		}
		neighbourhood(r.g, r.buf, r.pos, mb, 1)
		if r.maxBytes <= 0 {
			break
		}
		blocks, err := engine.Blocks(mb)
		if err != nil {
			return err
		}
		need := r.bytes(blocks[0], true)
		if need <= r.maxBytes {
			break
		}
		if hi-lo == 1 {
			return r.tooSmall()
		}
		hi = lo + (hi-lo)/2
	}
	r.size = min(r.batchSize, 2*(hi-lo))
	r.lo = hi
	return nil
}

// tooSmall is the error of a bound that one node's run exceeds. It names
// the node of most in-neighbours, whose run needs the most, and what that
// needs at the most demanding layer: the bound that runs (naming the first
// node over the bound sent the user raising it one node at a time).
func (r *inferRuns) tooSmall() error {
	g, v := r.g, 0
	for u := 1; u < g.NumNodes; u++ {
		if g.Indptr[u+1]-g.Indptr[u] > g.Indptr[v+1]-g.Indptr[v] {
			v = u
		}
	}
	mb := &batch.MiniBatch{}
	neighbourhood(g, []int32{int32(v)}, r.pos, mb, 1)
	blocks, err := engine.Blocks(mb)
	if err != nil {
		return err
	}
	l, lo, size := r.l, r.lo, r.size
	need := int64(0)
	for k := range r.m.Layers {
		r.layer(k)
		need = max(need, r.bytes(blocks[0], true))
	}
	r.layer(l)
	r.lo, r.size = lo, size
	return fmt.Errorf("layer-wise inference needs %s for one node (node %d, whose %d in-neighbours are the most), more than the memory bound of %s: the smallest --max-memory that runs is %dKiB",
		units.Bytes(need), v, g.Indptr[v+1]-g.Indptr[v], units.Bytes(r.maxBytes), (need+1023)>>10)
}

// gather reads the run's input rows (layer l-1's output of its sources).
func (r *inferRuns) gather(ctx context.Context, _ int, mb *batch.MiniBatch) error {
	ids, err := mb.Local()
	if err != nil {
		return err
	}
	return r.io.inputInto(ctx, r.l, ids, mb.Features.SetF32(len(ids), r.in))
}

// compute runs layer l on block b for its destinations dst (a run of
// nodes) from their sources' rows x, and hands the output to io.
func (r *inferRuns) compute(l int, b *nn.Block, dst []int32, x tensor.Matrix) error {
	tp := autograd.NewInferenceTape()
	var h0dst *autograd.Var
	if r.m.NeedsH0(l) {
		h, err := r.io.h0(dst)
		if err != nil {
			return err
		}
		h0dst = tp.Const(h)
	}
	y := r.m.ForwardLayerH0(tp, l, b, tp.Const(x), h0dst, false, 0)
	return r.io.output(l, dst, y.Value)
}

// newPos returns a node -> local position scratch map, all -1.
func newPos(n int) []int32 {
	pos := make([]int32, n)
	for i := range pos {
		pos[i] = -1
	}
	return pos
}

// neighbourhood fills mb (reusing its arrays) with the batch whose seeds
// are dst (distinct nodes) with all their in-neighbours: input nodes are
// dst followed by the other in-neighbours (the halo) in first-seen order,
// and one block, repeated for layers layers (its arrays shared), holds
// every in-edge of dst (with its weight when g has weights). pos must be
// all -1 on entry and is restored on exit.
func neighbourhood(g *graph.CSC, dst []int32, pos []int32, mb *batch.MiniBatch, layers int) {
	mb.Reset()
	src := mb.LocalBuffer()
	for _, v := range dst {
		pos[v] = int32(len(src))
		src = append(src, v)
	}
	b := &mb.SetBlocks(layers)[0]
	indptr := append(b.Indptr[:0], 0)
	for i, v := range dst {
		indptr = append(indptr, indptr[i]+g.Indptr[v+1]-g.Indptr[v])
	}
	indices := b.Indices[:0]
	weights := b.Weights[:0]
	for _, v := range dst {
		if g.Weights != nil {
			weights = append(weights, g.Weights[g.Indptr[v]:g.Indptr[v+1]]...)
		}
		for p := g.Indptr[v]; p < g.Indptr[v+1]; p++ {
			u := g.Indices[p]
			if pos[u] < 0 {
				pos[u] = int32(len(src))
				src = append(src, u)
			}
			indices = append(indices, pos[u])
		}
	}
	for _, u := range src {
		pos[u] = -1
	}
	if g.Weights == nil {
		weights = nil
	}
	*b = graph.Block{NumSrc: len(src), NumDst: len(dst), Indptr: indptr, Indices: indices, Weights: weights}
	for l := 1; l < layers; l++ {
		mb.Blocks[l] = *b
	}
	mb.SetInputs(src, len(dst))
}

// gatherRows copies the rows ids of x into a new matrix.
func gatherRows(x tensor.Matrix, ids []int32) tensor.Matrix {
	out := tensor.New(len(ids), x.Cols)
	for i, v := range ids {
		copy(out.Data[i*x.Cols:(i+1)*x.Cols], x.Data[int(v)*x.Cols:(int(v)+1)*x.Cols])
	}
	return out
}

// accuracy returns the fraction of nodes in ids whose argmax of logits
// equals their label (nodes with label -1 are skipped).
func accuracy(logits tensor.Matrix, labels []int32, ids []int32) float64 {
	correct, total := 0, 0
	for _, v := range ids {
		y := labels[v]
		if y < 0 {
			continue
		}
		if argmax(logits.Row(int(v))) == y {
			correct++
		}
		total++
	}
	if total == 0 {
		return 0
	}
	return float64(correct) / float64(total)
}

// argmax returns the index of the largest value of row (the first on ties).
func argmax(row []float32) int32 {
	best := 0
	for j := range row {
		if row[j] > row[best] {
			best = j
		}
	}
	return int32(best)
}

// nllLoss returns the mean negative log-likelihood of the labels of ids
// under softmax(logits) (unlabelled nodes skipped; 0 if none).
func nllLoss(logits tensor.Matrix, labels []int32, ids []int32) float64 {
	var sum float64
	n := 0
	for _, v := range ids {
		y := labels[v]
		if y < 0 {
			continue
		}
		sum += engine.NLL(logits.Row(int(v)), y)
		n++
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}

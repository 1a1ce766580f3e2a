package train

import (
	"context"
	"fmt"
	"math"

	"github.com/graphmill/graphmill/batch"
	"github.com/graphmill/graphmill/engine"
	"github.com/graphmill/graphmill/feature"
	"github.com/graphmill/graphmill/graph"
	"github.com/graphmill/graphmill/internal/units"
	"github.com/graphmill/graphmill/nn"
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
// reading and writing rows through io.
func inferLayers(ctx context.Context, m *nn.Model, g *graph.CSC, batchSize int, maxBytes int64, layers int, io layerIO) error {
	n := g.NumNodes
	if batchSize <= 0 || batchSize >= n {
		batchSize = n
	}
	var full *nn.Block // the whole graph, when a batch covers it
	if batchSize == n {
		full = nn.FullGraph(g)
	}
	pos := newPos(n)
	var buf []int32 // the destinations of a batch: a run of node ids
	mb := &batch.MiniBatch{}
	for l := 0; l < layers; l++ {
		in := m.Config.In
		if l > 0 {
			in = m.Layers[l-1].OutDim()
		}
		// bytes is what computing layer l on block b allocates; copies
		// counts the block's own arrays and gathered input (not the full
		// graph's).
		bytes := func(b *nn.Block, copies bool) int64 {
			sh := nn.ShapeOf(b)
			c := m.InferLayerBytes(l, sh) + engine.IndexBytes(m, sh, false, copies)
			if copies {
				c += 4 * int64(in) * int64(sh.Src)
			}
			return c
		}
		size := batchSize
		for lo := 0; lo < n; {
			if err := ctx.Err(); err != nil {
				return err
			}
			hi := min(n, lo+size)
			var b *nn.Block
			var ids []int32
			whole := hi-lo == n
			if whole && (maxBytes <= 0 || bytes(full, false) <= maxBytes) {
				b, ids = full, full.Src
			} else {
				whole = false
				for {
					buf = buf[:0]
					for v := lo; v < hi; v++ {
						buf = append(buf, int32(v))
					}
					ids = buf
					// The run's batch: its nodes with all their
					// in-neighbours, one block.
					neighbourhood(g, ids, pos, mb, 1)
					blocks, err := engine.Blocks(mb)
					if err != nil {
						return err
					}
					b = blocks[0]
					if maxBytes <= 0 {
						break
					}
					need := bytes(b, true)
					if need <= maxBytes {
						break
					}
					if hi-lo == 1 {
						return fmt.Errorf("layer-wise inference of node %d at layer %d needs %s, more than the memory bound of %s: raise --max-memory", lo, l, units.Bytes(need), units.Bytes(maxBytes))
					}
					hi = lo + (hi-lo)/2
				}
			}
			x, err := io.input(ctx, l, b.Src, whole)
			if err != nil {
				return err
			}
			tp := autograd.NewInferenceTape()
			var h0dst *autograd.Var
			if m.NeedsH0(l) {
				h, err := io.h0(ids)
				if err != nil {
					return err
				}
				h0dst = tp.Const(h)
			}
			y := m.ForwardLayerH0(tp, l, b, tp.Const(x), h0dst, false, 0)
			if err := io.output(l, ids, y.Value); err != nil {
				return err
			}
			// Grow back towards batchSize after a halving.
			size = min(batchSize, 2*(hi-lo))
			lo = hi
		}
	}
	return nil
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
// every in-edge of dst. pos must be all -1 on entry and is restored on
// exit.
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
	for _, v := range dst {
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
	*b = graph.Block{NumSrc: len(src), NumDst: len(dst), Indptr: indptr, Indices: indices}
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
		row := logits.Row(int(v))
		m := row[0]
		for _, x := range row {
			m = max(m, x)
		}
		var z float64
		for _, x := range row {
			z += math.Exp(float64(x - m))
		}
		sum += math.Log(z) - float64(row[y]-m)
		n++
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}

package train

import (
	"context"
	"math"

	"github.com/graphmill/graphmill/graph"
	"github.com/graphmill/graphmill/nn"
	"github.com/graphmill/graphmill/tensor"
	"github.com/graphmill/graphmill/tensor/autograd"
)

// Infer computes the model's output for every node layer by layer with
// full neighbourhoods, as DGL's layer-wise inference: layer l is computed
// for all nodes, batchSize destination nodes at a time, from layer l-1's
// output of their in-neighbours. Memory is two N × width matrices plus one
// batch, whatever the depth; on a graph of at most batchSize nodes it is a
// plain full-graph forward pass.
func Infer(ctx context.Context, m *nn.Model, g *graph.CSC, x tensor.Matrix, batchSize int) (tensor.Matrix, error) {
	return InferLayers(ctx, m, g, x, batchSize, nil)
}

// InferLayers is Infer that also hands every layer's full output (the
// input of the next layer) to onLayer, e.g. to fill GNNAutoScale's
// histories.
func InferLayers(ctx context.Context, m *nn.Model, g *graph.CSC, x tensor.Matrix, batchSize int, onLayer func(l int, h tensor.Matrix) error) (tensor.Matrix, error) {
	n := g.NumNodes
	if batchSize <= 0 || batchSize >= n {
		batchSize = n
	}
	var full *nn.Block
	if batchSize == n {
		full = nn.FullGraph(g)
	}
	pos := newPos(n)
	ids := make([]int32, n)
	for i := range ids {
		ids[i] = int32(i)
	}
	h := x
	var h0 tensor.Matrix // layer 0's output, for APPNP's teleport term
	for l := range m.Layers {
		out := tensor.New(n, m.Layers[l].OutDim())
		for lo := 0; lo < n; lo += batchSize {
			if err := ctx.Err(); err != nil {
				return tensor.Matrix{}, err
			}
			hi := min(n, lo+batchSize)
			b, in := full, h
			if b == nil {
				b = blockOf(g, ids[lo:hi], pos)
				in = gatherRows(h, b.Src)
			}
			tp := autograd.NewInferenceTape()
			var h0dst *autograd.Var
			if m.NeedsH0(l) {
				h0dst = tp.Const(h0.RowSlice(lo, hi))
			}
			y := m.ForwardLayerH0(tp, l, b, tp.Const(in), h0dst, false, 0)
			copy(out.Data[lo*out.Cols:hi*out.Cols], y.Value.Data)
		}
		if l == 0 {
			h0 = out
		}
		if onLayer != nil && l < len(m.Layers)-1 {
			if err := onLayer(l, out); err != nil {
				return tensor.Matrix{}, err
			}
		}
		h = out
	}
	return h, nil
}

// newPos returns a node -> local position scratch map, all -1.
func newPos(n int) []int32 {
	pos := make([]int32, n)
	for i := range pos {
		pos[i] = -1
	}
	return pos
}

// blockOf builds the block whose destinations are dst (distinct nodes),
// with all their in-neighbours: sources are dst followed by the other
// in-neighbours (the halo) in first-seen order. pos must be all -1 on entry
// and is restored on exit.
func blockOf(g *graph.CSC, dst []int32, pos []int32) *nn.Block {
	src := make([]int32, 0, len(dst))
	for _, v := range dst {
		pos[v] = int32(len(src))
		src = append(src, v)
	}
	indptr := make([]int64, len(dst)+1)
	for i, v := range dst {
		indptr[i+1] = indptr[i] + g.Indptr[v+1] - g.Indptr[v]
	}
	indices := make([]int32, indptr[len(dst)])
	for i, v := range dst {
		k := indptr[i]
		for p := g.Indptr[v]; p < g.Indptr[v+1]; p++ {
			u := g.Indices[p]
			if pos[u] < 0 {
				pos[u] = int32(len(src))
				src = append(src, u)
			}
			indices[k] = pos[u]
			k++
		}
	}
	for _, u := range src {
		pos[u] = -1
	}
	return &nn.Block{CSR: &tensor.CSR{Indptr: indptr, Indices: indices, NumSrc: len(src)}, NumDst: len(dst), Src: src}
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

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
	n := g.NumNodes
	if batchSize <= 0 || batchSize >= n {
		tp := autograd.NewInferenceTape()
		out := m.Forward(tp, []*nn.Block{nn.FullGraph(g)}, tp.Const(x), false, 0)
		return out.Value, nil
	}
	pos := make([]int32, n)
	for i := range pos {
		pos[i] = -1
	}
	h := x
	for l := range m.Layers {
		out := tensor.New(n, m.Layers[l].OutDim())
		for lo := 0; lo < n; lo += batchSize {
			if err := ctx.Err(); err != nil {
				return tensor.Matrix{}, err
			}
			hi := min(n, lo+batchSize)
			b := fullBlock(g, lo, hi, pos)
			in := gatherRows(h, b.Src)
			tp := autograd.NewInferenceTape()
			y := m.ForwardLayer(tp, l, b, tp.Const(in), false, 0)
			copy(out.Data[lo*out.Cols:hi*out.Cols], y.Value.Data)
		}
		h = out
	}
	return h, nil
}

// fullBlock builds the block of destination nodes [lo, hi) with all their
// in-neighbours. pos must be all -1 on entry and is restored on exit.
func fullBlock(g *graph.CSC, lo, hi int, pos []int32) *nn.Block {
	src := make([]int32, 0, hi-lo)
	for v := lo; v < hi; v++ {
		pos[v] = int32(len(src))
		src = append(src, int32(v))
	}
	e0, e1 := g.Indptr[lo], g.Indptr[hi]
	indptr := make([]int64, hi-lo+1)
	indices := make([]int32, e1-e0)
	for v := lo; v < hi; v++ {
		for p := g.Indptr[v]; p < g.Indptr[v+1]; p++ {
			u := g.Indices[p]
			if pos[u] < 0 {
				pos[u] = int32(len(src))
				src = append(src, u)
			}
			indices[p-e0] = pos[u]
		}
		indptr[v-lo+1] = g.Indptr[v+1] - e0
	}
	for _, u := range src {
		pos[u] = -1
	}
	return &nn.Block{CSR: &tensor.CSR{Indptr: indptr, Indices: indices, NumSrc: len(src)}, NumDst: hi - lo, Src: src}
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

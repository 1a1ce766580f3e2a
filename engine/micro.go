package engine

import (
	"fmt"

	"github.com/graphmill/graphmill/batch"
	"github.com/graphmill/graphmill/graph"
	"github.com/graphmill/graphmill/internal/units"
	"github.com/graphmill/graphmill/nn"
	"github.com/graphmill/graphmill/tensor"
)

// splitter plans and extracts micro-batches under a byte bound.
type splitter struct {
	m       *nn.Model
	bound   int64 // 0: unbounded
	sampled bool  // for the advice of errors
	// nodeDropout is Config.NodeDropout, for the micro-batches' blocks.
	nodeDropout bool
	keyIDs      []int32 // Config.KeyIDs
	mark        *[]int32
}

// micro is one micro-batch of a view.
type micro struct {
	seeds  []int32         // positions among the view's destinations
	shapes []nn.BlockShape // per layer
	blocks []graph.Block   // per layer (when built)
	rows   []int32         // positions among the view's input nodes of the first block's sources
	halo   [][]int32       // per layer l >= 1: rows of view.halo[l-1] it reads
	nHalo  []int           // per layer: number of history sources
}

// blockAt returns the block of layer l.
func blockAt(blocks []*nn.Block, l int) *nn.Block {
	if len(blocks) == 1 {
		return blocks[0]
	}
	return blocks[l]
}

// fresh returns the number of sources of layer l computed by layer l-1
// (or read from the input rows): those past it are history rows.
func (v *view) fresh(l int) int {
	return blockAt(v.blocks, l).CSR.NumSrc - v.mb.HaloLen(l)
}

// extract computes the micro-batch of the view's destinations seeds:
// walking from the last layer to the first, layer l keeps the destinations
// the layer above needs (seeds at the top) and the sources their edges
// read, destinations first, then other sources computed by layer l-1 in
// first-seen order, then history sources. With build false it only counts
// (shapes), without allocating blocks.
func (s *splitter) extract(v *view, seeds []int32, build bool) *micro {
	L := len(s.m.Layers)
	mc := &micro{seeds: seeds, shapes: make([]nn.BlockShape, L), halo: make([][]int32, L), nHalo: make([]int, L)}
	if build {
		mc.blocks = make([]graph.Block, L)
	}
	need := seeds
	for l := L - 1; l >= 0; l-- {
		b := blockAt(v.blocks, l)
		c := b.CSR
		fresh := v.fresh(l) // sources at positions >= fresh come from history
		if len(*s.mark) < c.NumSrc {
			*s.mark = make([]int32, c.NumSrc)
			for i := range *s.mark {
				(*s.mark)[i] = -1
			}
		}
		mark := *s.mark
		inner := make([]int32, len(need), 2*len(need))
		copy(inner, need)
		for i, p := range need {
			mark[p] = int32(i)
		}
		var hist []int32
		var indptr []int64
		var indices []int32
		var weights []float32
		if build {
			indptr = make([]int64, len(need)+1)
			n := int64(0)
			for _, d := range need {
				n += c.Indptr[d+1] - c.Indptr[d]
			}
			indices = make([]int32, 0, n)
			if c.Weights != nil {
				weights = make([]float32, 0, n)
			}
		}
		edges, selfLoops := 0, 0
		for i, d := range need {
			for e := c.Indptr[d]; e < c.Indptr[d+1]; e++ {
				u := c.Indices[e]
				if mark[u] == -1 {
					if int(u) < fresh {
						mark[u] = int32(len(inner))
						inner = append(inner, u)
					} else {
						mark[u] = -2 - int32(len(hist)) // placed after inner below
						hist = append(hist, u)
					}
				}
				if u == d {
					selfLoops++
				}
				if build {
					indices = append(indices, mark[u])
					if weights != nil {
						weights = append(weights, c.Weights[e])
					}
				}
			}
			edges += int(c.Indptr[d+1] - c.Indptr[d])
			if build {
				indptr[i+1] = int64(len(indices))
			}
		}
		for _, u := range inner {
			mark[u] = -1
		}
		for _, u := range hist {
			mark[u] = -1
		}
		nsrc := len(inner) + len(hist)
		mc.shapes[l] = nn.BlockShape{Src: nsrc, Dst: len(need), Edges: edges, LoopEdges: edges + len(need) - selfLoops}
		mc.nHalo[l] = len(hist)
		if build {
			for k, ix := range indices {
				if ix < -1 {
					indices[k] = int32(len(inner)) - 2 - ix
				}
			}
			mc.blocks[l] = graph.Block{NumSrc: nsrc, NumDst: len(need), Indptr: indptr, Indices: indices, Weights: weights}
			if len(hist) > 0 {
				rows := make([]int32, len(hist))
				for k, u := range hist {
					rows[k] = u - int32(fresh)
				}
				mc.halo[l] = rows
			}
		}
		need = inner
	}
	mc.rows = need
	return mc
}

// bytes returns what a step over blocks of these shapes allocates: the
// model's matrices (StepBytes, which includes GAS's stacking of fresh over
// history rows), the index arrays the layers derive from the blocks
// (self-looped and weighted copies, the transpose for backward; an upper
// bound), and, for a micro-batch (copies), its own blocks and its gathered
// input and history rows.
func (s *splitter) bytes(shapes []nn.BlockShape, nHalo []int, copies, train bool) int64 {
	m := s.m
	b := m.StepBytes(shapes, train)
	if copies {
		b += 4 * int64(m.Config.In) * int64(shapes[0].Src)
		for l := 1; l < len(m.Layers); l++ {
			b += 4 * int64(m.Layers[l-1].OutDim()) * int64(nHalo[l])
		}
	}
	for _, sh := range shapes {
		b += indexBytes(m, sh, train, copies)
	}
	return b
}

// indexBytes returns the bytes of the index arrays m's layers derive
// from a block of shape sh (nn.Model.IndexBytes), plus the block's own
// arrays when it is a copy made for the step.
func indexBytes(m *nn.Model, sh nn.BlockShape, train, copies bool) int64 {
	b := m.IndexBytes(sh, train)
	if copies {
		b += 8*int64(sh.Dst+1) + 4*int64(sh.Edges) + 4*int64(sh.Src)
	}
	return b
}

// IndexBytes returns the bytes of the index arrays m's layers derive from
// a block of shape sh, plus the block's own arrays when copies (a block
// built for the step): what layer-wise inference adds to a layer's plan.
func IndexBytes(m *nn.Model, sh nn.BlockShape, train, copies bool) int64 {
	return indexBytes(m, sh, train, copies)
}

// wholeBytes returns the bytes of an unsplit step on v.
func (s *splitter) wholeBytes(v *view, train bool) int64 {
	shapes := make([]nn.BlockShape, len(v.blocks))
	for i, b := range v.blocks {
		shapes[i] = nn.ShapeOf(b)
	}
	b := s.bytes(shapes, nil, false, train)
	if !v.carried {
		b += 4 * int64(s.m.Config.In) * int64(len(v.ids)) // the gathered inputs
	}
	return b + s.haloBytes(v)
}

// haloBytes is what GAS's pulled history rows take: this batch's, and as
// much again for the next batch, pulled while this one computes (an
// estimate: its size is not known yet).
func (s *splitter) haloBytes(v *view) int64 {
	var b int64
	for _, h := range v.halo {
		b += 2 * 4 * int64(len(h.Data))
	}
	return b
}

// fixedBytes is what a micro-batched step keeps for the whole batch: GAS's
// history rows, the fresh hidden rows GAS pushes, or the logits of
// inference.
func (s *splitter) fixedBytes(v *view, train bool) int64 {
	n := int64(len(v.labels))
	b := s.haloBytes(v)
	if !train {
		return b + 4*n*int64(s.m.Layers[len(s.m.Layers)-1].OutDim())
	}
	if v.halo != nil {
		for l := 0; l < len(s.m.Layers)-1; l++ {
			b += 4 * n * int64(s.m.Layers[l].OutDim())
		}
	}
	return b
}

// plan returns nil when v's step fits the bound (or there is none), and
// otherwise the seeds of each micro-batch: contiguous runs of the
// destinations to compute, halved until each fits.
func (s *splitter) plan(v *view, train bool) ([][]int32, error) {
	if s.bound <= 0 {
		return nil, nil
	}
	whole := s.wholeBytes(v, train)
	if whole <= s.bound {
		return nil, nil
	}
	var seeds []int32
	for i, y := range v.labels {
		if !(train && v.labelledOnly) || y >= 0 {
			seeds = append(seeds, int32(i))
		}
	}
	fixed := s.fixedBytes(v, train)
	if fixed >= s.bound {
		return nil, fmt.Errorf("the batch's %d output rows alone take %s, more than the memory bound of %s: lower the batch size or raise --max-memory",
			len(v.labels), units.Bytes(fixed), units.Bytes(s.bound))
	}
	var out [][]int32
	// Nodes too large on their own are counted, not fatal at once, so
	// that the error can give the smallest bound that runs the batch.
	var over int
	var worst int64
	var worstPos int32
	var split func(p []int32)
	split = func(p []int32) {
		mc := s.extract(v, p, false)
		need := fixed + s.bytes(mc.shapes, mc.nHalo, true, train)
		switch {
		case need <= s.bound:
			out = append(out, p)
		case len(p) == 1:
			over++
			if need > worst {
				worst, worstPos = need, p[0]
			}
		default:
			split(p[:len(p)/2])
			split(p[len(p)/2:])
		}
	}
	k := int(min(int64(len(seeds)), (whole+s.bound-1)/s.bound))
	for i := 0; i < k; i++ {
		split(seeds[i*len(seeds)/k : (i+1)*len(seeds)/k])
	}
	if over > 0 {
		advice := "lower the hidden width"
		if s.sampled {
			advice = "lower the fanouts or the hidden width"
		}
		return nil, fmt.Errorf("%d nodes of this batch each need more than the memory bound of %s on their own; the largest, node %d (batch position %d), needs %s: the smallest --max-memory for this batch is %dKiB (or %s)",
			over, units.Bytes(s.bound), v.mb.Seeds[worstPos], worstPos, units.Bytes(worst), (worst+1023)/1024, advice)
	}
	return out, nil
}

// sub builds micro-batch p of v as a MiniBatch of its own (its input and
// history rows gathered from v's) and returns its view.
func (s *splitter) sub(v *view, p []int32) (*view, error) {
	mc := s.extract(v, p, true)
	mb := &batch.MiniBatch{Sender: v.mb.Sender, Epoch: v.mb.Epoch, Seq: v.mb.Seq}
	ids := make([]int32, len(mc.rows))
	for i, q := range mc.rows {
		ids[i] = v.ids[q]
	}
	mb.SetInputs(ids, len(p))
	mb.Blocks = mc.blocks
	mb.Labels = make([]int32, len(p))
	for i, d := range p {
		mb.Labels[i] = v.labels[d]
	}
	w := &view{mb: mb, ids: ids, labels: mb.Labels, carried: v.carried, dropped: v.dropped}
	if v.carried {
		w.x = gatherRows(v.x, mc.rows)
		mb.Features = batch.Rows{DType: batch.Float32, Rows: w.x.Rows, Dim: w.x.Cols, F32: w.x.Data}
	}
	if v.halo != nil {
		L := len(s.m.Layers)
		mb.Halo = make([]batch.Halo, L-1)
		w.halo = make([]tensor.Matrix, L-1)
		for l := 1; l < L; l++ {
			rows := mc.halo[l]
			nodes := make([]int64, len(rows))
			for k, q := range rows {
				nodes[k] = v.mb.Halo[l-1].Nodes[q]
			}
			w.halo[l-1] = gatherRows(v.halo[l-1], rows)
			h := w.halo[l-1]
			mb.Halo[l-1] = batch.Halo{Nodes: nodes, Rows: batch.Rows{DType: batch.Float32, Rows: h.Rows, Dim: h.Cols, F32: h.Data}}
		}
	}
	var err error
	w.blocks, err = nnBlocks(mb, ids, s.nodeDropout, s.keyIDs)
	return w, err
}

// gatherRows copies the rows ids of x into a new matrix.
func gatherRows(x tensor.Matrix, ids []int32) tensor.Matrix {
	out := tensor.New(len(ids), x.Cols)
	for i, v := range ids {
		copy(out.Data[i*x.Cols:(i+1)*x.Cols], x.Data[int(v)*x.Cols:(int(v)+1)*x.Cols])
	}
	return out
}

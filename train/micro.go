package train

import (
	"context"
	"fmt"
	"math"

	"github.com/graphmill/graphmill/feature"
	"github.com/graphmill/graphmill/internal/rng"
	"github.com/graphmill/graphmill/internal/units"
	"github.com/graphmill/graphmill/nn"
	"github.com/graphmill/graphmill/tensor"
	"github.com/graphmill/graphmill/tensor/autograd"
)

// The memory bound (--max-memory). Before running a batch the trainer
// computes the bytes its step will allocate (nn.Model.StepBytes for the
// activations, dropout masks and gradients, plus what the batch's own
// copies and index arrays take). A batch over the bound is cut into
// micro-batches: its seeds are split, and for every piece the sub-MFG that
// computes those seeds is extracted from the batch's blocks (walking the
// layers from the output back to the input, keeping only the sources the
// kept destinations read). The pieces run one after another, their losses
// weighted by their share of the labelled seeds and their gradients added
// up, and the optimiser steps once: the gradients are those of the unsplit
// batch (up to float32 rounding), because every kept destination sees all
// of the in-edges it has in the batch. Dropout masks are drawn per
// micro-batch, so with dropout on the two agree in distribution only.

// view is one batch as a step sees it.
type view struct {
	// blocks holds one block per layer, input layer first, or one block
	// shared by every layer (full-graph and GAS batches).
	blocks []*nn.Block
	// x holds the input rows of the first block's sources, by position;
	// or, when xRows is set, src's row xRows[p] is position p's (the step
	// gathers them, so a batch need not copy its inputs before it runs).
	x     tensor.Matrix
	src   feature.Source
	xRows []int32
	// halo, for GAS, holds per hidden layer l the history rows of the
	// sources of layer l+1 at positions >= NumDst (nil otherwise).
	halo []tensor.Matrix
	// labels holds the label of every destination of the last block (-1
	// for none).
	labels []int32
	// xOwned says that x is the step's own copy (a sampled batch's
	// gathered rows), which the step may overwrite (input dropout works in
	// place on it).
	xOwned bool
	// labelledOnly says that only labelled destinations need computing
	// (full-graph training); otherwise a micro-batched step computes every
	// destination (GAS pushes them all to its histories).
	labelledOnly bool
}

// blockAt returns the block of layer l.
func blockAt(blocks []*nn.Block, l int) *nn.Block {
	if len(blocks) == 1 {
		return blocks[0]
	}
	return blocks[l]
}

func shapeAt(shapes []nn.BlockShape, l int) nn.BlockShape {
	if len(shapes) == 1 {
		return shapes[0]
	}
	return shapes[l]
}

// forward runs m over v: its input rows gathered when v names them, and
// GAS's history rows stacked below each hidden layer's fresh rows. It
// returns the logits of the last block's destinations and every hidden
// layer's output.
func forward(ctx context.Context, tp *autograd.Tape, m *nn.Model, v *view, train bool, seed uint64) (*autograd.Var, []*autograd.Var, error) {
	x := v.x
	if v.xRows != nil {
		var err error
		if x, err = gatherSource(ctx, v.src, v.xRows, tp.Workspace); err != nil {
			return nil, nil, err
		}
	}
	in := tp.Const(x)
	if v.xOwned {
		in = tp.ConstOwned(x)
	}
	logits, hidden := m.ForwardStacked(tp, v.blocks, in, v.halo, train, seed)
	return logits, hidden, nil
}

// splitter plans and extracts micro-batches under a byte bound.
type splitter struct {
	m     *nn.Model
	bound int64   // 0: unbounded
	mode  Mode    // for the advice of errors
	mark  []int32 // scratch: source position -> new position (-1: unset)
}

// micro is one micro-batch of a view.
type micro struct {
	seeds  []int32         // positions among the view's destinations
	shapes []nn.BlockShape // per layer
	blocks []*nn.Block     // per layer (when built)
	rows   []int32         // positions in view.x of the first block's sources
	halo   [][]int32       // per layer l >= 1: rows of view.halo[l-1] it reads
	nHalo  []int           // per layer: number of history sources
}

// extract computes the micro-batch of the view's destinations seeds:
// walking from the last layer to the first, layer l keeps the destinations
// the layer above needs (seeds at the top) and the sources their edges
// read, destinations first, then other sources computed by layer l-1 in
// first-seen order, then history sources. With build false it only counts
// (shapes), without allocating blocks.
func (s *splitter) extract(v *view, seeds []int32, build bool) *micro {
	L := len(s.m.Layers)
	mb := &micro{seeds: seeds, shapes: make([]nn.BlockShape, L), halo: make([][]int32, L), nHalo: make([]int, L)}
	if build {
		mb.blocks = make([]*nn.Block, L)
	}
	need := seeds
	for l := L - 1; l >= 0; l-- {
		b := blockAt(v.blocks, l)
		c := b.CSR
		fresh := len(b.Src) // sources at positions >= fresh come from history
		if l > 0 && v.halo != nil {
			fresh = b.NumDst
		}
		if len(s.mark) < len(b.Src) {
			s.mark = make([]int32, len(b.Src))
			for i := range s.mark {
				s.mark[i] = -1
			}
		}
		mark := s.mark
		inner := make([]int32, len(need), 2*len(need))
		copy(inner, need)
		for i, p := range need {
			mark[p] = int32(i)
		}
		var hist []int32
		var indptr []int64
		var indices []int32
		if build {
			indptr = make([]int64, len(need)+1)
			n := int64(0)
			for _, d := range need {
				n += c.Indptr[d+1] - c.Indptr[d]
			}
			indices = make([]int32, 0, n)
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
		mb.shapes[l] = nn.BlockShape{Src: nsrc, Dst: len(need), Edges: edges, LoopEdges: edges + len(need) - selfLoops}
		mb.nHalo[l] = len(hist)
		if build {
			for k, ix := range indices {
				if ix < -1 {
					indices[k] = int32(len(inner)) - 2 - ix
				}
			}
			src := make([]int32, 0, nsrc)
			for _, u := range inner {
				src = append(src, b.Src[u])
			}
			for _, u := range hist {
				src = append(src, b.Src[u])
			}
			mb.blocks[l] = &nn.Block{CSR: &tensor.CSR{Indptr: indptr, Indices: indices, NumSrc: nsrc}, NumDst: len(need), Src: src}
			if len(hist) > 0 {
				rows := make([]int32, len(hist))
				for k, u := range hist {
					rows[k] = u - int32(b.NumDst)
				}
				mb.halo[l] = rows
			}
		}
		need = inner
	}
	mb.rows = need
	return mb
}

// bytes returns what a step over blocks of these shapes allocates: the
// model's matrices (StepBytes, which includes GAS's stacking of fresh over
// history rows), the index arrays the layers derive from the blocks (self-looped and
// weighted copies, the transpose for backward; an upper bound), and, for a
// micro-batch (copies), its own blocks and its gathered input and history
// rows.
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

// wholeBytes returns the bytes of an unsplit step on v.
func (s *splitter) wholeBytes(v *view, train bool) int64 {
	shapes := make([]nn.BlockShape, len(v.blocks))
	for i, b := range v.blocks {
		shapes[i] = nn.ShapeOf(b)
	}
	b := s.bytes(shapes, nil, false, train)
	if v.xRows != nil {
		b += 4 * int64(s.m.Config.In) * int64(len(v.xRows)) // the gathered inputs
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
		mb := s.extract(v, p, false)
		need := fixed + s.bytes(mb.shapes, mb.nHalo, true, train)
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
		if s.mode == Sampled {
			advice = "lower the fanouts or the hidden width"
		}
		return nil, fmt.Errorf("%d nodes of this batch each need more than the memory bound of %s on their own; the largest, node %d (batch position %d), needs %s: the smallest --max-memory for this batch is %dKiB (or %s)",
			over, units.Bytes(s.bound), blockAt(v.blocks, len(s.m.Layers)-1).Src[worstPos], worstPos, units.Bytes(worst), (worst+1023)/1024, advice)
	}
	return out, nil
}

// sub builds micro-batch p of v as a view of its own, its input rows
// gathered.
func (s *splitter) sub(ctx context.Context, v *view, p []int32) (*view, error) {
	mb := s.extract(v, p, true)
	w := &view{blocks: mb.blocks, labels: make([]int32, len(p))}
	if v.xRows != nil {
		rows := make([]int32, len(mb.rows))
		for i, q := range mb.rows {
			rows[i] = v.xRows[q]
		}
		var err error
		if w.x, err = gatherSource(ctx, v.src, rows, nil); err != nil {
			return nil, err
		}
	} else {
		w.x = gatherRows(v.x, mb.rows)
	}
	for i, d := range p {
		w.labels[i] = v.labels[d]
	}
	if v.halo != nil {
		w.halo = make([]tensor.Matrix, len(v.halo))
		for l := range v.halo {
			w.halo[l] = gatherRows(v.halo[l], mb.halo[l+1])
		}
	}
	return w, nil
}

// stepOut is what a step computed.
type stepOut struct {
	loss           float64 // mean over the labelled destinations
	correct, total int     // right predictions among them, and their count
	micro          int     // micro-batches run (1: unsplit)
	// fresh holds every hidden layer's rows of all destinations (GAS);
	// after a training step, until the next step (they may live in the
	// runner's workspace).
	fresh []tensor.Matrix
	// logits holds the logits of all destinations (inference only).
	logits tensor.Matrix
}

// trainStep runs forward and backward on v, micro-batched when it exceeds
// the bound, and applies one optimiser step. A batch without labelled
// destinations is only run forward (GAS still needs its fresh rows).
func (r *Runner) trainStep(ctx context.Context, sp *splitter, v *view, m *nn.Model, opt nn.Optimizer, epoch, step int, seed uint64) (stepOut, error) {
	plan, err := sp.plan(v, true)
	if err != nil {
		return stepOut{}, err
	}
	return r.trainPlan(ctx, sp, v, plan, m, opt, epoch, step, seed)
}

// trainPlan is trainStep with the micro-batches given (nil: unsplit).
func (r *Runner) trainPlan(ctx context.Context, sp *splitter, v *view, plan [][]int32, m *nn.Model, opt nn.Optimizer, epoch, step int, seed uint64) (out stepOut, err error) {
	params := m.Params()
	autograd.ZeroGrad(params...)
	labelled := 0
	for _, y := range v.labels {
		if y >= 0 {
			labelled++
		}
	}
	if r.dp != nil {
		r.dp.begin(labelled) // data-parallel: gradients all-reduced below
	}
	// run does forward and backward of one piece, its loss weighted by its
	// share of the labelled destinations.
	run := func(w *view, seed uint64) ([]*autograd.Var, error) {
		tp := autograd.NewTape()
		if r.ws != nil {
			if r.ws.Cap() == 0 {
				// Sized from the memory planner before the first step, so
				// even that one does not overflow into extra chunks.
				r.ws.Reserve(int(sp.wholeBytes(w, true) / 4))
			}
			// The last piece's matrices are no longer used: its hidden
			// rows were copied out (micro-batches) or consumed by the
			// caller before this step (GAS's histories).
			r.ws.Reset()
			tp.Workspace = r.ws
		}
		if r.dp != nil && plan == nil {
			tp.GradReady = r.dp.ready // overlap the all-reduce with backward
		}
		logits, hidden, err := forward(ctx, tp, m, w, true, seed)
		if err != nil {
			return nil, err
		}
		c, k := countCorrect(logits.Value, w.labels)
		out.correct, out.total = out.correct+c, out.total+k
		if k == 0 {
			return hidden, nil
		}
		loss := tp.CrossEntropy(logits, w.labels)
		l := float64(loss.Scalar())
		if math.IsNaN(l) || math.IsInf(l, 0) {
			return nil, fmt.Errorf("loss is %v at epoch %d, step %d: lower the learning rate or check the features for NaN/Inf", l, epoch, step)
		}
		g := tensor.New(1, 1)
		g.Data[0] = float32(k) / float32(labelled)
		if err := tp.BackwardFrom(loss, g); err != nil {
			return nil, err
		}
		out.loss += l * float64(k) / float64(labelled)
		r.notePeak()
		return hidden, nil
	}
	if plan == nil {
		out.micro = 1
		hidden, err := run(v, seed)
		if err != nil {
			return out, err
		}
		out.fresh = freshRows(v, hidden)
	} else {
		out.micro, out.fresh = len(plan), newFresh(v, m)
		for k, p := range plan {
			w, err := sp.sub(ctx, v, p)
			if err != nil {
				return out, err
			}
			hidden, err := run(w, rng.Derive(seed, uint64(k)))
			if err != nil {
				return out, err
			}
			scatterRows(out.fresh, hidden, p)
		}
	}
	if r.dp != nil {
		// Every rank steps with the gradients and counts of all ranks.
		var lossSum float64
		if labelled, lossSum, out.correct, err = r.dp.finish(out.loss*float64(labelled), out.correct); err != nil {
			return out, err
		}
		out.total, out.loss = labelled, lossSum/float64(max(labelled, 1))
	}
	if labelled == 0 {
		return out, nil
	}
	opt.Step(params)
	if r.hooks.Batch != nil {
		r.hooks.Batch(epoch, step, out.loss)
	}
	return out, nil
}

// inferStep runs v forward without gradients, micro-batched when it
// exceeds the bound, and returns the logits and (GAS) fresh rows of all
// destinations.
func inferStep(ctx context.Context, sp *splitter, v *view, m *nn.Model) (stepOut, error) {
	plan, err := sp.plan(v, false)
	if err != nil {
		return stepOut{}, err
	}
	return inferPlan(ctx, sp, v, plan, m)
}

// inferPlan is inferStep with the micro-batches given (nil: unsplit).
func inferPlan(ctx context.Context, sp *splitter, v *view, plan [][]int32, m *nn.Model) (stepOut, error) {
	if plan == nil {
		logits, hidden, err := forward(ctx, autograd.NewInferenceTape(), m, v, false, 0)
		if err != nil {
			return stepOut{}, err
		}
		return stepOut{micro: 1, logits: logits.Value, fresh: freshRows(v, hidden)}, nil
	}
	out := stepOut{micro: len(plan), logits: tensor.New(len(v.labels), m.Layers[len(m.Layers)-1].OutDim()), fresh: newFresh(v, m)}
	for _, p := range plan {
		w, err := sp.sub(ctx, v, p)
		if err != nil {
			return out, err
		}
		logits, hidden, err := forward(ctx, autograd.NewInferenceTape(), m, w, false, 0)
		if err != nil {
			return out, err
		}
		scatterRows([]tensor.Matrix{out.logits}, []*autograd.Var{logits}, p)
		scatterRows(out.fresh, hidden, p)
	}
	return out, nil
}

// newFresh returns the matrices that collect a micro-batched GAS step's
// hidden rows of all destinations (nil for other modes).
func newFresh(v *view, m *nn.Model) []tensor.Matrix {
	if v.halo == nil {
		return nil
	}
	out := make([]tensor.Matrix, len(m.Layers)-1)
	for l := range out {
		out[l] = tensor.New(len(v.labels), m.Layers[l].OutDim())
	}
	return out
}

// freshRows returns the hidden rows of an unsplit GAS step (nil for other
// modes, which keep no histories).
func freshRows(v *view, hidden []*autograd.Var) []tensor.Matrix {
	if v.halo == nil {
		return nil
	}
	out := make([]tensor.Matrix, len(hidden))
	for l, h := range hidden {
		out[l] = h.Value
	}
	return out
}

// scatterRows copies the first len(p) rows of every src[l] (a micro-batch's
// outputs, its seeds first) to rows p of dst[l].
func scatterRows(dst []tensor.Matrix, src []*autograd.Var, p []int32) {
	for l := range dst {
		for i, d := range p {
			copy(dst[l].Row(int(d)), src[l].Value.Row(i))
		}
	}
}

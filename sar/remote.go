package sar

import (
	"fmt"

	"github.com/graphmill/graphmill/dist"
	"github.com/graphmill/graphmill/nn"
	"github.com/graphmill/graphmill/tensor"
	"github.com/graphmill/graphmill/tensor/autograd"
)

// remote runs nn's block ops over the shard (nn.Remote): the block of
// layer l of a steps-deep model, whose input rows are the rows of the
// layer's topo (every inner node, or with --mfg the layer's receptive
// field). Any layer written with nn's block ops runs here unchanged.
type remote struct {
	x        *exchanger
	l, steps int
}

// topo returns the layer's topo over the edges with or without one
// self-loop per node (both have the same input and output rows).
func (r *remote) topo(loops bool) *topo {
	t, err := r.x.plan(loops, r.l, r.steps)
	if err != nil {
		panic(nn.RemoteError{Err: err})
	}
	return t
}

// check panics with err as a RemoteError (recovered around Forward).
func check(err error) {
	if err != nil {
		panic(nn.RemoteError{Err: err})
	}
}

// sumAgg is the plain sum over in-edges.
func (s *Shard) sumAgg() *linAgg {
	if s.sum == nil {
		s.sum = newLinAgg("sum", s.edges(false), func(int, int, int64, int32) float32 { return 1 })
	}
	return s.sum
}

// weightedAgg is the sum by the dataset's edge weights (nn.AggWeighted).
func (s *Shard) weightedAgg() *linAgg {
	if s.weighted == nil {
		e := s.edges(false)
		if e[s.Rank].w == nil {
			check(fmt.Errorf("sar: the %s aggregation needs edge weights, and dataset %s has none", nn.AggWeighted, s.Name))
		}
		s.weighted = newLinAgg("weighted", e, func(_, q int, i int64, _ int32) float32 { return e[q].w[i] })
	}
	return s.weighted
}

// linAgg returns the shard's weighted sum for a linear aggregator and
// whether its edges carry self-loops.
func (r *remote) linAgg(a nn.Aggregator) (*linAgg, bool) {
	switch a {
	case nn.AggSum:
		return r.x.s.sumAgg(), false
	case nn.AggMean:
		return r.x.s.meanAgg(), false
	case nn.AggGCN:
		return r.x.s.gcnAgg(), true
	case nn.AggWeighted:
		return r.x.s.weightedAgg(), false
	}
	return nil, false
}

// Aggregate implements nn.Remote: sums (sum, mean, GCN) as SAR's
// sequential aggregation with closed-form backward; max and min fold the
// rows of one rank at a time too, remembering which rank's row won each
// element, and send its gradient back to it.
func (r *remote) Aggregate(tp *autograd.Tape, h *autograd.Var, a nn.Aggregator) *autograd.Var {
	x := r.x
	if la, loops := r.linAgg(a); la != nil {
		t := r.topo(loops)
		x.noteMin(h, h.Value.Cols)
		out, err := x.aggregate(tp, la, h, t)
		check(err)
		return out
	}
	if a != nn.AggMax && a != nn.AggMin {
		panic(fmt.Sprintf("sar: no distributed %v aggregation", a))
	}
	t := r.topo(false)
	me := x.s.Rank
	x.noteMin(h, h.Value.Cols)
	e := tensor.NewExtreme(t.outRows(), h.Value.Cols, a == nn.AggMin)
	check(e.Fold(t.csr[me], h.Value, int32(me)))
	check(x.fetchRows(h.Value, t, func(q int, rows tensor.Matrix) {
		check(e.Fold(t.csr[q], rows, int32(q)))
	}))
	e.Finish()
	return tp.Custom("SAR-"+a.String(), e.Out, func(g tensor.Matrix, grads []tensor.Matrix) error {
		dx := grads[0]
		if dx.Data == nil {
			return nil
		}
		if err := e.Grad(dx, g, int32(me)); err != nil {
			return err
		}
		return x.returnGrads(x.s.Size, g.Cols, t, func(q int) tensor.Matrix {
			gq := tensor.New(t.fetched(q), g.Cols)
			check(e.Grad(gq, g, int32(q)))
			return gq
		}, func(rows []int32, gr tensor.Matrix) { scatterAdd(dx, rows, gr) })
	}, h)
}

// Conv implements nn.Remote with the fused layer (see fused).
func (r *remote) Conv(tp *autograd.Tape, h *autograd.Var, c nn.Conv) *autograd.Var {
	la, loops := r.linAgg(c.Agg)
	t := r.topo(loops)
	out, in := c.W.Shape()
	switch {
	case h.RequiresGrad():
		r.x.noteMin(h, min(in, out))
	case in > 2*out: // the input features, multiplied first: W's gradient flows back
		r.x.noteMinForward(out)
		r.x.minBytes += int64(r.x.s.Fetched()) * 4 * int64(out)
	default: // the input features, aggregated first: no gradient
		r.x.noteMinForward(in)
	}
	y, err := r.x.fused(tp, fusedLayer{agg: la, wl: c.W, wr: c.Root, b: c.Bias, relu: c.ReLU}, h, t)
	check(err)
	return y
}

// Attention implements nn.Remote with SAR's distributed GAT attention.
func (r *remote) Attention(tp *autograd.Tape, h, aSrc, aDst *autograd.Var, dropout float64, seed uint64) *autograd.Var {
	t := r.topo(true)
	heads, _ := aSrc.Shape()
	el := tp.HeadDot(h, aSrc)
	er := tp.HeadDot(selectRows(tp, h, t.dstInSrc), aDst)
	x := r.x
	x.noteMin(h, h.Value.Cols+heads)
	if x.mode == SAR {
		x.noteMinForward(h.Value.Cols) // the rows again, for backward
	}
	out, err := x.gatAggregate(tp, h, el, er, heads, dropout, seed, t)
	check(err)
	return out
}

// DstRows implements nn.Remote.
func (r *remote) DstRows(tp *autograd.Tape, h *autograd.Var) *autograd.Var {
	return selectRows(tp, h, r.topo(false).dstInSrc)
}

// Initial implements nn.Remote: layer 0's output rows are layer 1's input
// rows, so the rows of layer l's outputs among them follow the
// destinations' positions down through layers l..1.
func (r *remote) Initial(tp *autograd.Tape, h0 *autograd.Var) *autograd.Var {
	var pos []int32 // nil: the same rows
	for k := r.l; k >= 1; k-- {
		t, err := r.x.plan(false, k, r.steps)
		check(err)
		if t.dstInSrc == nil {
			continue
		}
		if pos == nil {
			pos = append([]int32(nil), t.dstInSrc...)
			continue
		}
		for i, p := range pos {
			pos[i] = t.dstInSrc[p]
		}
	}
	return selectRows(tp, h0, pos)
}

// SumRows implements nn.Remote: the column sums all-reduced, and in
// backward the gradient all-reduced before it reaches every row (each
// rank's loss reads the global sums).
func (r *remote) SumRows(tp *autograd.Tape, h *autograd.Var) *autograd.Var {
	x := r.x
	if x.mfg {
		check(fmt.Errorf("sar: --mfg computes on the training nodes' receptive field, where batch statistics (batch normalisation) are not the full graph's: train this model without --mfg"))
	}
	// In float64, so that the sums equal one process's to its rounding.
	cols := h.Value.Cols
	acc := make([]float64, cols)
	for i := 0; i < h.Value.Rows; i++ {
		for j, v := range h.Value.Row(i) {
			acc[j] += float64(v)
		}
	}
	check(x.allReduce(acc))
	out := tensor.New(1, cols)
	for j, v := range acc {
		out.Data[j] = float32(v)
	}
	return tp.Custom("SAR-SumRows", out, func(g tensor.Matrix, grads []tensor.Matrix) error {
		gs := make([]float64, cols)
		for j, v := range g.Data {
			gs[j] = float64(v)
		}
		if err := x.allReduce(gs); err != nil {
			return err
		}
		if dx := grads[0]; dx.Data != nil {
			for i := 0; i < dx.Rows; i++ {
				d := dx.Row(i)
				for j, v := range gs {
					d[j] += float32(v)
				}
			}
		}
		return nil
	}, h)
}

// CountRows implements nn.Remote.
func (r *remote) CountRows(n int) int {
	v := []int64{int64(n)}
	check(r.x.allReduce(v))
	return int(v[0])
}

// InDegrees implements nn.Remote: every output row's in-degree in the
// whole graph (a SAR shard holds all of its nodes' in-edges).
func (r *remote) InDegrees() []float32 {
	t := r.topo(false)
	d := make([]float32, t.outRows())
	for i := range d {
		d[i] = float32(r.x.s.InDeg[t.outInner(i)])
	}
	return d
}

// Dropout implements nn.Remote: keyed by the rows' global ids, the mask
// one process draws for the whole graph's matrix (see dropFactors).
func (r *remote) Dropout(tp *autograd.Tape, h *autograd.Var, p float64, seed uint64) *autograd.Var {
	t := r.topo(false)
	var rows []int32
	switch h.Value.Rows {
	case t.inRows():
		rows = r.x.globalIDs(t.src)
	case t.outRows():
		rows = r.x.globalIDs(t.dst)
	default:
		panic(fmt.Sprintf("sar: dropout on %d rows of a layer with %d input and %d output rows", h.Value.Rows, t.inRows(), t.outRows()))
	}
	// The factors are drawn again in backward instead of kept: a mask as
	// large as the input would be the layer's largest matrix.
	out := dropoutRows(h.Value, rows, p, seed)
	return tp.Custom("Dropout", out, func(g tensor.Matrix, grads []tensor.Matrix) error {
		if grads[0].Data == nil {
			return nil
		}
		mask := make([]float32, len(g.Data))
		dropFactors(mask, rows, g.Cols, p, seed)
		for i, v := range g.Data {
			grads[0].Data[i] += v * mask[i]
		}
		return nil
	}, h)
}

// allReduce sums v over the ranks (counted with the parameters'
// all-reduces).
func (x *exchanger) allReduce(v any) error {
	if x.s.Size == 1 {
		return nil
	}
	return x.comm.AllReduce(x.ctx, v, dist.Sum)
}

// noteMin adds to the step's analytic minimum of exchanged bytes the
// boundary rows of an op of width cols once forward and, where h needs a
// gradient, the fetched rows' gradients once backward.
func (x *exchanger) noteMin(h *autograd.Var, cols int) {
	x.noteMinForward(cols)
	if h.RequiresGrad() {
		x.minBytes += int64(x.s.Fetched()) * 4 * int64(cols)
	}
}

// noteMinForward adds the boundary rows at width cols, forward only.
func (x *exchanger) noteMinForward(cols int) {
	x.minBytes += int64(x.s.Boundary()) * 4 * int64(cols)
}

// blocks returns the model's blocks over the shard, one per layer, each
// carrying the remote that runs its ops.
func (x *exchanger) blocks(steps int) ([]*nn.Block, *topo, error) {
	blocks := make([]*nn.Block, steps)
	var t *topo
	for l := range blocks {
		var err error
		if t, err = x.plan(false, l, steps); err != nil {
			return nil, nil, err
		}
		b := &nn.Block{NumDst: t.outRows(), Src: x.globalIDs(t.src), Remote: &remote{x: x, l: l, steps: steps}}
		blocks[l] = b
	}
	return blocks, t, nil
}

// globalIDs returns the global ids of inner rows rows (nil: every inner
// node).
func (x *exchanger) globalIDs(rows []int32) []int32 {
	if rows == nil {
		return x.s.GlobalIDs
	}
	ids := make([]int32, len(rows))
	for i, v := range rows {
		ids[i] = x.s.GlobalIDs[v]
	}
	return ids
}

// forward runs m over the shard with nn's own Forward on remote blocks
// and returns the logits of the last layer's output rows and that layer's
// topo; train enables dropout with the step's seed, drawn as one process
// draws it (keyed by node id).
func (x *exchanger) forward(tp *autograd.Tape, m *nn.Model, train bool, seed uint64) (logits *autograd.Var, last *topo, err error) {
	blocks, last, err := x.blocks(len(m.Layers))
	if err != nil {
		return nil, nil, err
	}
	defer func() {
		if r := recover(); r != nil {
			re, ok := r.(nn.RemoteError)
			if !ok {
				panic(r)
			}
			logits, last, err = nil, nil, re.Err
		}
	}()
	t0, err := x.plan(false, 0, len(m.Layers))
	if err != nil {
		return nil, nil, err
	}
	return m.Forward(tp, blocks, x.input(tp, t0), train, seed), last, nil
}

var _ nn.Remote = (*remote)(nil)

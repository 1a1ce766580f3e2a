package sar

import (
	"context"
	"fmt"
	"math"
	"runtime"

	"github.com/graphmill/graphmill/dist"
	"github.com/graphmill/graphmill/internal/memstat"
	"github.com/graphmill/graphmill/internal/rng"
	"github.com/graphmill/graphmill/nn"
	"github.com/graphmill/graphmill/tensor"
	"github.com/graphmill/graphmill/tensor/autograd"
)

// Supported reports whether the distributed forward pass covers kind.
func Supported(kind nn.Kind) bool {
	switch kind {
	case nn.GCN, nn.SAGE, nn.APPNP, nn.GAT:
		return true
	}
	return false
}

// NewModel builds a model for the shard's dataset exactly as a single
// process builds it from the same config (same seed, same weights); the
// distributed forward pass does not read the model's degree table, so
// none is held.
func NewModel(s *Shard, c nn.Config) (*nn.Model, error) {
	if !Supported(c.Kind) {
		return nil, fmt.Errorf("sar: no distributed forward pass for %s", c.Kind)
	}
	c.In, c.Out = s.FeatureDim, s.NumClasses
	return nn.NewModel(c, []float32{})
}

// linear is x·Wᵀ for a weight stored [out, in]. Unlike the tape's MatMul
// it accepts x without rows: with --mfg a rank may compute a layer for no
// node while the others do, and it still takes part in the exchanges.
func linear(tp *autograd.Tape, x, w *autograd.Var) *autograd.Var {
	out := tensor.New(x.Value.Rows, w.Value.Rows)
	gemm(tensor.NoTrans, tensor.Trans, x.Value, w.Value, 0, out)
	return tp.Custom("Linear", out, func(g tensor.Matrix, grads []tensor.Matrix) error {
		if dx := grads[0]; dx.Data != nil {
			gemm(tensor.NoTrans, tensor.NoTrans, g, w.Value, 1, dx)
		}
		if dw := grads[1]; dw.Data != nil {
			gemm(tensor.Trans, tensor.NoTrans, g, x.Value, 1, dw)
		}
		return nil
	}, x, w)
}

// transformFirst says whether a layer from in to out features multiplies
// by its weight before aggregating (exchanging out-wide rows) or after
// (in-wide rows): whichever sends fewer bytes. Rows that need no gradient
// (the input features) cross once; others also carry their gradient back.
func transformFirst(h *autograd.Var, in, out int) bool {
	if h.RequiresGrad() {
		return out < in
	}
	return in > 2*out
}

// dropout is dropout keyed by global node id (see dropFactors) on the
// input rows of t.
func (x *exchanger) dropout(tp *autograd.Tape, h *autograd.Var, p float64, seed uint64, t *topo) *autograd.Var {
	if tp.NoGrad() || p == 0 {
		return h
	}
	rows := x.s.GlobalIDs
	if t.src != nil {
		rows = make([]int32, len(t.src))
		for i, v := range t.src {
			rows[i] = x.s.GlobalIDs[v]
		}
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

// selectRows returns rows pos of h (pos nil: h itself).
func selectRows(tp *autograd.Tape, h *autograd.Var, pos []int32) *autograd.Var {
	if pos == nil {
		return h
	}
	out := tensor.New(len(pos), h.Value.Cols)
	for i, r := range pos {
		copy(out.Row(i), h.Value.Row(int(r)))
	}
	return tp.Custom("SelectRows", out, func(g tensor.Matrix, grads []tensor.Matrix) error {
		if grads[0].Data != nil {
			scatterAdd(grads[0], pos, g)
		}
		return nil
	}, h)
}

// plan returns the topo of aggregation l of steps: the whole shard, or
// with MFG the receptive field of the training nodes.
func (x *exchanger) plan(loops bool, l, steps int) (*topo, error) {
	if !x.mfg {
		return x.s.fullTopo(loops), nil
	}
	ts, err := x.s.mfgTopos(x.ctx, loops, steps)
	if err != nil {
		return nil, err
	}
	return ts[l], nil
}

// input returns the features of t's input rows.
func (x *exchanger) input(tp *autograd.Tape, t *topo) *autograd.Var {
	if t.src == nil {
		return tp.Const(x.s.X)
	}
	m := tensor.New(len(t.src), x.s.X.Cols)
	for i, v := range t.src {
		copy(m.Row(i), x.s.X.Row(int(v)))
	}
	return tp.Const(m)
}

// forward runs m over the shard and returns the logits of its inner
// nodes; train enables dropout with the step's seed, drawn as
// nn.Model.Forward draws it in one process.
func (x *exchanger) forward(tp *autograd.Tape, m *nn.Model, train bool, seed uint64) (*autograd.Var, *topo, error) {
	c := m.Config
	if c.Kind == nn.APPNP {
		return x.appnp(tp, m, train, seed)
	}
	loops := c.Kind != nn.SAGE
	steps := len(m.Layers)
	var h *autograd.Var
	var t *topo
	for l, layer := range m.Layers {
		var err error
		if t, err = x.plan(loops, l, steps); err != nil {
			return nil, nil, err
		}
		if l == 0 {
			h = x.input(tp, t)
		}
		if train && c.Dropout > 0 {
			h = x.dropout(tp, h, c.Dropout, rng.Derive(seed, uint64(2*l)), t)
		}
		ls := rng.Derive(seed, uint64(2*l+1))
		last := l == len(m.Layers)-1
		switch ly := layer.(type) {
		case *nn.GCNConv:
			if h, err = x.fused(tp, fusedLayer{agg: x.s.gcnAgg(), wl: ly.Lin, b: ly.Bias, relu: !last}, h, t); err != nil {
				return nil, nil, err
			}
			continue
		case *nn.SAGEConv:
			if h, err = x.fused(tp, fusedLayer{agg: x.s.meanAgg(), wl: ly.LinL, wr: ly.LinR, b: ly.BiasL, relu: !last}, h, t); err != nil {
				return nil, nil, err
			}
			continue
		case *nn.GATConv:
			if h, err = x.gat(tp, ly, h, train, ls, t); err != nil {
				return nil, nil, err
			}
		default:
			return nil, nil, fmt.Errorf("sar: no distributed forward pass for layer %T", layer)
		}
		if !last {
			h = tp.ELU(h, 1) // GAT's activation (GCN and SAGE apply ReLU fused)
		}
	}
	return h, t, nil
}

// appnp is APPNP: the MLP on the inner rows, then K propagation steps
// h = (1-α)·Â·h + α·h0 over the distributed graph.
func (x *exchanger) appnp(tp *autograd.Tape, m *nn.Model, train bool, seed uint64) (*autograd.Var, *topo, error) {
	c := m.Config
	steps := len(m.Layers) - 1
	t, err := x.plan(true, 0, steps)
	if err != nil {
		return nil, nil, err
	}
	h := x.input(tp, t)
	if train && c.Dropout > 0 {
		h = x.dropout(tp, h, c.Dropout, rng.Derive(seed, 0), t)
	}
	p := m.Layers[0].Params() // lin1.weight, lin1.bias, lin2.weight, lin2.bias
	if len(p) != 4 {
		return nil, nil, fmt.Errorf("sar: APPNP's MLP has %d parameters, want 4", len(p))
	}
	h = tp.ReLU(tp.AddBias(linear(tp, h, p[0]), p[1]))
	if train && c.Dropout > 0 {
		h = x.dropout(tp, h, c.Dropout, rng.Derive(seed, 1), t)
	}
	h0 := tp.AddBias(linear(tp, h, p[2]), p[3])
	alpha := float32(c.Alpha)
	h = h0
	var pos []int32 // rows of h0 under the current rows (nil: the same)
	for k := 0; k < steps; k++ {
		if t, err = x.plan(true, k, steps); err != nil {
			return nil, nil, err
		}
		agg, err := x.aggregate(tp, x.s.gcnAgg(), h, t)
		if err != nil {
			return nil, nil, err
		}
		if t.dstInSrc != nil {
			next := make([]int32, len(t.dstInSrc))
			for i, r := range t.dstInSrc {
				if pos != nil {
					r = pos[r]
				}
				next[i] = r
			}
			pos = next
		}
		h = tp.Add(tp.Scale(agg, 1-alpha), tp.Scale(selectRows(tp, h0, pos), alpha))
	}
	return h, t, nil
}

// StepResult is one training step's outcome, the same on every rank.
type StepResult struct {
	// Loss is the mean cross-entropy over all training nodes; Correct
	// counts those predicted right (of Total).
	Loss           float64
	Correct, Total int
	// PeakFetchedBytes is the largest volume of other ranks' rows this
	// rank held at once.
	PeakFetchedBytes int64
}

// Engine runs distributed full-graph steps on one rank's shard.
type Engine struct {
	Shard *Shard
	Mode  Mode
	// TrackHeap samples the live Go heap during every step (after each
	// aggregation and at the end of forward and backward), for
	// PeakHeapBytes; each sample is a garbage collection (benchmarks).
	TrackHeap bool
	// MFG computes a training step's layers on the receptive field of the
	// training nodes only (message flow graphs, SAR's construct_mfgs):
	// the same loss and gradients for less compute, memory and traffic
	// when few nodes are labelled. Evaluation runs on every node.
	MFG      bool
	comm     *counter
	peakHeap int64
	// The training steps' (Grad's) share of the counters: their number,
	// the rows and gradients they sent, and the analytic minimum of those
	// (see Traffic).
	steps, stepExchange, minStepExchange int64
}

// PeakHeapBytes returns the largest live Go heap seen during the steps
// since the engine was made (with TrackHeap).
func (e *Engine) PeakHeapBytes() int64 { return e.peakHeap }

// noteHeap records the live heap: with TrackHeap, it collects garbage
// first, so the figure is what the step holds, not the collector's slack.
func (e *Engine) noteHeap() {
	if e.TrackHeap {
		e.peakHeap = max(e.peakHeap, LiveHeap())
	}
}

// LiveHeap collects garbage and returns the bytes of live heap objects.
func LiveHeap() int64 {
	runtime.GC()
	return memstat.HeapInUse()
}

// MinBytesPerStep is the analytic minimum of the bytes this rank sends
// for the aggregations of one full-graph training step of m: its boundary
// rows (those other ranks read) once per layer forward, at the layer's
// narrower width (its input or output: a layer may multiply by its weight
// before or after aggregating), and the gradients of the rows it fetched
// once per layer backward, where one flows (not into the input features);
// GAT sends its attention terms too, and in sar mode its rows again for
// the backward pass.
func (e *Engine) MinBytesPerStep(m *nn.Model) int64 {
	fwd, bwd := int64(e.Shard.Boundary())*4, int64(e.Shard.Fetched())*4
	c := m.Config
	if c.Kind == nn.APPNP {
		return (fwd + bwd) * int64(c.Out*(len(m.Layers)-1))
	}
	var bytes int64
	in := c.In
	for l, layer := range m.Layers {
		out := layer.OutDim()
		switch ly := layer.(type) {
		case *nn.GATConv:
			hw, ew := int64(ly.Heads*ly.Out), int64(ly.Heads)
			bytes += (fwd + bwd) * (hw + ew)
			if e.Mode == SAR {
				bytes += fwd * hw
			}
		default:
			switch {
			case l > 0:
				bytes += (fwd + bwd) * int64(min(in, out))
			case in > 2*out: // the input features, multiplied first
				bytes += (fwd + bwd) * int64(out)
			default: // the input features, aggregated first: no gradient
				bytes += fwd * int64(in)
			}
		}
		in = out
	}
	return bytes
}

// NewEngine returns an engine over s in mode.
func NewEngine(s *Shard, mode Mode) *Engine {
	return &Engine{Shard: s, Mode: mode, comm: &counter{Comm: s.comm}}
}

// BytesSent returns the bytes this rank has sent: rows and gradients of
// the aggregations (exactly), and the parameter all-reduces (at the ring's
// cost).
func (e *Engine) BytesSent() (exchange, reduce int64) {
	return e.comm.exchange.Load(), e.comm.reduce.Load()
}

func (e *Engine) exchanger(ctx context.Context) *exchanger {
	return &exchanger{ctx: ctx, s: e.Shard, comm: e.comm, mode: e.Mode, note: e.noteHeap}
}

// Grad computes the loss and the gradients of one full-graph step with
// dropout seed seed, leaving every parameter's Grad summed over all ranks
// (each the gradient of the mean loss over all training nodes, as one
// process computes it). Every rank calls it.
func (e *Engine) Grad(ctx context.Context, m *nn.Model, seed uint64) (StepResult, error) {
	s := e.Shard
	ex0 := e.comm.exchange.Load()
	defer func() {
		e.steps++
		e.stepExchange += e.comm.exchange.Load() - ex0
		if !e.MFG {
			e.minStepExchange += e.MinBytesPerStep(m)
		}
	}()
	params := m.Params()
	autograd.ZeroGrad(params...)
	x := e.exchanger(ctx)
	x.mfg = e.MFG
	tp := autograd.NewTape()
	logits, t, err := x.forward(tp, m, true, seed)
	if err != nil {
		return StepResult{}, err
	}
	e.noteHeap()
	isTrain := make([]bool, s.NumInner())
	for _, v := range s.Train {
		isTrain[v] = true
	}
	labels := make([]int32, t.outRows())
	for i := range labels {
		labels[i] = -1
		if v := t.outInner(i); isTrain[v] {
			labels[i] = s.Labels[v]
		}
	}
	correct, k := countCorrect(logits.Value, labels)
	loss := tp.CrossEntropy(logits, labels)
	l := float64(loss.Scalar())
	g := tensor.New(1, 1)
	if s.NumTrain > 0 {
		g.Data[0] = float32(k) / float32(s.NumTrain)
	}
	// Every rank runs backward, even without training nodes: the
	// aggregations' backward passes exchange gradients.
	if err := tp.BackwardFrom(loss, g); err != nil {
		return StepResult{}, err
	}
	e.noteHeap()
	// One all-reduce for every gradient, one (float64) for the loss and
	// counts.
	n := 0
	for _, p := range params {
		n += len(p.Value.Data)
	}
	buf := make([]float32, 0, n)
	for _, p := range params {
		if len(p.Grad.Data) == 0 {
			p.Grad = tensor.New(p.Value.Rows, p.Value.Cols)
		}
		buf = append(buf, p.Grad.Data...)
	}
	if k == 0 {
		l = 0
	}
	stats := []float64{l * float64(k), float64(correct), float64(k)}
	if s.Size > 1 {
		if err := e.comm.AllReduce(ctx, buf, dist.Sum); err != nil {
			return StepResult{}, err
		}
		if err := e.comm.AllReduce(ctx, stats, dist.Sum); err != nil {
			return StepResult{}, err
		}
	}
	off := 0
	for _, p := range params {
		copy(p.Grad.Data, buf[off:off+len(p.Grad.Data)])
		off += len(p.Grad.Data)
	}
	tot := int(stats[2])
	res := StepResult{Correct: int(stats[1]), Total: tot, PeakFetchedBytes: x.peakFetched}
	if tot > 0 {
		res.Loss = stats[0] / float64(tot)
	}
	if math.IsNaN(res.Loss) || math.IsInf(res.Loss, 0) {
		return res, fmt.Errorf("loss is %v: lower the learning rate or check the features for NaN/Inf", res.Loss)
	}
	return res, nil
}

// Logits runs the model without dropout and returns the logits of the
// shard's inner nodes (rows in the shard's order, GlobalIDs). Every rank
// calls it.
func (e *Engine) Logits(ctx context.Context, m *nn.Model) (tensor.Matrix, error) {
	tp := autograd.NewInferenceTape()
	out, _, err := e.exchanger(ctx).forward(tp, m, false, 0)
	if err != nil {
		return tensor.Matrix{}, err
	}
	return out.Value, nil
}

// countCorrect counts the labelled rows (label >= 0) whose argmax is the
// label, and the labelled rows.
func countCorrect(logits tensor.Matrix, labels []int32) (correct, total int) {
	for i, y := range labels {
		if y < 0 {
			continue
		}
		total++
		row := logits.Row(i)
		best := 0
		for j, v := range row {
			if v > row[best] {
				best = j
			}
		}
		if best == int(y) {
			correct++
		}
	}
	return correct, total
}

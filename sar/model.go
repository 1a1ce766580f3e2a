package sar

import (
	"context"
	"fmt"
	"math"
	"runtime"

	"github.com/graphmill/graphmill/dist"
	"github.com/graphmill/graphmill/engine"
	"github.com/graphmill/graphmill/internal/memstat"
	"github.com/graphmill/graphmill/nn"
	"github.com/graphmill/graphmill/tensor"
	"github.com/graphmill/graphmill/tensor/autograd"
)

// NewModel builds a model for the shard's dataset exactly as a single
// process builds it from the same config (same seed, same weights). Any
// model whose layers are written with nn's block ops runs distributed;
// the forward pass reads no degree table (the shard's ops use the whole
// graph's degrees), so none is held, and the mean log-degree some models
// read is computed over all ranks. Every rank calls it.
func NewModel(s *Shard, c nn.Config) (*nn.Model, error) {
	c.In, c.Out = s.FeatureDim, s.NumClasses
	if c.AvgLogDegree == 0 {
		v := []float64{0, float64(s.NumInner())}
		for _, d := range s.InDeg {
			v[0] += math.Log(float64(d) + 1)
		}
		if s.Size > 1 {
			if err := s.comm.AllReduce(context.Background(), v, dist.Sum); err != nil {
				return nil, err
			}
		}
		if v[1] > 0 {
			c.AvgLogDegree = v[0] / v[1]
		}
	}
	return nn.NewModel(c, []float32{})
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
	lastMin                              int64 // the last step's analytic minimum
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

// MinBytesPerStep is the analytic minimum of the bytes this rank sent for
// the aggregations of its last full-graph training step (0 before the
// first): every op's boundary rows once forward, at the op's width (a
// fused layer's narrower of input and output: it may multiply by its
// weight before or after aggregating), and the gradients of the rows it
// fetched once backward, where one flows (not into the input features);
// GAT's attention sends its attention terms too, and in sar mode its rows
// again for the backward pass.
func (e *Engine) MinBytesPerStep(*nn.Model) int64 { return e.lastMin }

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
	x := e.exchanger(ctx)
	x.mfg = e.MFG
	defer func() {
		e.steps++
		e.stepExchange += e.comm.exchange.Load() - ex0
		e.lastMin = x.minBytes
		if !e.MFG {
			e.minStepExchange += x.minBytes
		}
	}()
	params := m.Params()
	autograd.ZeroGrad(params...)
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
		return res, engine.Diverged(fmt.Sprintf("loss is %v", res.Loss))
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

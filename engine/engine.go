// Package engine runs one step of a GNN on a batch.MiniBatch: forward,
// loss, backward and the optimiser step for training, forward alone for
// inference, cut into micro-batches when the step would exceed a memory
// bound. It knows nothing of epochs, samplers or evaluation: package train
// runs the loops above it, and a remote trainer can feed it decoded
// batches.
//
//	e := engine.New(model, opt, engine.Config{Bound: 2 << 30, Features: src})
//	for it.Next() {
//		mb := it.Batch()
//		res, err := e.Train(ctx, mb, engine.Step{Seed: seed})
//		mb.Release()
//		...
//	}
//
// The memory bound (--max-memory). Before running a batch the engine
// computes the bytes its step will allocate (nn.Model.StepBytes for the
// activations, dropout masks and gradients, plus what the batch's own
// copies and index arrays take). A batch over the bound is cut into
// micro-batches: its seeds are split, and for every piece the sub-MFG that
// computes those seeds is extracted from the batch's blocks (walking the
// layers from the output back to the input, keeping only the sources the
// kept destinations read) as a MiniBatch of its own. The pieces run one
// after another, their losses weighted by their share of the labelled
// seeds and their gradients added up, and the optimiser steps once: the
// gradients are those of the unsplit batch (up to float32 rounding),
// because every kept destination sees all of the in-edges it has in the
// batch. Dropout masks are drawn per micro-batch, so with dropout on the
// two agree in distribution only.
package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"unsafe"

	"github.com/graphmill/graphmill/batch"
	"github.com/graphmill/graphmill/feature"
	"github.com/graphmill/graphmill/graph"
	"github.com/graphmill/graphmill/internal/half"
	"github.com/graphmill/graphmill/internal/rng"
	"github.com/graphmill/graphmill/nn"
	"github.com/graphmill/graphmill/tensor"
	"github.com/graphmill/graphmill/tensor/autograd"
)

// Config configures an Engine.
type Config struct {
	// Bound is the bytes a step may allocate (0: no bound): a batch over it
	// runs as micro-batches.
	Bound int64
	// Features serves the input rows of batches that carry none (empty
	// MiniBatch.Features): the step gathers them itself, per micro-batch,
	// so that the bound holds for them too.
	Features feature.Source
	// Sampled makes the bound's errors advise lowering the fanouts.
	Sampled bool
	// NodeDropout keys dropout masks by node id instead of row position
	// (nn.Block.NodeDropout): sampled training sets it, so that a node's
	// row is dropped alike whichever batch, rank or process computes it
	// in a step, which lets a distributed step reproduce the single
	// process's.
	NodeDropout bool
	// KeyIDs, when set with NodeDropout, maps every node id of the graph
	// to the id its dropout masks are keyed by (nn.Block.Keys): a packed
	// dataset's original ids.
	KeyIDs []int32
	// SparseInput, when set, is the nonzeros (tensor.NonZeros) of the
	// feature rows Data: a step whose input rows are exactly Data (an
	// unsplit full-graph step) hands the model an input that carries them,
	// so that input dropout and the first product skip the zeros
	// (autograd.Var.Sparse).
	SparseInput *SparseRows
}

// SparseRows is a matrix's values (Data) and their nonzeros.
type SparseRows struct {
	Data []float32
	CSR  *tensor.CSR

	dense tensor.Matrix // the input dropout's output (autograd.Var.SparseDense), made on first use
}

// GradSync all-reduces gradients for data-parallel training (train's
// implementation moves them over a train.Parallel).
type GradSync interface {
	// Begin starts a step whose local gradients are means over labelled
	// destinations.
	Begin(labelled int)
	// Ready is the tape's GradReady hook (set on unsplit steps, so that
	// all-reduces overlap backward).
	Ready(v *autograd.Var)
	// Finish completes the all-reduce and returns the global labelled
	// count, loss sum and correct count.
	Finish(lossSum float64, correct int) (labelled int, loss float64, right int, err error)
}

// Engine runs steps of one model with one optimiser. It is not safe for
// concurrent use (Infer with another model may run concurrently with
// Train: it uses scratch of its own).
type Engine struct {
	m   *nn.Model
	opt nn.Optimizer
	cfg Config

	// Sync, when set, all-reduces every training step's gradients.
	Sync GradSync
	// AfterBackward, when set, is called after every backward pass (while
	// the step's activations and gradients are alive: the heap's peak).
	AfterBackward func()

	mark []int32 // scratch of Train's planner

	// ws holds every training step's activations, gradients and scratch
	// (reset at the start of each forward-backward piece), so
	// steady-state steps allocate nothing large; nil under a bound, where
	// each matrix is allocated and dropped as the bound's plan counts.
	ws *tensor.Workspace
	// ts holds one transpose per layer, rebuilt in place every step.
	ts []*tensor.Transposed
}

// New returns an engine for m and opt (opt may be nil for an engine that
// only infers).
func New(m *nn.Model, opt nn.Optimizer, cfg Config) *Engine {
	e := &Engine{m: m, opt: opt, cfg: cfg}
	if cfg.Bound == 0 {
		e.ws = tensor.NewWorkspace(0)
	}
	return e
}

// Model returns the engine's model.
func (e *Engine) Model() *nn.Model { return e.m }

// SetSparseInput sets Config.SparseInput (nil: none).
func (e *Engine) SetSparseInput(s *SparseRows) { e.cfg.SparseInput = s }

// Step describes one training step.
type Step struct {
	// Seed seeds dropout (micro-batch k uses rng.Derive(Seed, k)).
	Seed uint64
	// LabelledOnly says that only labelled seeds need computing
	// (full-graph training); otherwise a micro-batched step computes every
	// seed (GNNAutoScale pushes them all to its histories).
	LabelledOnly bool
	// Epoch and Index name the step in errors.
	Epoch, Index int
	// Overwrite says that the caller is done with the batch's feature
	// rows once the step has started (it releases the batch after it):
	// input dropout then works in place on them instead of writing a new
	// matrix.
	Overwrite bool
	// InputDropped says that the batch's feature rows carry layer 0's
	// input dropout already (nn.Model.InputDropout, node-keyed, drawn with
	// rng.Derive(Seed, 0)): applied by the loader as it gathered them, while
	// they were in cache. A micro-batched step keeps them for every piece,
	// where it would draw each piece's from the piece's seed, so a caller
	// whose steps may split (a memory bound) should not drop ahead.
	InputDropped bool
}

// Result is what a step computed.
type Result struct {
	// Loss is the mean over the labelled seeds; Correct of them were
	// predicted right, out of Total.
	Loss           float64
	Correct, Total int
	// Micro is the number of micro-batches run (1: unsplit).
	Micro int
	// Fresh holds every hidden layer's rows of all seeds, for batches with
	// history sources (GNNAutoScale); nil otherwise. After Train they are
	// valid until the next Train (they may live in the step's workspace).
	Fresh []tensor.Matrix
	// Logits holds the logits of all seeds (Infer only).
	Logits tensor.Matrix
}

// Train runs forward and backward on mb, micro-batched when it exceeds the
// bound, and applies one optimiser step. A batch without labelled seeds is
// only run forward (GAS still needs its fresh rows).
func (e *Engine) Train(ctx context.Context, mb *batch.MiniBatch, st Step) (Result, error) {
	if e.opt == nil {
		return Result{}, errors.New("engine: training needs an optimiser")
	}
	v, err := e.prepare(mb, st.LabelledOnly)
	if err != nil {
		return Result{}, err
	}
	if err := checkLabels(e.m, mb, v.labels); err != nil {
		return Result{}, err
	}
	if err := checkDegrees(e.m, mb, v.ids); err != nil {
		return Result{}, err
	}
	if st.InputDropped {
		switch {
		case !v.carried:
			return Result{}, errors.New("engine: the step says the batch's features carry the input dropout, but it carries no features")
		case !e.cfg.NodeDropout:
			return Result{}, errors.New("engine: features dropped ahead need node-keyed dropout (Config.NodeDropout)")
		case e.m.InputDropout() == 0:
			return Result{}, errors.New("engine: the step says the batch's features carry the input dropout, but the model applies none to its input")
		}
		v.dropped = true
	}
	for i, b := range v.blocks {
		if i == len(e.ts) {
			e.ts = append(e.ts, &tensor.Transposed{})
		}
		b.CSR.TScratch = e.ts[i]
	}
	sp := e.splitter(e.m, &e.mark)
	plan, err := sp.plan(v, true)
	if err != nil {
		return Result{}, err
	}
	return e.trainPlan(ctx, sp, v, plan, st)
}

// StepBytes returns what a training step on mb allocates unsplit, by the
// memory planner that Config.Bound is held to (its input rows included
// when mb carries no features).
func (e *Engine) StepBytes(mb *batch.MiniBatch) (int64, error) {
	v, err := e.prepare(mb, true)
	if err != nil {
		return 0, err
	}
	return e.splitter(e.m, &e.mark).wholeBytes(v, true), nil
}

// Infer runs m (the engine's model when nil) forward on mb without
// gradients, micro-batched when it exceeds the bound, and returns the
// logits and (GAS) fresh rows of all seeds.
func (e *Engine) Infer(ctx context.Context, m *nn.Model, mb *batch.MiniBatch) (Result, error) {
	if m == nil {
		m = e.m
	}
	v, err := e.prepare(mb, false)
	if err != nil {
		return Result{}, err
	}
	if err := checkDegrees(m, mb, v.ids); err != nil {
		return Result{}, err
	}
	var mark []int32
	sp := e.splitter(m, &mark)
	plan, err := sp.plan(v, false)
	if err != nil {
		return Result{}, err
	}
	return e.inferPlan(ctx, sp, v, plan)
}

// view is a MiniBatch as a step reads it.
type view struct {
	mb *batch.MiniBatch
	// blocks holds one block per layer, or one block shared by every
	// layer (full-graph and GAS batches, whose blocks are all the same).
	blocks []*nn.Block
	// ids holds the input nodes' local ids.
	ids []int32
	// x holds the input rows when the batch carries them (carried);
	// otherwise the step gathers them from the engine's feature source.
	x       tensor.Matrix
	carried bool
	// halo, for GAS, holds per hidden layer l the history rows of the
	// sources of layer l+1 beyond layer l's destinations (nil otherwise).
	halo         []tensor.Matrix
	labels       []int32
	labelledOnly bool
	// overwrite says the step may overwrite x (Step.Overwrite, unsplit).
	overwrite bool
	// dropped says x carries layer 0's input dropout (Step.InputDropped).
	dropped bool
}

func (e *Engine) splitter(m *nn.Model, mark *[]int32) *splitter {
	return &splitter{m: m, bound: e.cfg.Bound, sampled: e.cfg.Sampled, nodeDropout: e.cfg.NodeDropout, keyIDs: e.cfg.KeyIDs, mark: mark}
}

// prepare checks mb's shape against the model and wraps it for a step.
func (e *Engine) prepare(mb *batch.MiniBatch, labelledOnly bool) (*view, error) {
	if e.m == nil || mb == nil {
		return nil, errors.New("engine: no model or no batch")
	}
	L := len(e.m.Layers)
	if len(mb.Blocks) != L {
		return nil, fmt.Errorf("engine: batch of %d blocks for a model of %d layers", len(mb.Blocks), L)
	}
	if mb.Labels != nil && len(mb.Labels) != len(mb.Seeds) {
		return nil, fmt.Errorf("engine: %d labels for %d seeds", len(mb.Labels), len(mb.Seeds))
	}
	ids, err := mb.Local()
	if err != nil {
		return nil, err
	}
	v := &view{mb: mb, ids: ids, labels: mb.Labels, labelledOnly: labelledOnly}
	if v.labels == nil {
		v.labels = make([]int32, len(mb.Seeds))
		for i := range v.labels {
			v.labels[i] = -1
		}
	}
	if !mb.Features.Empty() {
		if mb.Features.Dim != e.m.Config.In {
			return nil, fmt.Errorf("engine: batch features have %d values per row; the model reads %d", mb.Features.Dim, e.m.Config.In)
		}
		v.x, v.carried = rowsMatrix(&mb.Features), true
	} else if e.cfg.Features == nil {
		return nil, errors.New("engine: the batch carries no features and the engine has no feature source")
	} else if e.cfg.Features.Dim() != e.m.Config.In {
		return nil, fmt.Errorf("engine: feature source has %d values per row; the model reads %d", e.cfg.Features.Dim(), e.m.Config.In)
	}
	if mb.Halo != nil {
		v.halo = make([]tensor.Matrix, len(mb.Halo))
		for l := range mb.Halo {
			r := &mb.Halo[l].Rows
			if r.Empty() {
				return nil, fmt.Errorf("engine: the history rows of layer %d were not pulled", l+1)
			}
			if r.Dim != e.m.Layers[l].OutDim() {
				return nil, fmt.Errorf("engine: history rows of layer %d have %d values; layer %d outputs %d", l+1, r.Dim, l, e.m.Layers[l].OutDim())
			}
			v.halo[l] = rowsMatrix(r)
		}
	}
	v.blocks, err = nnBlocks(mb, ids, e.cfg.NodeDropout, e.cfg.KeyIDs)
	return v, err
}

// checkLabels returns an error naming the first seed whose label is not
// below m's class count (the loss would index past its logits);
// negative labels are unlabelled seeds.
func checkLabels(m *nn.Model, mb *batch.MiniBatch, labels []int32) error {
	classes := int32(m.Layers[len(m.Layers)-1].OutDim())
	for i, y := range labels {
		if y >= classes {
			return fmt.Errorf("engine: seed %d (node %d) has label %d, but the model predicts %d classes (labels 0 to %d; negative: unlabelled)", i, mb.Seeds[i], y, classes, classes-1)
		}
	}
	return nil
}

// checkDegrees returns an error when m normalises by in-degrees and its
// degree table does not cover the nodes the batch's blocks read (its input
// nodes and history rows).
func checkDegrees(m *nn.Model, mb *batch.MiniBatch, ids []int32) error {
	if !m.NeedsDegrees() {
		return nil
	}
	top := int64(-1)
	for _, v := range ids {
		top = max(top, int64(v))
	}
	for _, h := range mb.Halo {
		for _, u := range h.Nodes {
			top = max(top, u)
		}
	}
	if top >= math.MaxInt32 {
		return nil // not a local id: nnBlocks refuses it
	}
	return m.CheckDegrees(int(top) + 1)
}

// nnBlocks wraps mb's blocks for the layers: one shared nn.Block when
// every layer has the same block (its derived index arrays are then built
// once), else one per layer, each with the local ids of its sources.
//
// With nodeDropout and keyIDs, each block's Keys are keyIDs of its sources.
func nnBlocks(mb *batch.MiniBatch, ids []int32, nodeDropout bool, keyIDs []int32) ([]*nn.Block, error) {
	shared := true
	b0 := &mb.Blocks[0]
	for l := 1; l < len(mb.Blocks); l++ {
		if !sameBlock(b0, &mb.Blocks[l]) {
			shared = false
		}
	}
	n := len(mb.Blocks)
	if shared {
		n = 1
	}
	out := make([]*nn.Block, n)
	for l := range out {
		b := &mb.Blocks[l]
		src := ids[:min(len(ids), b.NumSrc)]
		if h := mb.HaloLen(l); h > 0 {
			fresh := b.NumSrc - h
			if !shared || fresh > len(ids) || !haloIsInput(mb, l, fresh) {
				src = make([]int32, 0, b.NumSrc)
				src = append(src, ids[:fresh]...)
				for _, u := range mb.Halo[l-1].Nodes {
					if u < 0 || u > math.MaxInt32 {
						return nil, fmt.Errorf("engine: history node %d is not a local id", u)
					}
					src = append(src, int32(u))
				}
			}
		}
		if len(src) != b.NumSrc {
			return nil, fmt.Errorf("engine: block %d has %d sources but the batch names %d", l, b.NumSrc, len(src))
		}
		out[l] = &nn.Block{CSR: &tensor.CSR{Indptr: b.Indptr, Indices: b.Indices, Weights: b.Weights, NumSrc: b.NumSrc}, NumDst: b.NumDst, Src: src, NodeDropout: nodeDropout}
		if nodeDropout && keyIDs != nil {
			keys := make([]int32, len(src))
			for i, v := range src {
				keys[i] = keyIDs[v]
			}
			out[l].Keys = keys
		}
	}
	return out, nil
}

// haloIsInput reports whether block l's history sources are the input
// nodes after position fresh (GAS batches, whose inputs are the batch's
// nodes and then its halo).
func haloIsInput(mb *batch.MiniBatch, l, fresh int) bool {
	h := mb.Halo[l-1].Nodes
	if fresh+len(h) != len(mb.InputNodes) {
		return false
	}
	if len(h) > 0 && &h[0] == &mb.InputNodes[fresh] {
		return true
	}
	for i, u := range h {
		if mb.InputNodes[fresh+i] != u {
			return false
		}
	}
	return true
}

func sameBlock(a, b *graph.Block) bool {
	return a.NumSrc == b.NumSrc && a.NumDst == b.NumDst && len(a.Indices) == len(b.Indices) &&
		unsafe.SliceData(a.Indptr) == unsafe.SliceData(b.Indptr) && unsafe.SliceData(a.Indices) == unsafe.SliceData(b.Indices) &&
		unsafe.SliceData(a.Weights) == unsafe.SliceData(b.Weights)
}

// rowsMatrix returns r as a float32 matrix: r's own values for float32,
// a converted copy for 16-bit rows.
func rowsMatrix(r *batch.Rows) tensor.Matrix {
	if r.DType == batch.Float32 {
		return tensor.Matrix{Rows: r.Rows, Cols: r.Dim, Data: r.F32}
	}
	out := tensor.New(r.Rows, r.Dim)
	if r.DType == batch.Float16 {
		half.DecodeF16(out.Data, r.Bits)
	} else {
		half.DecodeBF16(out.Data, r.Bits)
	}
	return out
}

// input returns v's input rows: carried by the batch, or gathered.
func (e *Engine) input(ctx context.Context, v *view, ws *tensor.Workspace) (tensor.Matrix, error) {
	if v.carried {
		return v.x, nil
	}
	return gatherInto(ctx, e.cfg.Features, v.ids, ws)
}

// Gather copies the rows ids of src into a new matrix.
func Gather(ctx context.Context, src feature.Source, ids []int32) (tensor.Matrix, error) {
	return gatherInto(ctx, src, ids, nil)
}

// gatherInto is Gather into a matrix of ws (nil: a new matrix).
func gatherInto(ctx context.Context, src feature.Source, ids []int32, ws *tensor.Workspace) (tensor.Matrix, error) {
	out := ws.Get(len(ids), src.Dim()) // every row is written
	if err := src.Gather(ctx, ids, out.Data); err != nil {
		return tensor.Matrix{}, err
	}
	return out, nil
}

// forward runs m over v: its input rows gathered when v names them, and
// GAS's history rows stacked below each hidden layer's fresh rows. It
// returns the logits of the last block's destinations and every hidden
// layer's output.
func (e *Engine) forward(ctx context.Context, tp *autograd.Tape, m *nn.Model, v *view, train bool, seed uint64) (*autograd.Var, []*autograd.Var, error) {
	x, err := e.input(ctx, v, tp.Workspace)
	if err != nil {
		return nil, nil, err
	}
	in := tp.Const(x)
	if v.overwrite {
		in = tp.ConstOwned(x)
	}
	if si := e.cfg.SparseInput; si != nil && len(x.Data) > 0 && len(x.Data) == len(si.Data) && &x.Data[0] == &si.Data[0] {
		in.Sparse = si.CSR
		if train {
			if si.dense.Data == nil {
				si.dense = tensor.New(x.Rows, x.Cols)
			}
			in.SparseDense = si.dense
		}
	}
	logits, hidden := m.ForwardStacked(tp, v.blocks, in, v.halo, train, seed, v.dropped)
	return logits, hidden, nil
}

// trainPlan is Train with the micro-batches given (nil: unsplit).
func (e *Engine) trainPlan(ctx context.Context, sp *splitter, v *view, plan [][]int32, st Step) (out Result, err error) {
	m := e.m
	params := m.Params()
	autograd.ZeroGrad(params...)
	labelled := 0
	for _, y := range v.labels {
		if y >= 0 {
			labelled++
		}
	}
	if e.Sync != nil {
		e.Sync.Begin(labelled) // data-parallel: gradients all-reduced below
	}
	// run does forward and backward of one piece, its loss weighted by its
	// share of the labelled destinations.
	run := func(w *view, seed uint64) ([]*autograd.Var, error) {
		tp := autograd.NewTape()
		if e.ws != nil {
			if e.ws.Cap() == 0 {
				// Sized from the memory planner before the first step, so
				// even that one does not overflow into extra chunks.
				e.ws.Reserve(int(sp.wholeBytes(w, true) / 4))
			}
			// The last piece's matrices are no longer used: its hidden
			// rows were copied out (micro-batches) or consumed by the
			// caller before this step (GAS's histories).
			e.ws.Reset()
			tp.Workspace = e.ws
		}
		if e.Sync != nil && plan == nil {
			tp.GradReady = e.Sync.Ready // overlap the all-reduce with backward
		}
		logits, hidden, err := e.forward(ctx, tp, m, w, true, seed)
		if err != nil {
			return nil, err
		}
		c, k := countCorrect(logits.Value, w.labels)
		out.Correct, out.Total = out.Correct+c, out.Total+k
		if k == 0 {
			return hidden, nil
		}
		loss := tp.CrossEntropy(logits, w.labels)
		l := float64(loss.Scalar())
		if math.IsNaN(l) || math.IsInf(l, 0) {
			return nil, Diverged(fmt.Sprintf("loss is %v at epoch %d, step %d", l, st.Epoch, st.Index))
		}
		g := tensor.New(1, 1)
		g.Data[0] = float32(k) / float32(labelled)
		if err := tp.BackwardFrom(loss, g); err != nil {
			return nil, err
		}
		out.Loss += l * float64(k) / float64(labelled)
		if e.AfterBackward != nil {
			e.AfterBackward()
		}
		return hidden, nil
	}
	if plan == nil {
		out.Micro = 1
		v.overwrite = st.Overwrite && v.carried
		hidden, err := run(v, st.Seed)
		if err != nil {
			return out, err
		}
		out.Fresh = freshRows(v, hidden)
	} else {
		out.Micro, out.Fresh = len(plan), newFresh(v, m)
		for k, p := range plan {
			w, err := sp.sub(v, p)
			if err != nil {
				return out, err
			}
			hidden, err := run(w, rng.Derive(st.Seed, uint64(k)))
			if err != nil {
				return out, err
			}
			scatterRows(out.Fresh, hidden, p)
		}
	}
	if e.Sync != nil {
		// Every rank steps with the gradients and counts of all ranks.
		var lossSum float64
		if labelled, lossSum, out.Correct, err = e.Sync.Finish(out.Loss*float64(labelled), out.Correct); err != nil {
			return out, err
		}
		out.Total, out.Loss = labelled, lossSum/float64(max(labelled, 1))
	}
	if labelled == 0 {
		return out, nil
	}
	e.opt.Step(params)
	return out, nil
}

// inferPlan is Infer with the micro-batches given (nil: unsplit).
func (e *Engine) inferPlan(ctx context.Context, sp *splitter, v *view, plan [][]int32) (Result, error) {
	m := sp.m
	if plan == nil {
		logits, hidden, err := e.forward(ctx, autograd.NewInferenceTape(), m, v, false, 0)
		if err != nil {
			return Result{}, err
		}
		return Result{Micro: 1, Logits: logits.Value, Fresh: freshRows(v, hidden)}, nil
	}
	out := Result{Micro: len(plan), Logits: tensor.New(len(v.labels), m.Layers[len(m.Layers)-1].OutDim()), Fresh: newFresh(v, m)}
	for _, p := range plan {
		w, err := sp.sub(v, p)
		if err != nil {
			return out, err
		}
		logits, hidden, err := e.forward(ctx, autograd.NewInferenceTape(), m, w, false, 0)
		if err != nil {
			return out, err
		}
		scatterRows([]tensor.Matrix{out.Logits}, []*autograd.Var{logits}, p)
		scatterRows(out.Fresh, hidden, p)
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

// countCorrect counts rows whose argmax equals their (non-negative) label.
func countCorrect(logits tensor.Matrix, labels []int32) (correct, total int) {
	for i, y := range labels {
		if y < 0 {
			continue
		}
		if Argmax(logits.Row(i)) == y {
			correct++
		}
		total++
	}
	return correct, total
}

// Argmax returns the index of the largest value of row (the first on ties).
func Argmax(row []float32) int32 {
	best := 0
	for j := range row {
		if row[j] > row[best] {
			best = j
		}
	}
	return int32(best)
}

// NLL returns -log softmax(row)[y], computed stably in float64: the
// cross-entropy of one row of logits, as evaluation reports it.
func NLL(row []float32, y int32) float64 {
	m := row[0]
	for _, x := range row {
		m = max(m, x)
	}
	var z float64
	for _, x := range row {
		z += math.Exp(float64(x - m))
	}
	return math.Log(z) - float64(row[y]-m)
}

// Blocks wraps mb's blocks for the layers (nn.Block, with the local ids of
// their sources): one block when every layer has the same block, else one
// per layer. Layer-wise inference uses it to run one layer on a batch.
func Blocks(mb *batch.MiniBatch) ([]*nn.Block, error) {
	ids, err := mb.Local()
	if err != nil {
		return nil, err
	}
	return nnBlocks(mb, ids, false, nil)
}

// ErrDiverged is wrapped by the error of a training step whose loss is
// not finite (NaN or infinite): the run cannot go on, but the weights of
// its earlier evaluations are still good.
var ErrDiverged = errors.New("the loss diverged")

// diverged is the error Diverged returns.
type diverged string

func (d diverged) Error() string {
	return string(d) + ": lower the learning rate or check the features for NaN/Inf"
}

func (diverged) Is(target error) bool { return target == ErrDiverged }

// Diverged returns an error wrapping ErrDiverged whose message starts
// with what ("loss is NaN at epoch 3, step 2").
func Diverged(what string) error { return diverged(what) }

package train

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/graphmill/graphmill/batch"
	"github.com/graphmill/graphmill/engine"
	"github.com/graphmill/graphmill/feature"
	"github.com/graphmill/graphmill/history"
	"github.com/graphmill/graphmill/internal/rng"
	"github.com/graphmill/graphmill/nn"
	"github.com/graphmill/graphmill/pipeline"
	"github.com/graphmill/graphmill/safetensors"
	"github.com/graphmill/graphmill/tensor"
)

// gasStepper trains with GNNAutoScale (Fey et al., ICML 2021): every batch
// is a few parts of a METIS-quality partition; each layer computes fresh
// rows for the batch's own nodes and takes its halo's rows (in-neighbours
// outside the batch) from a per-layer history, filled by an inference pass
// before training and refreshed by every batch. Memory depends on the batch,
// not the graph: no layer ever materialises rows for all nodes.
//
// While a batch computes, the next batch is built and its halo rows are
// pulled in a goroutine; the batch pushes its fresh rows only after that
// pull has finished, so the histories each batch sees do not depend on
// timing (runs are reproducible).
type gasStepper struct {
	r      *Runner
	m      *nn.Model
	opt    nn.Optimizer
	parts  [][]int32 // nodes of every part
	hist   []*history.Store
	masked []int32 // labels of training nodes, -1 elsewhere
	filled bool
	e      *engine.Engine
	pipe   *pipeline.Pipeline
	cur    [][]int32 // the node groups of the epoch being iterated
	pos    []int32   // node -> position scratch of the build stage (all -1)
	// groupBuf holds the nodes of every group of the current epoch.
	groupBuf []int32
	// assign is every node's part (the training state records it).
	assign []int32
}

// stateTensors are the partition and the history tables (written a
// chunk of rows at a time, float16 tables as F16), which the training
// state must record: they cannot be derived again.
func (s *gasStepper) stateTensors() []safetensors.Tensor {
	parts := make([]float32, len(s.assign))
	for i, p := range s.assign {
		parts[i] = float32(p)
	}
	ts := []safetensors.Tensor{{Name: "gas/parts", Shape: []int{len(parts)}, Data: parts}}
	for l, h := range s.hist {
		ids := []int32(nil)
		dt := "F32"
		if h.Half() {
			dt = "F16" // exact: the values are float16s
		}
		ts = append(ts, safetensors.Tensor{Name: fmt.Sprintf("gas/history.%d", l), Shape: []int{h.Rows(), h.Dim()}, DType: dt, Rows: func(row0 int, dst []float32) error {
			ids = ids[:0]
			for v := row0; v < row0+len(dst)/h.Dim(); v++ {
				ids = append(ids, int32(v))
			}
			return h.Pull(ids, dst)
		}})
	}
	return ts
}

// restoreState fills the histories from the state (the parts were taken
// from it when the stepper was made): the first epoch then does not fill
// them by inference.
func (s *gasStepper) restoreState(st *State) error {
	for l, h := range s.hist {
		name := fmt.Sprintf("gas/history.%d", l)
		t, ok := st.file.Tensors[name]
		if !ok {
			return fmt.Errorf("%s: the training state has no tensor %s (GAS's history of layer %d)", st.Path, name, l)
		}
		if len(t.Shape) != 2 || t.Shape[0] != h.Rows() || t.Shape[1] != h.Dim() {
			return fmt.Errorf("%s: tensor %s has shape %v, the run's history %d × %d", st.Path, name, t.Shape, h.Rows(), h.Dim())
		}
		// Read from the file a chunk at a time (ReadState leaves the
		// tables there): the resume does not hold a second copy.
		chunk := max(1, (1<<18)/max(h.Dim(), 1))
		ids := make([]int32, 0, chunk)
		var buf []float32
		for lo := 0; lo < h.Rows(); lo += chunk {
			hi := min(h.Rows(), lo+chunk)
			ids = ids[:0]
			for v := lo; v < hi; v++ {
				ids = append(ids, int32(v))
			}
			var rows []float32
			if t.Rows == nil {
				rows = t.Data[lo*h.Dim() : hi*h.Dim()]
			} else {
				buf = slices.Grow(buf[:0], (hi-lo)*h.Dim())[:(hi-lo)*h.Dim()]
				if err := t.Rows(lo, buf); err != nil {
					return fmt.Errorf("%s: %w", st.Path, err)
				}
				rows = buf
			}
			if err := h.Push(ids, rows); err != nil {
				return err
			}
		}
	}
	if _, ok := st.file.Tensors[fmt.Sprintf("gas/history.%d", len(s.hist))]; ok {
		return fmt.Errorf("%s: the training state has more GAS histories than the run's %d", st.Path, len(s.hist))
	}
	s.filled = true
	return nil
}

func (r *Runner) gasStepper(ctx context.Context, m *nn.Model, opt nn.Optimizer) (Stepper, error) {
	cfg := r.cfg
	g := r.g
	if cfg.Parts > g.NumNodes {
		return nil, fmt.Errorf("gas: %d parts for %d nodes: give --parts at most the node count", cfg.Parts, g.NumNodes)
	}
	var assign []int32
	var err error
	if r.resume != nil {
		// The resumed run's parts, which its histories were filled over
		// (the partitioner's may depend on its workers).
		if assign, err = r.resume.gasParts(g.NumNodes); err != nil {
			return nil, err
		}
	} else {
		if r.partitioner == nil {
			return nil, fmt.Errorf("gas mode needs a partitioner (train.WithPartitioner); graphmill train supplies the multilevel one")
		}
		if assign, err = r.partitioner(ctx, g, cfg.Parts, cfg.Seed, cfg.Workers); err != nil {
			return nil, err
		}
	}
	if len(assign) != g.NumNodes {
		return nil, fmt.Errorf("gas: the partitioner assigned %d nodes of %d", len(assign), g.NumNodes)
	}
	s := &gasStepper{r: r, m: m, opt: opt, parts: make([][]int32, cfg.Parts), assign: assign}
	for v, p := range assign {
		if p < 0 || int(p) >= cfg.Parts {
			return nil, fmt.Errorf("gas: the partitioner put node %d in part %d, not in [0, %d)", v, p, cfg.Parts)
		}
		s.parts[p] = append(s.parts[p], int32(v))
	}
	for l := 0; l < len(m.Layers)-1; l++ {
		h, err := history.New(g.NumNodes, m.Layers[l].OutDim(), history.Options{Half: cfg.HalfHistory, Workers: cfg.Workers})
		if err != nil {
			s.Close()
			return nil, err
		}
		s.hist = append(s.hist, h)
	}
	s.masked = r.trainLabels()
	// Steps run one after the other here: the arrays derived from each
	// batch's block are rebuilt in the same memory every step.
	m.ScratchBlocks(true)
	s.e = r.engine(m, opt)
	s.pos = newPos(g.NumNodes)
	// Two buffers: batch i+1 is built and pulled while batch i computes,
	// and batch i+2 only once batch i has pushed its rows and been
	// released (see run).
	s.pipe, err = pipeline.New(pipeline.Config{Buffers: 2, Prefetch: 1, Stages: []pipeline.Stage{
		{Name: "build", Workers: 1, Run: s.build},
		{Name: "pull", Run: s.pull},
	}})
	if err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

func (s *gasStepper) historyBytes() int64 {
	var n int64
	for _, h := range s.hist {
		n += h.Bytes()
	}
	return n
}

func (s *gasStepper) Close() {
	for _, h := range s.hist {
		h.Close()
	}
}

// fill computes every hidden layer for all nodes once (layer-wise
// inference) and stores it in the histories, as GAS does before training.
// Layer l reads layer l-1's rows back from history l-1, so the fill needs
// memory for one batch, not for a layer of all nodes.
func (s *gasStepper) fill(ctx context.Context, m *nn.Model) error {
	cfg := s.r.cfg
	return inferLayers(ctx, m, s.r.g, cfg.EvalBatchSize, cfg.MaxMemoryBytes, len(m.Layers)-1, &historyIO{x: s.r.feat, hist: s.hist})
}

// historyIO is layer-wise inference over GAS's histories: layer l's input
// is the features (l = 0) or history l-1, its output goes to history l.
type historyIO struct {
	x    feature.Source
	hist []*history.Store
}

func (o *historyIO) input(ctx context.Context, l int, ids []int32, full bool) (tensor.Matrix, error) {
	if l == 0 {
		if full {
			return denseRows(ctx, o.x)
		}
		return gatherSource(ctx, o.x, ids, nil)
	}
	return o.pull(o.hist[l-1], ids)
}

func (o *historyIO) inputInto(ctx context.Context, l int, ids []int32, out []float32) error {
	if l == 0 {
		return o.x.Gather(ctx, ids, out)
	}
	return o.hist[l-1].Pull(ids, out)
}

func (o *historyIO) h0(ids []int32) (tensor.Matrix, error) { return o.pull(o.hist[0], ids) }

func (o *historyIO) pull(h *history.Store, ids []int32) (tensor.Matrix, error) {
	out := tensor.New(len(ids), h.Dim())
	return out, h.Pull(ids, out.Data)
}

func (o *historyIO) output(l int, ids []int32, y tensor.Matrix) error {
	return o.hist[l].Push(ids, y.Data)
}

// groups returns the batches of an epoch: parts shuffled with the epoch's
// seed (in order when epoch < 0), PartsPerBatch at a time.
func (s *gasStepper) groups(epoch int) [][]int32 {
	k := len(s.parts)
	order := make([]int, k)
	for i := range order {
		order[i] = i
	}
	if epoch >= 0 {
		rng.Shuffle(rng.New(rng.Derive(s.r.cfg.Seed, uint64(epoch)|1<<32)), order)
	}
	// One array holds every group, reused epoch after epoch (the groups of
	// the epoch before are no longer read when this is called).
	per := s.r.cfg.PartsPerBatch
	all := s.groupBuf[:0]
	var ends []int
	for i := 0; i < k; i += per {
		for _, p := range order[i:min(k, i+per)] {
			all = append(all, s.parts[p]...)
		}
		ends = append(ends, len(all))
	}
	s.groupBuf = all
	out := make([][]int32, len(ends))
	for i, e := range ends {
		out[i] = all[:e:e]
		if i > 0 {
			out[i] = all[ends[i-1]:e:e]
		}
	}
	return out
}

// build makes batch i of the current groups: the group's nodes as seeds
// with all their in-neighbours (one block shared by every layer, whose
// sources past the seeds, the halo, read history rows at layers >= 1),
// and the seeds' training labels.
func (s *gasStepper) build(_ context.Context, i int, mb *batch.MiniBatch) error {
	nodes := s.cur[i]
	neighbourhood(s.r.g, nodes, s.pos, mb, len(s.m.Layers))
	mb.Labels = mb.Labels[:0]
	for _, v := range nodes {
		mb.Labels = append(mb.Labels, s.masked[v])
	}
	halo := mb.InputNodes[len(nodes):]
	if cap(mb.Halo) < len(s.hist) {
		mb.Halo = make([]batch.Halo, len(s.hist))
	}
	mb.Halo = mb.Halo[:len(s.hist)]
	for l := range mb.Halo {
		mb.Halo[l].Nodes = halo
	}
	return nil
}

// pull reads the halo's rows from every history.
func (s *gasStepper) pull(_ context.Context, _ int, mb *batch.MiniBatch) error {
	ids, err := mb.Local()
	if err != nil {
		return err
	}
	halo := ids[mb.Blocks[0].NumDst:]
	for l, h := range s.hist {
		out := mb.Halo[l].Rows.SetF32(len(halo), h.Dim())
		if err := h.Pull(halo, out); err != nil {
			return err
		}
	}
	return nil
}

// push stores a batch's fresh hidden rows in the histories.
func (s *gasStepper) push(mb *batch.MiniBatch, fresh []tensor.Matrix) error {
	ids, err := mb.Local()
	if err != nil {
		return err
	}
	dst := ids[:mb.Blocks[0].NumDst]
	for l, f := range fresh {
		if err := s.hist[l].Push(dst, f.Data); err != nil {
			return err
		}
	}
	return nil
}

// run iterates the batches of groups through the pipeline, which builds
// batch i+1 and pulls its halo rows while batch i computes, and calls step
// on every batch; step returns the fresh rows to push, which happens after
// the next batch's pull (so the histories every batch sees do not depend
// on timing).
func (s *gasStepper) run(ctx context.Context, epoch int, groups [][]int32, step func(i int, mb *batch.MiniBatch) ([]tensor.Matrix, error)) (pipeline.Stats, error) {
	s.cur = groups
	it := s.pipe.Epoch(ctx, epoch, len(groups))
	defer it.Close()
	var prev *batch.MiniBatch
	var prevFresh []tensor.Matrix
	finish := func() error { // push and release the previous batch
		if prev == nil {
			return nil
		}
		err := s.push(prev, prevFresh)
		prev.Release()
		prev, prevFresh = nil, nil
		return err
	}
	for it.Next() {
		s.r.noteFirstBatch()
		cur := it.Batch()
		if err := finish(); err != nil {
			cur.Release()
			return it.Stats(), err
		}
		fresh, err := step(int(cur.Seq), cur)
		if err == nil {
			err = ctx.Err()
		}
		if err != nil {
			cur.Release()
			return it.Stats(), err
		}
		prev, prevFresh = cur, fresh
		if int(cur.Seq) == len(groups)-1 {
			// No pull comes after the last batch: push and release it now,
			// before the iterator ends and returns its free buffers to the
			// pipeline's pool (a buffer released later would be replaced by
			// a fresh one next epoch).
			if err := finish(); err != nil {
				return it.Stats(), err
			}
		}
	}
	if err := it.Err(); err != nil {
		if prev != nil {
			prev.Release()
		}
		return it.Stats(), err
	}
	return it.Stats(), finish()
}

// NumBatches is the number of groups of parts an epoch steps on (Loop's
// Hooks.EpochStart).
func (s *gasStepper) NumBatches() int {
	per := s.r.cfg.PartsPerBatch
	return (len(s.parts) + per - 1) / per
}

func (s *gasStepper) Epoch(ctx context.Context, epoch int) (EpochStats, error) {
	r := s.r
	if !s.filled {
		if err := s.fill(ctx, s.m); err != nil {
			return EpochStats{}, err
		}
		s.filled = true
	}
	groups := s.groups(epoch)
	var st EpochStats
	var lossSum float64
	correct, total := 0, 0
	start := time.Now()
	ps, err := s.run(ctx, epoch, groups, func(i int, mb *batch.MiniBatch) ([]tensor.Matrix, error) {
		out, err := r.trainStep(ctx, s.e, mb, engine.Step{Seed: stepSeed(r.cfg.Seed, epoch, uint64(i)), Epoch: epoch, Index: i})
		if err != nil {
			return nil, err
		}
		st.Batches++
		st.MicroBatches += out.Micro
		lossSum += out.Loss * float64(out.Total)
		correct, total = correct+out.Correct, total+out.Total
		return out.Fresh, nil
	})
	if err != nil {
		return st, err
	}
	st.Loss = lossSum / float64(max(total, 1))
	st.TrainAcc = float64(correct) / float64(max(total, 1))
	wait := (ps.Wait + ps.FirstWait).Seconds()
	st.GatherSeconds, st.WaitSeconds = (ps.Stage("build") + ps.Stage("pull")).Seconds(), wait
	st.ComputeSeconds = time.Since(start).Seconds() - wait
	return st, nil
}

// evaluate runs every batch without gradients, with the same histories
// (refreshing them as it goes, as GAS's mini-batch inference does), and
// scores the batches' logits.
func (s *gasStepper) Evaluate(ctx context.Context, m *nn.Model) (Evaluation, error) {
	r := s.r
	logits := tensor.New(r.ds.Meta.NumNodes, m.Layers[len(m.Layers)-1].OutDim())
	_, err := s.run(ctx, 0, s.groups(-1), func(_ int, mb *batch.MiniBatch) ([]tensor.Matrix, error) {
		out, err := s.e.Infer(ctx, m, mb)
		if err != nil {
			return nil, err
		}
		for i, v := range mb.Seeds {
			copy(logits.Row(int(v)), out.Logits.Row(i))
		}
		return out.Fresh, nil
	})
	if err != nil {
		return Evaluation{}, err
	}
	return r.score(logits), nil
}

package train

import (
	"context"
	"fmt"
	"time"

	"github.com/graphmill/graphmill/feature"
	"github.com/graphmill/graphmill/history"
	"github.com/graphmill/graphmill/internal/rng"
	"github.com/graphmill/graphmill/nn"
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
	sp     *splitter
}

// gasBatch is a batch with its block, input features and pulled halo rows.
type gasBatch struct {
	block  *nn.Block
	halo   []tensor.Matrix // per hidden layer: history rows of the halo
	labels []int32
	secs   float64 // time to build it
	err    error
}

func (r *Runner) gasStepper(ctx context.Context, m *nn.Model, opt nn.Optimizer) (stepper, error) {
	cfg := r.cfg
	g := r.ds.Graph
	if cfg.Parts > g.NumNodes {
		return nil, fmt.Errorf("gas: %d parts for %d nodes", cfg.Parts, g.NumNodes)
	}
	if r.partitioner == nil {
		return nil, fmt.Errorf("gas mode needs a partitioner (train.WithPartitioner); graphmill train supplies the multilevel one")
	}
	assign, err := r.partitioner(ctx, g, cfg.Parts, cfg.Seed, cfg.Workers)
	if err != nil {
		return nil, err
	}
	if len(assign) != g.NumNodes {
		return nil, fmt.Errorf("gas: the partitioner assigned %d nodes of %d", len(assign), g.NumNodes)
	}
	s := &gasStepper{r: r, m: m, opt: opt, parts: make([][]int32, cfg.Parts)}
	for v, p := range assign {
		if p < 0 || int(p) >= cfg.Parts {
			return nil, fmt.Errorf("gas: the partitioner put node %d in part %d, not in [0, %d)", v, p, cfg.Parts)
		}
		s.parts[p] = append(s.parts[p], int32(v))
	}
	for l := 0; l < len(m.Layers)-1; l++ {
		h, err := history.New(g.NumNodes, m.Layers[l].OutDim(), history.Options{Half: cfg.HalfHistory, Workers: cfg.Workers})
		if err != nil {
			s.close()
			return nil, err
		}
		s.hist = append(s.hist, h)
	}
	s.masked = r.trainLabels()
	s.sp = r.splitter(m)
	return s, nil
}

func (s *gasStepper) historyBytes() int64 {
	var n int64
	for _, h := range s.hist {
		n += h.Bytes()
	}
	return n
}

func (s *gasStepper) close() {
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
	return inferLayers(ctx, m, s.r.ds.Graph, cfg.EvalBatchSize, cfg.MaxMemoryBytes, len(m.Layers)-1, &historyIO{x: s.r.feat, hist: s.hist})
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
		r := rng.New(rng.Derive(s.r.cfg.Seed, uint64(epoch)|1<<32))
		for i := k - 1; i > 0; i-- {
			j := r.IntN(i + 1)
			order[i], order[j] = order[j], order[i]
		}
	}
	per := s.r.cfg.PartsPerBatch
	var out [][]int32
	for i := 0; i < k; i += per {
		var nodes []int32
		for _, p := range order[i:min(k, i+per)] {
			nodes = append(nodes, s.parts[p]...)
		}
		out = append(out, nodes)
	}
	return out
}

// prepare builds a batch and pulls its halo rows.
func (s *gasStepper) prepare(nodes []int32, pos []int32) *gasBatch {
	t := time.Now()
	r := s.r
	b := &gasBatch{block: blockOf(r.ds.Graph, nodes, pos)}
	halo := b.block.Src[b.block.NumDst:]
	for _, h := range s.hist {
		m := tensor.New(len(halo), h.Dim())
		if err := h.Pull(halo, m.Data); err != nil {
			b.err = err
			return b
		}
		b.halo = append(b.halo, m)
	}
	b.labels = make([]int32, len(nodes))
	for i, v := range nodes {
		b.labels[i] = s.masked[v]
	}
	b.secs = time.Since(t).Seconds()
	return b
}

// view returns the batch as a step sees it: one block shared by every
// layer, whose sources past the batch's own nodes read history rows.
func (s *gasStepper) view(b *gasBatch) *view {
	return &view{blocks: []*nn.Block{b.block}, src: s.r.feat, xRows: b.block.Src, halo: b.halo, labels: b.labels}
}

// push stores a batch's fresh hidden rows in the histories.
func (s *gasStepper) push(b *gasBatch, fresh []tensor.Matrix) error {
	dst := b.block.Src[:b.block.NumDst]
	for l, f := range fresh {
		if err := s.hist[l].Push(dst, f.Data); err != nil {
			return err
		}
	}
	return nil
}

// run iterates the batches of groups, preparing batch i+1 while batch i
// computes, and calls step on every batch; step returns the fresh rows to
// push, which happens after the next batch's pull.
func (s *gasStepper) run(ctx context.Context, groups [][]int32, step func(i int, b *gasBatch) ([]tensor.Matrix, error)) (prepSecs, waitSecs float64, err error) {
	n := s.r.ds.Meta.NumNodes
	pos := newPos(n) // one prepare runs at a time, and leaves it all -1
	next := make(chan *gasBatch, 1)
	launch := func(i int) {
		go func() { next <- s.prepare(groups[i], pos) }()
	}
	launch(0)
	for i := range groups {
		t := time.Now()
		cur := <-next
		waitSecs += time.Since(t).Seconds()
		prepSecs += cur.secs
		if cur.err != nil {
			return prepSecs, waitSecs, cur.err
		}
		if i+1 < len(groups) {
			launch(i + 1)
		}
		fresh, err := step(i, cur)
		if err == nil {
			err = ctx.Err()
		}
		if i+1 < len(groups) {
			// The next batch's pull must finish before this batch pushes.
			t := time.Now()
			nb := <-next
			waitSecs += time.Since(t).Seconds()
			next <- nb
		}
		if err != nil {
			return prepSecs, waitSecs, err
		}
		if err := s.push(cur, fresh); err != nil {
			return prepSecs, waitSecs, err
		}
	}
	return prepSecs, waitSecs, nil
}

func (s *gasStepper) epoch(ctx context.Context, epoch int) (EpochStats, error) {
	r := s.r
	if !s.filled {
		if err := s.fill(ctx, s.m); err != nil {
			return EpochStats{}, err
		}
		s.filled = true
	}
	groups := s.groups(epoch)
	if r.hooks.EpochStart != nil {
		r.hooks.EpochStart(epoch, len(groups))
	}
	var st EpochStats
	var lossSum float64
	correct, total := 0, 0
	start := time.Now()
	prep, wait, err := s.run(ctx, groups, func(i int, b *gasBatch) ([]tensor.Matrix, error) {
		out, err := r.trainStep(ctx, s.sp, s.view(b), s.m, s.opt, epoch, i, rng.Derive(rng.Derive(r.cfg.Seed, uint64(epoch)), uint64(i)))
		if err != nil {
			return nil, err
		}
		st.Batches++
		st.MicroBatches += out.micro
		lossSum += out.loss * float64(out.total)
		correct, total = correct+out.correct, total+out.total
		return out.fresh, nil
	})
	if err != nil {
		return st, err
	}
	st.Loss = lossSum / float64(max(total, 1))
	st.TrainAcc = float64(correct) / float64(max(total, 1))
	st.GatherSeconds, st.WaitSeconds = prep, wait
	st.ComputeSeconds = time.Since(start).Seconds() - wait
	return st, nil
}

// evaluate runs every batch without gradients, with the same histories
// (refreshing them as it goes, as GAS's mini-batch inference does), and
// scores the batches' logits.
func (s *gasStepper) evaluate(ctx context.Context, m *nn.Model) (Evaluation, error) {
	r := s.r
	logits := tensor.New(r.ds.Meta.NumNodes, m.Layers[len(m.Layers)-1].OutDim())
	_, _, err := s.run(ctx, s.groups(-1), func(_ int, b *gasBatch) ([]tensor.Matrix, error) {
		out, err := inferStep(ctx, s.sp, s.view(b), m)
		if err != nil {
			return nil, err
		}
		for i, v := range b.block.Src[:b.block.NumDst] {
			copy(logits.Row(int(v)), out.logits.Row(i))
		}
		return out.fresh, nil
	})
	if err != nil {
		return Evaluation{}, err
	}
	return r.score(logits), nil
}

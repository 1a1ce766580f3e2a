package train

import (
	"context"
	"time"

	"github.com/graphmill/graphmill/internal/rng"
	"github.com/graphmill/graphmill/loader"
	"github.com/graphmill/graphmill/nn"
	"github.com/graphmill/graphmill/sample"
	"github.com/graphmill/graphmill/tensor"
)

// sampledStepper trains on neighbour-sampled minibatches delivered by the
// loader pipeline, which samples and gathers ahead of the training steps.
type sampledStepper struct {
	r   *Runner
	m   *nn.Model
	opt nn.Optimizer
	ld  *loader.Loader
	sp  *splitter
	// ts holds one transpose per layer, rebuilt in place every step.
	ts []*tensor.Transposed
}

func (r *Runner) sampledStepper(m *nn.Model, opt nn.Optimizer) (stepper, error) {
	cfg := r.cfg
	s, err := sample.New(r.ds.Graph, sample.Config{Fanouts: cfg.Fanouts})
	if err != nil {
		return nil, err
	}
	lc := loader.Config{
		BatchSize: cfg.BatchSize, Shuffle: true, Seed: rng.Derive(cfg.Seed, 0x5a3),
		SampleWorkers: cfg.Workers, Prefetch: cfg.Prefetch,
	}
	if cfg.MaxMemoryBytes > 0 {
		// Under a memory bound every batch held ahead costs its gathered
		// rows: keep one ready, one being gathered and one per sampler.
		lc.Prefetch = 1
		lc.Buffers = max(1, cfg.Workers) + 2
	}
	if p := cfg.Parallel; p != nil {
		lc.Shard, lc.Shards = p.Rank(), p.Size() // each rank its share of every global batch
	}
	ld, err := loader.New(s, r.feat, r.labels, r.ds.Train, lc)
	if err != nil {
		return nil, err
	}
	return &sampledStepper{r: r, m: m, opt: opt, ld: ld, sp: r.splitter(m)}, nil
}

func (s *sampledStepper) epoch(ctx context.Context, epoch int) (EpochStats, error) {
	r := s.r
	if r.hooks.EpochStart != nil {
		r.hooks.EpochStart(epoch, s.ld.NumBatches())
	}
	it := s.ld.Epoch(ctx, epoch)
	defer it.Close()
	var st EpochStats
	var lossSum float64
	correct, total := 0, 0
	var compute time.Duration
	for it.Next() {
		b := it.Batch()
		t := time.Now()
		x := tensor.Matrix{Rows: len(b.MiniBatch.InputNodes), Cols: r.feat.Dim(), Data: b.Features}
		v := &view{blocks: blocksOf(b.MiniBatch), x: x, xOwned: true, labels: b.Labels}
		for i, bl := range v.blocks {
			if i == len(s.ts) {
				s.ts = append(s.ts, &tensor.Transposed{})
			}
			bl.CSR.TScratch = s.ts[i]
		}
		out, err := r.trainStep(ctx, s.sp, v, s.m, s.opt, epoch, b.Index, rng.Derive(rng.Derive(r.cfg.Seed, uint64(epoch)), uint64(b.Index)))
		if err != nil {
			return st, err
		}
		lossSum += out.loss * float64(out.total)
		correct, total = correct+out.correct, total+out.total
		st.MicroBatches += out.micro
		st.Batches++
		compute += time.Since(t)
	}
	if err := it.Err(); err != nil {
		return st, err
	}
	ls := it.Stats()
	st.Loss = lossSum / float64(max(total, 1))
	st.TrainAcc = float64(correct) / float64(max(total, 1))
	st.SampleSeconds = ls.Sample.Seconds()
	st.GatherSeconds = ls.Gather.Seconds()
	st.WaitSeconds = ls.Wait.Seconds()
	st.GatheredRows = ls.Rows
	st.ComputeSeconds = compute.Seconds()
	return st, nil
}

func (s *sampledStepper) close() {}

func (s *sampledStepper) evaluate(ctx context.Context, m *nn.Model) (Evaluation, error) {
	return s.r.Evaluate(ctx, m)
}

// blocksOf wraps a sampled minibatch's blocks for the model.
func blocksOf(mb *sample.MiniBatch) []*nn.Block {
	blocks := make([]*nn.Block, len(mb.Blocks))
	for i := range mb.Blocks {
		sb := &mb.Blocks[i]
		blocks[i] = &nn.Block{CSR: &tensor.CSR{Indptr: sb.Indptr, Indices: sb.Indices, NumSrc: len(sb.SrcNodes)}, NumDst: sb.NumDst, Src: sb.SrcNodes}
	}
	return blocks
}

// countCorrect counts rows whose argmax equals their (non-negative) label.
func countCorrect(logits tensor.Matrix, labels []int32) (correct, total int) {
	for i, y := range labels {
		if y < 0 {
			continue
		}
		if argmax(logits.Row(i)) == y {
			correct++
		}
		total++
	}
	return correct, total
}

package train

import (
	"context"
	"github.com/graphmill/graphmill/engine"
	"github.com/graphmill/graphmill/pipeline"
	"time"

	"github.com/graphmill/graphmill/internal/rng"
	"github.com/graphmill/graphmill/nn"
	"github.com/graphmill/graphmill/sample"
)

// sampledStepper trains on neighbour-sampled minibatches delivered by the
// sampled pipeline (package pipeline), which samples and gathers ahead of
// the training steps.
type sampledStepper struct {
	r   *Runner
	m   *nn.Model
	opt nn.Optimizer
	ld  BatchSource
	e   *engine.Engine
}

func (r *Runner) sampledStepper(m *nn.Model, opt nn.Optimizer) (Stepper, error) {
	cfg := r.cfg
	// Steps run one after the other (epoch's loop; micro-batches one
	// after the other within a step), and a batch is released before the
	// next step: what the layers derive from each step's blocks (GCN's
	// and GAT's self-loops, GCN's edge weights, the transposes) is rebuilt
	// in the same memory every step instead of fresh arrays. Evaluation,
	// overlapped or not, runs on a snapshot, which does not share it.
	m.ScratchBlocks(true)
	if r.batches != nil {
		return &sampledStepper{r: r, m: m, opt: opt, ld: r.batches, e: r.engine(m, opt)}, nil
	}
	s, err := sample.New(r.ds.Graph, r.sampleConfig(cfg.Fanouts))
	if err != nil {
		return nil, err
	}
	lc := pipeline.SampledConfig{
		BatchSize: cfg.BatchSize, Shuffle: true, Seed: LoaderSeed(cfg),
		SampleWorkers: cfg.Workers, Prefetch: cfg.Prefetch,
	}
	if cfg.MaxMemoryBytes > 0 {
		// Under a memory bound every batch held ahead costs its gathered
		// rows: keep one ready, one being gathered and one per sampler.
		lc.Prefetch = 1
		lc.Buffers = max(1, cfg.Workers) + 2
	}
	if r.disk != nil {
		// Reads from disk: the next batch's rows are read while this one
		// steps, and the memory of batches held beyond that goes to the
		// cache instead (diskBuffers).
		lc.Prefetch, lc.Buffers = 1, diskBuffers
		lc.MaxBuffers = r.diskMaxBuffers()
		lc.Superbatch = r.superbatch()
	}
	if p := cfg.Parallel; p != nil {
		lc.Shard, lc.Shards = p.Rank(), p.Size() // each rank its share of every global batch
	}
	ld, err := pipeline.NewSampled(s, r.feat, r.labels, r.ds.Train, lc)
	if err != nil {
		return nil, err
	}
	return &sampledStepper{r: r, m: m, opt: opt, ld: ld, e: r.engine(m, opt)}, nil
}

func (s *sampledStepper) Epoch(ctx context.Context, epoch int) (EpochStats, error) {
	r := s.r
	if r.hooks.EpochStart != nil {
		r.hooks.EpochStart(epoch, s.ld.NumBatches())
	}
	var failovers int64
	fc, countsFailovers := s.ld.(failoverCounter)
	if countsFailovers {
		failovers = fc.Failovers()
	}
	it := s.ld.Epoch(ctx, epoch)
	defer it.Close()
	var st EpochStats
	var lossSum float64
	correct, total := 0, 0
	var compute time.Duration
	for it.Next() {
		r.noteFirstBatch()
		b := it.Batch()
		t := time.Now()
		// Overwrite: the batch is released right after the step.
		out, err := r.trainStep(ctx, s.e, b, engine.Step{Seed: rng.Derive(rng.Derive(r.cfg.Seed, uint64(epoch)), b.Seq), Epoch: epoch, Index: int(b.Seq), Overwrite: true})
		b.Release()
		if err != nil {
			return st, err
		}
		lossSum += out.Loss * float64(out.Total)
		correct, total = correct+out.Correct, total+out.Total
		st.MicroBatches += out.Micro
		st.Batches++
		compute += time.Since(t)
	}
	if err := it.Err(); err != nil {
		return st, err
	}
	ls := it.Stats()
	st.Loss = lossSum / float64(max(total, 1))
	st.TrainAcc = float64(correct) / float64(max(total, 1))
	st.SampleSeconds = ls.Stage("sample").Seconds()
	st.GatherSeconds, st.GatherCPUSeconds = ls.Stage("gather").Seconds(), ls.StageCPU("gather").Seconds()
	st.WaitSeconds = ls.Wait.Seconds()
	st.GatheredRows = ls.Rows
	st.Buffers = ls.Buffers
	st.ComputeSeconds = compute.Seconds()
	if countsFailovers {
		st.SamplerFailovers = fc.Failovers() - failovers
	}
	return st, nil
}

// close hands the model back without the step scratch (ScratchBlocks).
func (s *sampledStepper) Close() { s.m.ScratchBlocks(false) }

func (s *sampledStepper) Evaluate(ctx context.Context, m *nn.Model) (Evaluation, error) {
	return s.r.Evaluate(ctx, m)
}

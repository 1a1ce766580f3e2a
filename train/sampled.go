package train

import (
	"context"
	"time"

	"github.com/graphmill/graphmill/batch"
	"github.com/graphmill/graphmill/engine"
	"github.com/graphmill/graphmill/internal/rng"
	"github.com/graphmill/graphmill/nn"
	"github.com/graphmill/graphmill/pipeline"
	"github.com/graphmill/graphmill/sample"
	"github.com/graphmill/graphmill/tensor"
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
	// dropped says the loader applies layer 0's input dropout to the rows
	// it gathers (inputDropout).
	dropped bool
}

// dropAhead says whether the sampled pipeline applies the model's input
// dropout as it gathers (inputDropout); tests turn it off to compare.
var dropAhead = true

// inputDropout returns the pipeline's Rows hook that applies layer 0's
// input dropout to the rows the loader gathers, while they are in cache,
// instead of in a pass of the step over the whole input (which reads it
// back from memory): the same node-keyed factors the step would draw
// (nn.Model.InputDropout, keyed by the nodes' OrigIDs as the engine's
// blocks are, seeded from the batch's step seed). Nil when the model
// applies none, and under a memory bound: a step split into micro-batches
// draws each piece's dropout from the piece's own seed, which rows
// dropped ahead for the whole batch would not match.
func (r *Runner) inputDropout(m *nn.Model) func(mb *batch.MiniBatch, ids []int32, rows []float32) {
	p := m.InputDropout()
	if p == 0 || !dropAhead || r.cfg.Mode != Sampled || r.cfg.MaxMemoryBytes > 0 {
		return nil
	}
	seed, orig := r.cfg.Seed, r.ds.OrigIDs
	return func(mb *batch.MiniBatch, ids []int32, rows []float32) {
		if len(ids) == 0 {
			return
		}
		d := tensor.RowDropout{P: p, Seed: rng.Derive(stepSeed(seed, int(mb.Epoch), mb.Seq), 0), Keys: ids}
		x := tensor.Matrix{Rows: len(ids), Cols: len(rows) / len(ids), Data: rows}
		if orig != nil {
			dropOrig(d, orig, x)
			return
		}
		_ = d.Apply(x) // the shape and probability are right by construction
	}
}

// dropOrig is d.Apply(x) with x's rows keyed by the original ids of the
// nodes d.Keys names.
func dropOrig(d tensor.RowDropout, orig []int32, x tensor.Matrix) {
	ids := d.Keys
	var kb [256]int32
	for lo := 0; lo < len(ids); lo += len(kb) {
		hi := min(len(ids), lo+len(kb))
		d.Keys = kb[:hi-lo]
		for i, v := range ids[lo:hi] {
			d.Keys[i] = orig[v]
		}
		_ = d.Apply(tensor.Matrix{Rows: hi - lo, Cols: x.Cols, Data: x.Data[lo*x.Cols : hi*x.Cols]})
	}
}

// stepSeed is the seed of training step seq of epoch (engine.Step.Seed).
func stepSeed(seed uint64, epoch int, seq uint64) uint64 {
	return rng.Derive(rng.Derive(seed, uint64(epoch)), seq)
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
	s, err := sample.New(r.g, r.sampleConfig(cfg.Fanouts))
	if err != nil {
		return nil, err
	}
	lc := pipeline.SampledConfig{
		BatchSize: cfg.BatchSize, Shuffle: true, Seed: LoaderSeed(cfg),
		SampleWorkers: cfg.Workers, Prefetch: cfg.Prefetch, Rows: r.inputDropout(m),
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
	return &sampledStepper{r: r, m: m, opt: opt, ld: ld, e: r.engine(m, opt), dropped: lc.Rows != nil}, nil
}

// NumBatches is the number of batches of an epoch (Loop's
// Hooks.EpochStart).
func (s *sampledStepper) NumBatches() int { return s.ld.NumBatches() }

func (s *sampledStepper) Epoch(ctx context.Context, epoch int) (EpochStats, error) {
	r := s.r
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
		out, err := r.trainStep(ctx, s.e, b, engine.Step{Seed: stepSeed(r.cfg.Seed, epoch, b.Seq), Epoch: epoch, Index: int(b.Seq), Overwrite: true, InputDropped: s.dropped})
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
	st.SampleSeconds, st.SampleCPUSeconds = ls.Stage("sample").Seconds(), ls.StageCPU("sample").Seconds()
	st.GatherSeconds, st.GatherCPUSeconds = ls.Stage("gather").Seconds(), ls.StageCPU("gather").Seconds()
	st.WaitSeconds, st.FirstWaitSeconds = ls.Wait.Seconds(), ls.FirstWait.Seconds()
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

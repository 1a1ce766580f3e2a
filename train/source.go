package train

import (
	"context"

	"github.com/graphmill/graphmill/batch"
	"github.com/graphmill/graphmill/engine"
	"github.com/graphmill/graphmill/internal/rng"
	"github.com/graphmill/graphmill/nn"
	"github.com/graphmill/graphmill/pipeline"
	"github.com/graphmill/graphmill/sample"
)

// BatchSource supplies the training minibatches of sampled mode in place
// of the local sampling pipeline: a distributed sampler over a partitioned
// dataset, or a stream from remote sampler services. Its batches carry the
// blocks, the input nodes (the ids the model's degrees are indexed by),
// their feature rows and the seeds' labels; *pipeline.Sampled is one.
type BatchSource interface {
	// NumBatches returns the number of batches of an epoch.
	NumBatches() int
	// Epoch starts epoch epoch's batches.
	Epoch(ctx context.Context, epoch int) *pipeline.Iter
}

// failoverCounter is a BatchSource that reports lost samplers (the
// sampler services' source): sampled mode puts the epoch's count in
// EpochStats.SamplerFailovers.
type failoverCounter interface{ Failovers() int64 }

// Evaluator evaluates a model in place of full-graph inference on the
// local dataset (a distributed run's evaluation over every rank's nodes).
type Evaluator func(ctx context.Context, m *nn.Model) (Evaluation, error)

// WithBatches makes sampled mode train on src's batches instead of
// sampling the local dataset.
func WithBatches(src BatchSource) Option { return func(r *Runner) { r.batches = src } }

// WithEvaluator makes the run evaluate with ev instead of inference on the
// local dataset.
func WithEvaluator(ev Evaluator) Option { return func(r *Runner) { r.evaluator = ev } }

// WithDegrees gives the model the in-degrees it normalises with (GCN,
// APPNP), indexed by the ids of the batches' input nodes, instead of the
// local graph's: a distributed run's batches hold global ids.
func WithDegrees(deg []float32) Option { return func(r *Runner) { r.degOverride = deg } }

// ScoreBlocks is engine.ScoreBlocks.
func ScoreBlocks(ctx context.Context, m *nn.Model, mb *batch.MiniBatch) (correct, total int, lossSum float64, err error) {
	return engine.ScoreBlocks(ctx, m, mb)
}

// LoaderSeed returns the seed sampled mode's pipeline shuffles and samples
// with under cfg (sample.EpochKey(LoaderSeed(cfg), epoch) keys an epoch's
// draws), so that a distributed sampler or a sampler service draws what a
// local run would.
func LoaderSeed(cfg Config) uint64 { return rng.Derive(cfg.Seed, 0x5a3) }

// sampledEval scores the validation and test nodes on neighbourhoods
// sampled with Config.EvalFanouts, a training batch of seeds at a time
// (the same key every evaluation, so epochs are compared on the same
// draws).
func (r *Runner) sampledEval(ctx context.Context, m *nn.Model) (Evaluation, error) {
	var ev Evaluation
	s, err := sample.New(r.g, r.sampleConfig(r.cfg.EvalFanouts))
	if err != nil {
		return ev, err
	}
	batch := r.cfg.BatchSize
	if batch < 1 {
		batch = r.cfg.EvalBatchSize
	}
	for _, sp := range []struct {
		seeds     []int32
		acc, loss *float64
	}{{r.ds.Val, &ev.ValAcc, &ev.ValLoss}, {r.ds.Test, &ev.TestAcc, nil}} {
		if len(sp.seeds) == 0 {
			continue
		}
		ld, err := pipeline.NewSampled(s, r.inferSource(), r.labels, sp.seeds, pipeline.SampledConfig{
			BatchSize: max(1, batch), Seed: rng.Derive(r.cfg.Seed, 0xe7a1), SampleWorkers: r.cfg.Workers, Prefetch: 1, Buffers: evalBuffers - 1})
		if err != nil {
			return ev, err
		}
		correct, total, lossSum, err := scoreEpoch(ctx, m, ld)
		if err != nil {
			return ev, err
		}
		*sp.acc = float64(correct) / float64(max(total, 1))
		if sp.loss != nil {
			*sp.loss = lossSum / float64(max(total, 1))
		}
	}
	return ev, nil
}

// scoreEpoch scores every batch of one epoch of ld (ScoreBlocks).
func scoreEpoch(ctx context.Context, m *nn.Model, ld *pipeline.Sampled) (correct, total int, lossSum float64, err error) {
	it := ld.Epoch(ctx, 0)
	defer it.Close()
	for it.Next() {
		b := it.Batch()
		c, t, l, err := ScoreBlocks(ctx, m, b)
		b.Release()
		if err != nil {
			return 0, 0, 0, err
		}
		correct, total, lossSum = correct+c, total+t, lossSum+l
	}
	return correct, total, lossSum, it.Err()
}

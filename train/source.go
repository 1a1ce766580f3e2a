package train

import (
	"context"
	"fmt"
	"math"

	"github.com/graphmill/graphmill/internal/rng"
	"github.com/graphmill/graphmill/loader"
	"github.com/graphmill/graphmill/nn"
	"github.com/graphmill/graphmill/sample"
	"github.com/graphmill/graphmill/tensor"
	"github.com/graphmill/graphmill/tensor/autograd"
)

// BatchSource supplies the training minibatches of sampled mode in place
// of the local loader: a distributed sampler over a partitioned graph, or
// a stream from remote sampler services. Each Batch carries the blocks
// (SrcNodes in the ids the model's degrees are indexed by), the input
// nodes' feature rows and the seeds' labels.
type BatchSource interface {
	// NumBatches returns the number of batches of an epoch.
	NumBatches() int
	// Epoch starts epoch epoch's batches.
	Epoch(ctx context.Context, epoch int) BatchIter
}

// BatchIter iterates one epoch of a BatchSource (as loader.Iter does).
type BatchIter interface {
	Next() bool
	// Batch returns the current batch, valid until the next call to Next.
	Batch() *loader.Batch
	Err() error
	Close()
	Stats() loader.Stats
}

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
// APPNP), indexed by the ids in the batches' SrcNodes, instead of the
// local graph's: a distributed run's blocks hold global ids.
func WithDegrees(deg []float32) Option { return func(r *Runner) { r.degOverride = deg } }

// loaderSource adapts a *loader.Loader to BatchSource.
type loaderSource struct{ *loader.Loader }

func (l loaderSource) Epoch(ctx context.Context, epoch int) BatchIter {
	return l.Loader.Epoch(ctx, epoch)
}

// ScoreBlocks runs m forward (inference, no dropout) on a sampled
// minibatch whose input rows are x (row-major, len(mb.InputNodes) rows)
// and scores its seeds against labels (one per seed; negative labels are
// skipped): the number predicted right, the number scored and the summed
// negative log-likelihood. With every fanout -1 the logits are the
// full-graph ones, so a distributed run evaluates exactly.
func ScoreBlocks(m *nn.Model, mb *sample.MiniBatch, x []float32, labels []int32) (correct, total int, lossSum float64, err error) {
	if len(labels) != len(mb.Seeds) {
		return 0, 0, 0, fmt.Errorf("train: %d labels for %d seeds", len(labels), len(mb.Seeds))
	}
	in := len(x) / max(1, len(mb.InputNodes))
	if in*len(mb.InputNodes) != len(x) {
		return 0, 0, 0, fmt.Errorf("train: %d feature values for %d input nodes", len(x), len(mb.InputNodes))
	}
	tp := autograd.NewInferenceTape()
	out := m.Forward(tp, blocksOf(mb), tp.Const(tensor.Matrix{Rows: len(mb.InputNodes), Cols: in, Data: x}), false, 0)
	logits := out.Value
	for i, y := range labels {
		if y < 0 {
			continue
		}
		row := logits.Row(i)
		if argmax(row) == y {
			correct++
		}
		mx := row[0]
		for _, v := range row {
			mx = max(mx, v)
		}
		var z float64
		for _, v := range row {
			z += math.Exp(float64(v - mx))
		}
		lossSum += math.Log(z) - float64(row[y]-mx)
		total++
	}
	return correct, total, lossSum, nil
}

// LoaderSeed returns the seed sampled mode's loader shuffles and samples
// with under cfg (sample.EpochKey(LoaderSeed(cfg), epoch) keys an epoch's
// draws), so that a distributed sampler or a sampler service draws what a
// local run would.
func LoaderSeed(cfg Config) uint64 { return rng.Derive(cfg.Seed, 0x5a3) }

package pipeline

import (
	"context"
	"errors"
	"fmt"

	"github.com/graphmill/graphmill/batch"
	"github.com/graphmill/graphmill/sample"
)

// Sampler is the sampling stage (satisfied by *sample.Sampler). It must be
// safe for concurrent use.
type Sampler interface {
	SampleInto(mb *batch.MiniBatch, seeds []int32, seed uint64) error
}

// Fetcher is the feature stage (satisfied by feature.Source).
type Fetcher interface {
	Dim() int
	Gather(ctx context.Context, ids []int32, out []float32) error
}

// EachFetcher is a Fetcher that hands out a gather's rows as it writes
// them (satisfied by *feature.Store): done(lo, hi) once rows [lo, hi) of
// out are written, possibly from several goroutines at once.
type EachFetcher interface {
	GatherEach(ctx context.Context, ids []int32, out []float32, done func(lo, hi int)) error
}

// Planner is a Fetcher that reads better knowing the input rows of the
// batches ahead (feature.Disk's superbatch cache, as Ginex's): the gather
// stage hands it the next SampledConfig.Superbatch batches' rows before
// it gathers the first of them.
type Planner interface {
	Plan(batches [][]int32)
}

// SampledConfig configures a Sampled pipeline.
type SampledConfig struct {
	// BatchSize is the number of seeds per minibatch (required).
	BatchSize int
	// DropLast drops the last, shorter minibatch of an epoch.
	DropLast bool
	// Shuffle permutes the seeds every epoch (with a permutation drawn
	// from Seed and the epoch number).
	Shuffle bool
	// Seed seeds shuffling and sampling: every batch of epoch e is sampled
	// with the key sample.EpochKey(Seed, e), so a node's neighbours depend
	// on (Seed, e, hop, node) alone, whichever batch, worker, shard or
	// process samples it.
	Seed uint64
	// SampleWorkers is the number of sampling goroutines (0 = GOMAXPROCS).
	SampleWorkers int
	// Prefetch, Buffers and MaxBuffers are Config's.
	Prefetch, Buffers, MaxBuffers int
	// Superbatch, with a Fetcher that is a Planner, samples that many
	// batches ahead of the gathers (their input rows only; sampling is
	// deterministic, so the sample stage gets the same rows again) and
	// plans them (0: no planning).
	Superbatch int
	// Rows, when set, is applied in place to every batch's gathered
	// feature rows: ids are the nodes of rows (Dim values each) and mb
	// the batch they belong to (its Epoch and Seq set). With an
	// EachFetcher it is applied a few KiB of rows at a time as they are
	// written, while they are in cache, and may run on several goroutines
	// at once; otherwise once over the batch's rows after the gather.
	Rows func(mb *batch.MiniBatch, ids []int32, rows []float32)
	// Shard and Shards split every batch for data-parallel training: the
	// epoch is cut into global batches of BatchSize×Shards seeds (the same
	// on every rank), and shard Shard takes its even share of each, so the
	// ranks' batches at step i together are global batch i (Shards 0 or
	// 1: no sharding).
	Shard, Shards int
}

// Sampled is the pipeline of neighbour-sampled training: seeds (shuffled,
// batched) -> sample (N workers) -> gather features and labels -> prefetch
// queue -> consumer. Its stages are named "sample" and "gather".
type Sampled struct {
	p      *Pipeline
	s      Sampler
	f      Fetcher
	labels []int32
	seeds  []int32
	cfg    SampledConfig

	// The current epoch (set before its goroutines start).
	batches [][]int32
	eseed   uint64

	plan *batch.MiniBatch // the planner's sampling scratch (gather stage only)
}

// NewSampled returns the pipeline that samples with s, gathers with f (nil
// for no features), looks labels up in labels (nil for none) and iterates
// over seeds.
func NewSampled(s Sampler, f Fetcher, labels []int32, seeds []int32, cfg SampledConfig) (*Sampled, error) {
	if s == nil {
		return nil, errors.New("pipeline: nil sampler")
	}
	if cfg.BatchSize <= 0 {
		return nil, fmt.Errorf("pipeline: batch size %d; must be positive", cfg.BatchSize)
	}
	if len(seeds) == 0 {
		return nil, errors.New("pipeline: no seeds")
	}
	if cfg.SampleWorkers < 0 {
		return nil, fmt.Errorf("pipeline: %d sampling workers", cfg.SampleWorkers)
	}
	if labels != nil {
		for i, v := range seeds {
			if v < 0 || int(v) >= len(labels) {
				return nil, fmt.Errorf("pipeline: seed %d (index %d) has no label (labels cover [0, %d))", v, i, len(labels))
			}
		}
	}
	if cfg.Shards > 1 && (cfg.Shard < 0 || cfg.Shard >= cfg.Shards) {
		return nil, fmt.Errorf("pipeline: shard %d of %d", cfg.Shard, cfg.Shards)
	}
	if cfg.DropLast && len(seeds) < cfg.BatchSize {
		return nil, fmt.Errorf("pipeline: %d seeds make no full batch of %d with DropLast", len(seeds), cfg.BatchSize)
	}
	l := &Sampled{s: s, f: f, labels: labels, seeds: seeds, cfg: cfg}
	stages := []Stage{{Name: "sample", Workers: cfg.SampleWorkers, Run: l.sample}}
	if f != nil || labels != nil {
		stages = append(stages, Stage{Name: "gather", Run: l.gather})
	}
	p, err := New(Config{Stages: stages, Prefetch: cfg.Prefetch, Buffers: cfg.Buffers, MaxBuffers: cfg.MaxBuffers})
	if err != nil {
		return nil, err
	}
	l.p = p
	return l, nil
}

// Pipeline returns the underlying pipeline.
func (l *Sampled) Pipeline() *Pipeline { return l.p }

// NumBatches returns the number of minibatches per epoch.
func (l *Sampled) NumBatches() int {
	bs := l.cfg.BatchSize * max(1, l.cfg.Shards)
	n := len(l.seeds) / bs
	if !l.cfg.DropLast && len(l.seeds)%bs != 0 {
		n++
	}
	return n
}

// Epoch starts the pipeline for epoch number epoch and returns its
// iterator.
func (l *Sampled) Epoch(ctx context.Context, epoch int) *Iter {
	l.eseed = sample.EpochKey(l.cfg.Seed, epoch)
	batches, err := sample.Batches(l.seeds, l.cfg.BatchSize*max(1, l.cfg.Shards), l.cfg.Shuffle, l.eseed, l.cfg.DropLast)
	if err != nil {
		it := l.p.Epoch(ctx, epoch, 0)
		it.Close()
		it.err = err
		return it
	}
	if k := l.cfg.Shards; k > 1 {
		for i, b := range batches {
			batches[i] = b[len(b)*l.cfg.Shard/k : len(b)*(l.cfg.Shard+1)/k]
		}
	}
	l.batches = batches
	return l.p.Epoch(ctx, epoch, len(batches))
}

func (l *Sampled) sample(_ context.Context, i int, mb *batch.MiniBatch) error {
	return l.s.SampleInto(mb, l.batches[i], l.eseed)
}

// gather fetches the input nodes' features and the seeds' labels.
func (l *Sampled) gather(ctx context.Context, i int, mb *batch.MiniBatch) error {
	ids, err := mb.Local()
	if err != nil {
		return err
	}
	if p, ok := l.f.(Planner); ok && l.cfg.Superbatch > 0 && i%l.cfg.Superbatch == 0 {
		if err := l.planAhead(p, i); err != nil {
			return err
		}
	}
	if f := l.f; f != nil {
		dim := f.Dim()
		out := mb.Features.SetF32(len(ids), dim)
		hook := l.cfg.Rows
		if ef, ok := f.(EachFetcher); ok && hook != nil {
			err = ef.GatherEach(ctx, ids, out, func(lo, hi int) { hook(mb, ids[lo:hi], out[lo*dim:hi*dim]) })
		} else {
			err = f.Gather(ctx, ids, out)
			if err == nil && hook != nil {
				hook(mb, ids, out)
			}
		}
		if err != nil {
			return err
		}
	}
	if l.labels != nil {
		mb.Labels = mb.Labels[:0]
		for _, v := range ids[:len(mb.Seeds)] {
			mb.Labels = append(mb.Labels, l.labels[v])
		}
	}
	return nil
}

// planAhead samples the input rows of batches i to i+Superbatch-1 and
// hands them to p.
func (l *Sampled) planAhead(p Planner, i int) error {
	if l.plan == nil {
		l.plan = &batch.MiniBatch{}
	}
	end := min(len(l.batches), i+l.cfg.Superbatch)
	rows := make([][]int32, 0, end-i)
	for j := i; j < end; j++ {
		l.plan.Reset()
		if err := l.s.SampleInto(l.plan, l.batches[j], l.eseed); err != nil {
			return err
		}
		ids, err := l.plan.Local()
		if err != nil {
			return err
		}
		rows = append(rows, append([]int32(nil), ids...))
	}
	p.Plan(rows)
	return nil
}

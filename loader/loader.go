// Package loader iterates an epoch's minibatches for GNN training with
// neighbour sampling and feature gathering running in a goroutine pipeline
// ahead of the consumer, the shape of DGL GraphBolt's datapipe:
//
//	seeds (shuffled, batched) -> sample (N workers) -> gather features -> prefetch queue -> consumer
//
// Each stage is replaceable (Sampler and Fetcher are interfaces, satisfied
// by *sample.Sampler and *feature.Store) and timed (Stats), so a user sees
// which stage limits the epoch. Batches arrive in order and are the same
// whatever the number of sampling workers: every batch of epoch e is
// sampled with the key sample.EpochKey(Config.Seed, e), so a node's
// neighbours depend on (Config.Seed, e, hop, node) alone, whichever batch,
// shard or process samples it.
//
//	l, err := loader.New(sampler, store, d.Labels, d.Train, loader.Config{BatchSize: 1024, Shuffle: true})
//	it := l.Epoch(ctx, epoch)
//	defer it.Close()
//	for it.Next() {
//		b := it.Batch() // valid until the next call to Next
//		train(b.MiniBatch.Blocks, b.Features, b.Labels)
//	}
//	if err := it.Err(); err != nil { ... }
//	fmt.Println(it.Stats())
//
// A Batch's buffers are recycled when Next is called again (and the next
// epoch reuses the last one's), so steady-state iteration does not
// allocate; copy anything that must outlive the step.
package loader

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/graphmill/graphmill/sample"
)

// Sampler is the sampling stage (satisfied by *sample.Sampler). It must be
// safe for concurrent use.
type Sampler interface {
	SampleInto(mb *sample.MiniBatch, seeds []int32, seed uint64) error
}

// Fetcher is the feature stage (satisfied by *feature.Store and any
// feature.Source).
type Fetcher interface {
	Dim() int
	Gather(ctx context.Context, ids []int32, out []float32) error
}

// Config configures a Loader.
type Config struct {
	// BatchSize is the number of seeds per minibatch (required).
	BatchSize int
	// DropLast drops the last, shorter minibatch of an epoch.
	DropLast bool
	// Shuffle permutes the seeds every epoch (with a permutation drawn
	// from Seed and the epoch number).
	Shuffle bool
	// Seed seeds shuffling and sampling.
	Seed uint64
	// SampleWorkers is the number of sampling goroutines (0 = GOMAXPROCS).
	SampleWorkers int
	// Prefetch is the number of finished batches kept ready ahead of the
	// consumer (0 = 4).
	Prefetch int
	// Buffers bounds the batches alive at once (sampled, gathered, queued
	// or held by the consumer), and so the pipeline's memory: each holds
	// its blocks and gathered rows. 0 = 2×SampleWorkers + Prefetch + 4,
	// enough that sampling never waits for a buffer; any value >= 1 works.
	Buffers int
	// Shard and Shards split every batch for data-parallel training: the
	// epoch is cut into global batches of BatchSize×Shards seeds (the same
	// on every rank), and shard Shard takes its even share of each, so the
	// ranks' batches at step i together are global batch i (Shards 0 or
	// 1: no sharding).
	Shard, Shards int
}

// Batch is one minibatch delivered to the consumer.
type Batch struct {
	// Index is the batch's position in the epoch.
	Index int
	// MiniBatch holds the seeds, the blocks and the input nodes.
	MiniBatch *sample.MiniBatch
	// Features holds the input nodes' features, row-major
	// [len(MiniBatch.InputNodes) x dim]; nil without a Fetcher.
	Features []float32
	// Labels holds the seeds' labels; nil without labels.
	Labels []int32

	seeds []int32
	done  chan error
}

// Loader produces epochs of minibatches over a fixed seed set.
type Loader struct {
	s      Sampler
	f      Fetcher
	labels []int32
	seeds  []int32
	cfg    Config

	// Batch buffers (blocks, gathered rows, labels) outlive the epoch
	// that filled them: the next epoch takes them back, so a steady-state
	// epoch allocates no batch memory (a fresh 50 MB buffer costs more in
	// page faults than gathering into it).
	poolMu sync.Mutex
	pool   []*Batch
}

// takeBuffer returns a recycled batch buffer, or a new one.
func (l *Loader) takeBuffer() *Batch {
	l.poolMu.Lock()
	defer l.poolMu.Unlock()
	if n := len(l.pool); n > 0 {
		b := l.pool[n-1]
		l.pool[n-1] = nil
		l.pool = l.pool[:n-1]
		return b
	}
	return &Batch{MiniBatch: &sample.MiniBatch{}, done: make(chan error, 1)}
}

// putBuffers hands an epoch's buffers back once its goroutines have exited.
func (l *Loader) putBuffers(bs []*Batch) {
	l.poolMu.Lock()
	defer l.poolMu.Unlock()
	// In reverse, so the next epoch takes them in this epoch's order: the
	// first batches (every epoch has them) get the buffers that grew to a
	// batch's size, and spare ones stay spare.
	for i := len(bs) - 1; i >= 0; i-- {
		b := bs[i]
		select {
		case <-b.done: // a result the cancelled gather stage never read
		default:
		}
		b.Index, b.seeds = 0, nil
		l.pool = append(l.pool, b)
	}
}

// New returns a loader that samples with s, gathers with f (nil for no
// features), looks labels up in labels (nil for none) and iterates over
// seeds.
func New(s Sampler, f Fetcher, labels []int32, seeds []int32, cfg Config) (*Loader, error) {
	if s == nil {
		return nil, errors.New("loader: nil sampler")
	}
	if cfg.BatchSize <= 0 {
		return nil, fmt.Errorf("loader: batch size %d; must be positive", cfg.BatchSize)
	}
	if len(seeds) == 0 {
		return nil, errors.New("loader: no seeds")
	}
	if cfg.SampleWorkers < 0 || cfg.Prefetch < 0 || cfg.Buffers < 0 {
		return nil, fmt.Errorf("loader: negative workers (%d), prefetch (%d) or buffers (%d)", cfg.SampleWorkers, cfg.Prefetch, cfg.Buffers)
	}
	if labels != nil {
		for i, v := range seeds {
			if v < 0 || int(v) >= len(labels) {
				return nil, fmt.Errorf("loader: seed %d (index %d) has no label (labels cover [0, %d))", v, i, len(labels))
			}
		}
	}
	if cfg.SampleWorkers == 0 {
		cfg.SampleWorkers = runtime.GOMAXPROCS(0)
	}
	if cfg.Prefetch == 0 {
		cfg.Prefetch = 4
	}
	if cfg.Shards > 1 && (cfg.Shard < 0 || cfg.Shard >= cfg.Shards) {
		return nil, fmt.Errorf("loader: shard %d of %d", cfg.Shard, cfg.Shards)
	}
	if cfg.DropLast && len(seeds) < cfg.BatchSize {
		return nil, fmt.Errorf("loader: %d seeds make no full batch of %d with DropLast", len(seeds), cfg.BatchSize)
	}
	return &Loader{s: s, f: f, labels: labels, seeds: seeds, cfg: cfg}, nil
}

// NumBatches returns the number of minibatches per epoch.
func (l *Loader) NumBatches() int {
	bs := l.cfg.BatchSize * max(1, l.cfg.Shards)
	n := len(l.seeds) / bs
	if !l.cfg.DropLast && len(l.seeds)%bs != 0 {
		n++
	}
	return n
}

// Stats holds per-stage timings of an epoch so far. Sample and Gather are
// summed over the goroutines of their stage; FirstWait is the time the
// consumer waited for the first batch (the pipeline filling up), Wait the
// time it spent blocked in later calls to Next, Busy the time it spent
// between calls.
type Stats struct {
	Batches int
	// Edges and Rows count sampled edges and gathered feature rows.
	Edges, Rows int64
	Sample      time.Duration
	Gather      time.Duration
	FirstWait   time.Duration
	Wait        time.Duration
	Busy        time.Duration
	Elapsed     time.Duration
	// SampleWorkers is the number of sampling goroutines.
	SampleWorkers int
}

// Utilization is the fraction of the consumer's time spent outside Next
// once the pipeline has filled: Busy / (Busy + Wait), FirstWait excluded.
// Close to 1 means the pipeline keeps up.
func (s Stats) Utilization() float64 {
	if s.Busy+s.Wait == 0 {
		return 0
	}
	return float64(s.Busy) / float64(s.Busy+s.Wait)
}

// Bottleneck names the stage with the largest time per batch: "consumer"
// when the pipeline keeps up, else "sample" or "gather".
func (s Stats) Bottleneck() string {
	if s.Batches == 0 {
		return "none"
	}
	sample := s.Sample / time.Duration(max(1, s.SampleWorkers))
	switch {
	case s.Busy >= sample && s.Busy >= s.Gather:
		return "consumer"
	case sample >= s.Gather:
		return "sample"
	}
	return "gather"
}

// String summarises the stats on one line.
func (s Stats) String() string {
	per := func(d time.Duration) time.Duration { return d / time.Duration(max(1, s.Batches)) }
	return fmt.Sprintf("%d batches in %v: first batch after %v, sample %v/batch (%d workers), gather %v/batch, consumer busy %v wait %v/batch (%.1f%% busy), bottleneck %s",
		s.Batches, s.Elapsed.Round(time.Millisecond), s.FirstWait, per(s.Sample), s.SampleWorkers, per(s.Gather),
		per(s.Busy), per(s.Wait), 100*s.Utilization(), s.Bottleneck())
}

// Iter iterates one epoch. It is not safe for concurrent use (one
// consumer); Close must be called to stop the pipeline early.
type Iter struct {
	l       *Loader
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	out     chan *Batch
	errc    chan error
	free    chan *Batch
	bufs    []*Batch // every buffer of the epoch, returned to the loader by stop
	cur     *Batch
	err     error
	done    bool
	start   time.Time
	lastRet time.Time
	end     time.Time

	sampleNs, gatherNs atomic.Int64
	edges, rows        atomic.Int64
	stats              Stats
}

// Epoch starts the pipeline for epoch number epoch and returns its
// iterator. Cancelling ctx stops it (Next then returns false and Err
// returns ctx.Err()).
func (l *Loader) Epoch(ctx context.Context, epoch int) *Iter {
	ctx, cancel := context.WithCancel(ctx)
	it := &Iter{l: l, ctx: ctx, cancel: cancel, start: time.Now()}
	it.stats.SampleWorkers = l.cfg.SampleWorkers
	eseed := sample.EpochKey(l.cfg.Seed, epoch)
	batches, err := sample.Batches(l.seeds, l.cfg.BatchSize*max(1, l.cfg.Shards), l.cfg.Shuffle, eseed, l.cfg.DropLast)
	if err != nil {
		it.err, it.done = err, true
		cancel()
		return it
	}
	if k := l.cfg.Shards; k > 1 {
		for i, b := range batches {
			batches[i] = b[len(b)*l.cfg.Shard/k : len(b)*(l.cfg.Shard+1)/k]
		}
	}
	ahead := 2 * l.cfg.SampleWorkers
	it.out = make(chan *Batch, l.cfg.Prefetch)
	it.errc = make(chan error, 1)
	nbuf := ahead + l.cfg.Prefetch + 4
	if l.cfg.Buffers > 0 {
		nbuf = l.cfg.Buffers
	}
	it.free = make(chan *Batch, nbuf)
	it.bufs = make([]*Batch, nbuf)
	for i := range it.bufs {
		it.bufs[i] = l.takeBuffer()
		it.free <- it.bufs[i]
	}
	jobs := make(chan *Batch)
	ordered := make(chan *Batch, ahead)

	// Stage 1: dispatch seed batches, in order, to the samplers and to the
	// ordered queue the gather stage reads.
	it.wg.Add(1)
	go func() {
		defer it.wg.Done()
		defer close(jobs)
		defer close(ordered)
		for i, seeds := range batches {
			var b *Batch
			select {
			case b = <-it.free:
			case <-ctx.Done():
				return
			}
			b.Index, b.seeds = i, seeds
			select {
			case ordered <- b:
			case <-ctx.Done():
				return
			}
			select {
			case jobs <- b:
			case <-ctx.Done():
				return
			}
		}
	}()
	// Stage 2: sample on SampleWorkers goroutines.
	for w := 0; w < l.cfg.SampleWorkers; w++ {
		it.wg.Add(1)
		go func() {
			defer it.wg.Done()
			for b := range jobs {
				t0 := time.Now()
				err := l.s.SampleInto(b.MiniBatch, b.seeds, eseed)
				it.sampleNs.Add(int64(time.Since(t0)))
				if err != nil {
					err = fmt.Errorf("batch %d: %w", b.Index, err)
				} else {
					it.edges.Add(int64(b.MiniBatch.NumEdges()))
				}
				b.done <- err
			}
		}()
	}
	// Stage 3: gather features and labels, in batch order, into the
	// prefetch queue.
	it.wg.Add(1)
	go func() {
		defer it.wg.Done()
		defer close(it.out)
		for b := range ordered {
			var err error
			select {
			case err = <-b.done:
			case <-ctx.Done():
				return
			}
			if err == nil {
				err = it.finish(b)
			}
			if err != nil {
				it.errc <- err
				return
			}
			select {
			case it.out <- b:
			case <-ctx.Done():
				return
			}
		}
	}()
	return it
}

// finish gathers b's features and labels.
func (it *Iter) finish(b *Batch) error {
	mb := b.MiniBatch
	if f := it.l.f; f != nil {
		n := len(mb.InputNodes) * f.Dim()
		if cap(b.Features) < n {
			b.Features = make([]float32, n, n+n/4)
		}
		b.Features = b.Features[:n]
		t0 := time.Now()
		if err := f.Gather(it.ctx, mb.InputNodes, b.Features); err != nil {
			return fmt.Errorf("batch %d: %w", b.Index, err)
		}
		it.gatherNs.Add(int64(time.Since(t0)))
		it.rows.Add(int64(len(mb.InputNodes)))
	}
	if it.l.labels != nil {
		b.Labels = b.Labels[:0]
		for _, v := range mb.Seeds {
			b.Labels = append(b.Labels, it.l.labels[v])
		}
	}
	return nil
}

// Next advances to the next batch, recycling the previous one's buffers.
// It returns false at the end of the epoch, on error and after Close.
func (it *Iter) Next() bool {
	now := time.Now()
	if !it.lastRet.IsZero() {
		it.stats.Busy += now.Sub(it.lastRet)
	}
	if it.cur != nil {
		select {
		case it.free <- it.cur:
		default:
		}
		it.cur = nil
	}
	if it.done {
		return false
	}
	b, ok := <-it.out
	end := time.Now()
	if it.stats.Batches == 0 && ok {
		it.stats.FirstWait += end.Sub(now)
	} else {
		it.stats.Wait += end.Sub(now)
	}
	it.lastRet = end
	if !ok {
		it.done = true
		select {
		case it.err = <-it.errc:
		default:
			if err := it.ctx.Err(); err != nil && it.stats.Batches < it.l.NumBatches() {
				it.err = err
			}
		}
		it.stop()
		return false
	}
	it.cur = b
	it.stats.Batches++
	return true
}

// Batch returns the current batch; it is valid until the next call to
// Next or Close.
func (it *Iter) Batch() *Batch { return it.cur }

// Err returns the error that ended the epoch early, if any.
func (it *Iter) Err() error { return it.err }

// Close stops the pipeline and waits for its goroutines to exit. It is
// safe to call more than once and after the epoch ended.
func (it *Iter) Close() {
	if !it.done {
		it.done = true
		it.lastRet = time.Time{}
	}
	it.stop()
}

func (it *Iter) stop() {
	it.cancel()
	it.wg.Wait()
	if it.bufs != nil { // no goroutine of the epoch uses them any more
		it.l.putBuffers(it.bufs)
		it.bufs, it.cur = nil, nil
	}
	if it.end.IsZero() {
		it.end = time.Now()
	}
}

// Stats returns the epoch's timings so far.
func (it *Iter) Stats() Stats {
	s := it.stats
	s.Sample = time.Duration(it.sampleNs.Load())
	s.Gather = time.Duration(it.gatherNs.Load())
	s.Edges, s.Rows = it.edges.Load(), it.rows.Load()
	if it.end.IsZero() {
		s.Elapsed = time.Since(it.start)
	} else {
		s.Elapsed = it.end.Sub(it.start)
	}
	return s
}

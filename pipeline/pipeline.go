// Package pipeline runs the stages that prepare minibatches ahead of the
// training step, for every mode (neighbour-sampled, full graph,
// GNNAutoScale, layer-wise inference), in the shape of DGL GraphBolt's
// datapipe:
//
//	batch index -> stage 0 (N workers: sample, build) -> stage 1 (fetch features) -> [stage 2: pull history] -> prefetch queue -> consumer (step)
//
// A pipeline is
//
//   - staged: each Stage is a function over a *batch.MiniBatch, timed on its
//     own (Stats), so a user sees which stage limits the epoch; the first
//     stage may run on several goroutines, the later ones run in batch
//     order;
//   - bounded: at most Buffers batches are alive at once (being filled,
//     queued, or held by the consumer), which bounds its memory; that is
//     how training keeps its --max-memory plan;
//   - cancellable: cancelling the context stops every goroutine, Next
//     hands out no further batch (not even one already queued), and Close
//     waits for them;
//   - recycling: the consumer calls MiniBatch.Release when its step is
//     done, and the pipeline refills that batch (its id arrays, blocks and
//     gathered rows keep their capacity), so steady-state steps allocate
//     nothing large. Buffers are kept across epochs.
//
// Batches arrive in index order whatever the number of workers.
//
//	p := pipeline.New(pipeline.Config{Stages: []pipeline.Stage{
//		{Name: "sample", Workers: 4, Run: sampleBatch},
//		{Name: "gather", Run: gatherFeatures},
//	}})
//	it := p.Epoch(ctx, epoch, numBatches)
//	defer it.Close()
//	for it.Next() {
//		mb := it.Batch()
//		step(mb)
//		mb.Release() // hands the buffers back for a later batch
//	}
//	if err := it.Err(); err != nil { ... }
//	fmt.Println(it.Stats())
package pipeline

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/graphmill/graphmill/batch"
	"github.com/graphmill/graphmill/internal/cputime"
)

// Done, returned by the first stage for batch i, ends the epoch before
// batch i without error: for epochs whose length the first stage finds
// out as it goes (Epoch with n = math.MaxInt), such as layer-wise
// inference's runs of destinations, which shrink to fit a memory bound.
// The first stage must then run on one worker.
var Done = errors.New("pipeline: no more batches")

// Stage is one step of the preparation of every batch.
type Stage struct {
	// Name names the stage in Stats ("sample", "gather", "pull").
	Name string
	// Workers is the number of goroutines of the first stage (0 =
	// GOMAXPROCS); later stages run on one goroutine each, in batch order,
	// and must leave Workers 0 or 1.
	Workers int
	// Run prepares batch i of the epoch in mb. The first stage receives a
	// Reset batch whose Epoch and Seq are set (Seq = i); later stages
	// receive what the earlier ones produced. The first stage must be safe
	// for concurrent use when Workers > 1.
	Run func(ctx context.Context, i int, mb *batch.MiniBatch) error
}

// Config configures a Pipeline.
type Config struct {
	// Stages are run on every batch in order; there must be at least one.
	Stages []Stage
	// Prefetch is the number of finished batches kept ready ahead of the
	// consumer (0 = 4).
	Prefetch int
	// Buffers bounds the batches alive at once (being prepared, queued or
	// held by the consumer), and so the pipeline's memory. 0 = 2×(first
	// stage's workers) + Prefetch + 4, enough that the first stage never
	// waits for a buffer; any value >= 1 works, and 2 gives strict
	// alternation: batch i+1 is prepared while batch i steps, and batch
	// i+2 only once batch i is released.
	Buffers int
	// MaxBuffers, when above Buffers, lets an epoch add buffers up to it,
	// sized from what it measures (see depthFor): when preparing a batch
	// usually takes less than a step but a slow one (a batch whose rows
	// come from disk) takes several steps' time, the batches held ready
	// ahead cover it. The prefetch queue then holds up to MaxBuffers.
	MaxBuffers int
}

// Pipeline prepares epochs of minibatches with its stages. One epoch runs
// at a time.
type Pipeline struct {
	cfg     Config
	workers int
	nbuf    int
	maxbuf  int // Config.MaxBuffers, at least nbuf

	mu   sync.Mutex
	pool []*batch.MiniBatch // buffers kept between epochs
}

// New checks cfg and returns a pipeline.
func New(cfg Config) (*Pipeline, error) {
	if len(cfg.Stages) == 0 {
		return nil, errors.New("pipeline: no stages")
	}
	for i, s := range cfg.Stages {
		if s.Run == nil {
			return nil, fmt.Errorf("pipeline: stage %d (%s) has no Run function", i, s.Name)
		}
		if s.Workers < 0 || i > 0 && s.Workers > 1 {
			return nil, fmt.Errorf("pipeline: stage %d (%s) has %d workers; only the first stage runs on several", i, s.Name, s.Workers)
		}
	}
	if cfg.Prefetch < 0 || cfg.Buffers < 0 {
		return nil, fmt.Errorf("pipeline: negative prefetch (%d) or buffers (%d)", cfg.Prefetch, cfg.Buffers)
	}
	if cfg.Prefetch == 0 {
		cfg.Prefetch = 4
	}
	p := &Pipeline{cfg: cfg, workers: cfg.Stages[0].Workers}
	if p.workers == 0 {
		p.workers = runtime.GOMAXPROCS(0)
	}
	p.nbuf = 2*p.workers + cfg.Prefetch + 4
	if cfg.Buffers > 0 {
		p.nbuf = cfg.Buffers
	}
	p.maxbuf = max(p.nbuf, cfg.MaxBuffers)
	if p.maxbuf > p.nbuf {
		p.cfg.Prefetch = max(p.cfg.Prefetch, p.maxbuf)
	}
	return p, nil
}

// Buffers returns the number of batches alive at once at most when an
// epoch starts (MaxBuffers bounds what it may grow to).
func (p *Pipeline) Buffers() int { return p.nbuf }

// Workers returns the number of goroutines of the first stage.
func (p *Pipeline) Workers() int { return p.workers }

// StageStats is the time one stage spent on an epoch's batches, summed
// over its goroutines: Busy in wall time, CPU in its threads' CPU time
// (each stage goroutine is locked to its OS thread), which leaves out the
// time a busy machine kept it waiting for a core.
type StageStats struct {
	Name    string
	Workers int
	Busy    time.Duration
	CPU     time.Duration
}

// Stats holds the timings of an epoch so far. FirstWait is the time the
// consumer waited for the first batch (the pipeline filling up), Wait the
// time it spent blocked in later calls to Next, Busy the time it spent
// between calls (its steps).
type Stats struct {
	Batches int
	// Edges and Rows count the edges of the batches' blocks and the
	// feature rows they carry.
	Edges, Rows int64
	Stages      []StageStats
	FirstWait   time.Duration
	Wait        time.Duration
	Busy        time.Duration
	Elapsed     time.Duration
	// Buffers is the number of batch buffers the epoch ended with (more
	// than it started with when it grew them, Config.MaxBuffers).
	Buffers int
}

// StageCPU returns the CPU time of the stage named name (0 if none).
func (s Stats) StageCPU(name string) time.Duration {
	for _, st := range s.Stages {
		if st.Name == name {
			return st.CPU
		}
	}
	return 0
}

// Stage returns the busy time of the stage named name (0 if none).
func (s Stats) Stage(name string) time.Duration {
	for _, st := range s.Stages {
		if st.Name == name {
			return st.Busy
		}
	}
	return 0
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

// Bottleneck names the stage with the largest time per batch (a stage's
// time divided by its workers): "consumer" when the pipeline keeps up.
func (s Stats) Bottleneck() string {
	if s.Batches == 0 {
		return "none"
	}
	name, worst := "consumer", s.Busy
	for _, st := range s.Stages {
		if d := st.Busy / time.Duration(max(1, st.Workers)); d > worst {
			name, worst = st.Name, d
		}
	}
	return name
}

// String summarises the stats on one line.
func (s Stats) String() string {
	per := func(d time.Duration) time.Duration { return d / time.Duration(max(1, s.Batches)) }
	var b strings.Builder
	fmt.Fprintf(&b, "%d batches in %v: first batch after %v", s.Batches, s.Elapsed.Round(time.Millisecond), s.FirstWait)
	for _, st := range s.Stages {
		fmt.Fprintf(&b, ", %s %v/batch", st.Name, per(st.Busy))
		if st.Workers > 1 {
			fmt.Fprintf(&b, " (%d workers)", st.Workers)
		}
	}
	fmt.Fprintf(&b, ", consumer busy %v wait %v/batch (%.1f%% busy), bottleneck %s",
		per(s.Busy), per(s.Wait), 100*s.Utilization(), s.Bottleneck())
	return b.String()
}

// Iter iterates one epoch. It is not safe for concurrent use (one
// consumer); Close must be called to stop the pipeline early.
type Iter struct {
	p       *Pipeline
	n       int
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	out     chan *batch.MiniBatch
	errc    chan error
	free    *freeList
	cur     *batch.MiniBatch
	err     error
	done    bool
	start   time.Time
	lastRet time.Time
	end     time.Time
	held    atomic.Int32 // batches handed to the consumer and not released

	busy, cpu   []atomic.Int64 // per stage: wall and thread CPU nanoseconds
	edges, rows atomic.Int64
	stats       Stats

	bufs  int      // buffers in use by the epoch (grows up to p.maxbuf)
	depth depthLog // recent preparation and step times (MaxBuffers)
}

// job is a batch travelling the stages.
type job struct {
	i    int
	mb   *batch.MiniBatch
	done chan error
}

// Epoch starts preparing the n batches of epoch number epoch and returns
// their iterator. Cancelling ctx stops it: Next then returns false at
// once, batches already prepared included, and Err returns ctx.Err()
// (unless every batch had been handed out).
func (p *Pipeline) Epoch(ctx context.Context, epoch, n int) *Iter {
	ctx, cancel := context.WithCancel(ctx)
	it := &Iter{p: p, n: n, ctx: ctx, cancel: cancel, start: time.Now(), busy: make([]atomic.Int64, len(p.cfg.Stages)), cpu: make([]atomic.Int64, len(p.cfg.Stages))}
	it.out = make(chan *batch.MiniBatch, p.cfg.Prefetch)
	it.errc = make(chan error, 1)
	it.free = newFreeList(p.maxbuf)
	it.bufs = p.nbuf
	p.mu.Lock()
	// Fresh buffers go to the bottom of the stack, the previous epoch's
	// (in the order they were used) on top, so that the hottest are
	// taken first.
	for i := len(p.pool); i < p.nbuf; i++ {
		it.free.put(&batch.MiniBatch{})
	}
	for _, mb := range p.pool[max(0, len(p.pool)-p.nbuf):] {
		it.free.put(mb)
	}
	clear(p.pool)
	p.pool = p.pool[:0]
	p.mu.Unlock()
	release := func(mb *batch.MiniBatch) { // called once per hand-out (MiniBatch.Release)
		it.held.Add(-1)
		it.free.put(mb)
	}
	stages := p.cfg.Stages
	ahead := 2 * p.workers
	jobs := make(chan job)
	ordered := make(chan job, ahead)

	// Dispatch batch indices, in order, to the first stage's workers and
	// to the ordered queue the later stages read.
	it.wg.Add(1)
	go func() {
		defer it.wg.Done()
		defer close(jobs)
		defer close(ordered)
		for i := 0; i < n; i++ {
			mb := it.free.get(ctx)
			if mb == nil {
				return
			}
			mb.Reset()
			mb.SetRelease(release)
			mb.Epoch, mb.Seq = uint32(epoch), uint64(i)
			j := job{i: i, mb: mb, done: make(chan error, 1)}
			select {
			case ordered <- j:
			case <-ctx.Done():
				return
			}
			select {
			case jobs <- j:
			case <-ctx.Done():
				return
			}
		}
	}()
	// The first stage, on its workers.
	for w := 0; w < p.workers; w++ {
		it.wg.Add(1)
		go func() {
			defer it.wg.Done()
			runtime.LockOSThread() // so that the thread's CPU clock is the stage's
			defer runtime.UnlockOSThread()
			for j := range jobs {
				err := it.run(ctx, 0, stages[0], j)
				if errors.Is(err, Done) {
					err = Done
				} else if err != nil {
					err = fmt.Errorf("batch %d: %s: %w", j.i, stages[0].Name, err)
				} else {
					it.edges.Add(int64(j.mb.NumEdges()))
				}
				j.done <- err
			}
		}()
	}
	// The later stages, in batch order: one goroutine per stage, chained.
	in := make(chan job, 1)
	it.wg.Add(1)
	go func(in chan<- job) { // restore the order of the first stage's output
		defer it.wg.Done()
		defer close(in)
		for j := range ordered {
			var err error
			select {
			case err = <-j.done:
			case <-ctx.Done():
				return
			}
			if err == Done {
				return // the epoch ends here
			}
			if err != nil {
				it.fail(err)
				return
			}
			select {
			case in <- j:
			case <-ctx.Done():
				return
			}
		}
	}(in)
	for k := 1; k < len(stages); k++ {
		next := make(chan job, 1)
		it.wg.Add(1)
		go func(k int, in <-chan job, next chan<- job) {
			defer it.wg.Done()
			defer close(next)
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			for j := range in {
				err := it.run(ctx, k, stages[k], j)
				if err != nil {
					it.fail(fmt.Errorf("batch %d: %s: %w", j.i, stages[k].Name, err))
					return
				}
				select {
				case next <- j:
				case <-ctx.Done():
					return
				}
			}
		}(k, in, next)
		in = next
	}
	it.wg.Add(1)
	go func(in <-chan job) {
		defer it.wg.Done()
		defer close(it.out)
		for j := range in {
			it.rows.Add(int64(j.mb.Features.Rows))
			select {
			case it.out <- j.mb:
			case <-ctx.Done():
				return
			}
		}
	}(in)
	return it
}

// fail records the first error. The failing goroutine then returns,
// closing its output: the batches before the failed one still reach the
// consumer, whose Next then reports the error and stops the rest.
// run runs stage k on job j, adding its wall and thread CPU time to the
// stage's (the caller is locked to its OS thread).
func (it *Iter) run(ctx context.Context, k int, st Stage, j job) error {
	t0, c0 := time.Now(), cputime.Thread()
	err := st.Run(ctx, j.i, j.mb)
	it.cpu[k].Add(int64(cputime.Thread() - c0))
	d := time.Since(t0)
	it.busy[k].Add(int64(d))
	if k > 0 && it.p.maxbuf > it.p.nbuf {
		it.depth.prep(d)
	}
	return err
}

func (it *Iter) fail(err error) {
	select {
	case it.errc <- err:
	default:
	}
}

// Next advances to the next batch. The consumer owns it until it calls
// its Release; it may hold several at once (GNNAutoScale keeps batch i
// until batch i+1 is ready), but Next fails when the consumer holds every
// buffer, which would otherwise wait forever. It returns false at the end
// of the epoch, on error, after Close, and once the epoch's context is
// cancelled, even with batches still queued: a training loop stops at the
// end of the step it is running (Err then returns the context's error).
func (it *Iter) Next() bool {
	now := time.Now()
	if !it.lastRet.IsZero() {
		it.stats.Busy += now.Sub(it.lastRet)
		if it.p.maxbuf > it.bufs {
			it.depth.step(now.Sub(it.lastRet))
			if want := min(it.p.maxbuf, it.depth.want()); want > it.bufs {
				for ; it.bufs < want; it.bufs++ {
					it.free.put(&batch.MiniBatch{})
				}
			}
		}
	}
	it.cur = nil
	if it.done {
		return false
	}
	if it.cancelled() {
		return false
	}
	if h := int(it.held.Load()); h >= it.bufs && it.stats.Batches < it.n {
		it.err = fmt.Errorf("pipeline: the consumer holds all %d batch buffers; call MiniBatch.Release when a step is done", h)
		it.done = true
		it.stop()
		return false
	}
	mb, ok := <-it.out
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
			if err := it.ctx.Err(); err != nil && it.stats.Batches < it.n {
				it.err = err
			}
		}
		it.stop()
		return false
	}
	if it.ctx.Err() != nil {
		// Cancelled while the batch was queued: it goes back unused.
		it.free.put(mb)
		it.cancelled()
		return false
	}
	it.held.Add(1)
	it.cur = mb
	it.stats.Batches++
	return true
}

// cancelled ends the epoch when its context is done (the caller's, not
// Close's: Close sets done first), recording the context's error, and
// reports whether it did.
func (it *Iter) cancelled() bool {
	err := it.ctx.Err()
	if err == nil {
		return false
	}
	it.done = true
	if it.stats.Batches < it.n {
		it.err = err
	}
	it.stop()
	return true
}

// Batch returns the batch the last successful Next delivered.
func (it *Iter) Batch() *batch.MiniBatch { return it.cur }

// Err returns the error that ended the epoch early, if any.
func (it *Iter) Err() error { return it.err }

// Close stops the pipeline and waits for its goroutines to exit; the
// buffers not held by the consumer go back to the pipeline for the next
// epoch. It is safe to call more than once and after the epoch ended.
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
	if it.end.IsZero() {
		it.end = time.Now()
		// Every goroutine has exited: the free buffers and those queued
		// for the consumer return to the pool (those dropped mid-stage by
		// a cancellation are left to the collector).
		it.p.mu.Lock()
		it.p.pool = append(it.p.pool, it.free.drain()...)
		for mb := range it.out {
			it.p.pool = append(it.p.pool, mb)
		}
		it.p.mu.Unlock()
	}
}

// Stats returns the epoch's timings so far.
func (it *Iter) Stats() Stats {
	s := it.stats
	s.Stages = make([]StageStats, len(it.p.cfg.Stages))
	for k, st := range it.p.cfg.Stages {
		w := 1
		if k == 0 {
			w = it.p.workers
		}
		s.Stages[k] = StageStats{Name: st.Name, Workers: w, Busy: time.Duration(it.busy[k].Load()), CPU: time.Duration(it.cpu[k].Load())}
	}
	s.Edges, s.Rows = it.edges.Load(), it.rows.Load()
	s.Buffers = it.bufs
	if it.end.IsZero() {
		s.Elapsed = time.Since(it.start)
	} else {
		s.Elapsed = it.end.Sub(it.start)
	}
	return s
}

// freeList holds an epoch's free minibatch buffers as a stack: the buffer
// released last is handed out first. While the loader runs ahead of its
// consumer the free buffers pile up, and a first-in-first-out queue (the
// channel this replaced) would hand out each of them in turn, so every
// one of the nbuf buffers grows to a full minibatch, is first-touched
// (page faults) and keeps falling out of the caches and TLB. Last-in-first-
// out reuses the few most recently released buffers, whose pages are
// mapped and whose lines are still cached, and leaves spares untouched.
type freeList struct {
	mu    sync.Mutex
	stack []*batch.MiniBatch
	avail chan struct{} // one token per buffer on the stack
}

func newFreeList(n int) *freeList {
	return &freeList{stack: make([]*batch.MiniBatch, 0, n), avail: make(chan struct{}, n)}
}

// put pushes mb. At most the list's capacity of buffers may be on it.
func (f *freeList) put(mb *batch.MiniBatch) {
	f.mu.Lock()
	f.stack = append(f.stack, mb)
	f.mu.Unlock()
	select {
	case f.avail <- struct{}{}:
	default: // cannot happen: at most its capacity of buffers exist
	}
}

// get pops the most recently put buffer, waiting for one; it returns nil
// when ctx is done first.
func (f *freeList) get(ctx context.Context) *batch.MiniBatch {
	select {
	case <-f.avail:
	case <-ctx.Done():
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	k := len(f.stack) - 1
	mb := f.stack[k]
	f.stack[k] = nil
	f.stack = f.stack[:k]
	return mb
}

// drain removes and returns every buffer on the stack, bottom first. Call
// it only when no other goroutine uses the list.
func (f *freeList) drain() []*batch.MiniBatch {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.stack
	f.stack = nil
	for len(f.avail) > 0 {
		<-f.avail
	}
	return out
}

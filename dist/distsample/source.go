package distsample

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/graphmill/graphmill/dist"
	"github.com/graphmill/graphmill/loader"
	"github.com/graphmill/graphmill/nn"
	"github.com/graphmill/graphmill/sample"
	"github.com/graphmill/graphmill/train"
)

// SourceConfig configures a Source.
type SourceConfig struct {
	// BatchSize is the number of seeds per minibatch on this rank.
	BatchSize int
	// Seed shuffles and keys the draws: train.LoaderSeed(cfg) draws what a
	// single process's loader draws for the same seed nodes.
	Seed uint64
	// Prefetch is the number of minibatches prepared ahead (0: 2).
	Prefetch int
	// NoShuffle keeps the seeds' order (tests).
	NoShuffle bool
}

// Source is a train.BatchSource over the Graph: every rank's batches are
// its own part's seed nodes (shuffled every epoch), and every rank takes
// the same number of steps per epoch (the largest rank's count; a rank's
// seeds are spread evenly over them), as data-parallel training needs.
type Source struct {
	g      *Graph
	cfg    SourceConfig
	seeds  []int32 // global ids
	labels []int32 // per seed
	nb     int
}

// NewSource returns a source over the part's nodes local (its training
// split, local ids; labels indexed by local id). It agrees on the number
// of batches with the other ranks (a collective: every rank must call it).
func (g *Graph) NewSource(ctx context.Context, local []int32, labels []int32, cfg SourceConfig) (*Source, error) {
	if cfg.BatchSize < 1 {
		return nil, fmt.Errorf("distsample: batch size %d", cfg.BatchSize)
	}
	if cfg.Prefetch <= 0 {
		cfg.Prefetch = 2
	}
	s := &Source{g: g, cfg: cfg, seeds: make([]int32, len(local)), labels: make([]int32, len(local))}
	for i, v := range local {
		if v < 0 || int(v) >= g.inner {
			return nil, fmt.Errorf("distsample: seed %d is not an inner node of part %d", v, g.rank)
		}
		s.seeds[i] = g.part.GlobalIDs[v]
		if labels != nil {
			s.labels[i] = labels[v]
		}
	}
	n := []int64{int64((len(local) + cfg.BatchSize - 1) / cfg.BatchSize)}
	if err := g.comm.AllReduce(ctx, n, dist.Max); err != nil {
		return nil, err
	}
	s.nb = int(n[0])
	if len(local) < s.nb {
		return nil, fmt.Errorf("distsample: part %d has %d training nodes for the %d steps per epoch another part needs; partition with --balance-train", g.rank, len(local), s.nb)
	}
	return s, nil
}

// NumBatches returns the number of batches of an epoch.
func (s *Source) NumBatches() int { return s.nb }

// Batches returns epoch epoch's seed batches (global ids) and their
// labels.
func (s *Source) Batches(epoch int) (seeds, labels [][]int32) {
	n := len(s.seeds)
	perm := make([]int32, n)
	for i := range perm {
		perm[i] = int32(i)
	}
	if !s.cfg.NoShuffle {
		b, _ := sample.Batches(perm, n, true, sample.EpochKey(s.cfg.Seed, epoch), false)
		perm = b[0]
	}
	for i := 0; i < s.nb; i++ {
		lo, hi := i*n/s.nb, (i+1)*n/s.nb
		bs, bl := make([]int32, hi-lo), make([]int32, hi-lo)
		for j, p := range perm[lo:hi] {
			bs[j], bl[j] = s.seeds[p], s.labels[p]
		}
		seeds, labels = append(seeds, bs), append(labels, bl)
	}
	return seeds, labels
}

// Epoch starts an epoch: a goroutine samples and gathers batches ahead of
// the consumer.
func (s *Source) Epoch(ctx context.Context, epoch int) train.BatchIter {
	ctx, cancel := context.WithCancel(ctx)
	it := &iter{cancel: cancel, ch: make(chan *loader.Batch, s.cfg.Prefetch), start: time.Now()}
	seeds, labels := s.Batches(epoch)
	key := sample.EpochKey(s.cfg.Seed, epoch)
	it.wg.Add(1)
	go func() {
		defer it.wg.Done()
		defer close(it.ch)
		var a sample.Assembler
		for i := range seeds {
			t := time.Now()
			mb := &sample.MiniBatch{}
			if err := s.g.Sample(ctx, &a, mb, seeds[i], key); err != nil {
				it.setErr(fmt.Errorf("batch %d: %w", i, err))
				return
			}
			t1 := time.Now()
			var x []float32
			if s.g.feat != nil {
				x = make([]float32, len(mb.InputNodes)*s.g.dim)
				if err := s.g.Gather(ctx, mb.InputNodes, x); err != nil {
					it.setErr(fmt.Errorf("batch %d: %w", i, err))
					return
				}
			}
			it.mu.Lock()
			it.stats.Sample += t1.Sub(t)
			it.stats.Gather += time.Since(t1)
			it.mu.Unlock()
			select {
			case it.ch <- &loader.Batch{Index: i, MiniBatch: mb, Features: x, Labels: labels[i]}:
			case <-ctx.Done():
				return
			}
		}
	}()
	return it
}

// iter is one epoch of a Source.
type iter struct {
	cancel context.CancelFunc
	ch     chan *loader.Batch
	wg     sync.WaitGroup
	cur    *loader.Batch
	start  time.Time

	mu    sync.Mutex
	err   error
	stats loader.Stats
}

func (it *iter) setErr(err error) {
	it.mu.Lock()
	if it.err == nil {
		it.err = err
	}
	it.mu.Unlock()
}

func (it *iter) Next() bool {
	t := time.Now()
	b, ok := <-it.ch
	it.mu.Lock()
	it.stats.Wait += time.Since(t)
	if ok {
		it.stats.Batches++
	}
	it.mu.Unlock()
	it.cur = b
	return ok && it.Err() == nil
}

func (it *iter) Batch() *loader.Batch { return it.cur }

func (it *iter) Err() error {
	it.mu.Lock()
	defer it.mu.Unlock()
	return it.err
}

func (it *iter) Close() {
	it.cancel()
	for range it.ch {
	}
	it.wg.Wait()
}

func (it *iter) Stats() loader.Stats {
	it.mu.Lock()
	defer it.mu.Unlock()
	s := it.stats
	s.Elapsed = time.Since(it.start)
	s.SampleWorkers = 1
	return s
}

// Evaluator returns a train.Evaluator that scores the model on every
// rank's validation and test nodes (val, test: this part's, local ids;
// labels by local id) with every neighbour sampled (fanouts of -1 for
// layers layers, so the logits are the full-graph ones) in batches of
// batch seeds, and sums the counts over the ranks (a collective: every
// rank evaluates at the same points).
func (g *Graph) Evaluator(val, test, labels []int32, layers, batch int) train.Evaluator {
	all := make([]int, layers)
	for i := range all {
		all[i] = -1
	}
	score := func(ctx context.Context, m *nn.Model, ids []int32) (c, t, loss float64, err error) {
		var a sample.Assembler
		var mb sample.MiniBatch
		for lo := 0; lo < len(ids); lo += batch {
			hi := min(lo+batch, len(ids))
			seeds := make([]int32, hi-lo)
			lab := make([]int32, hi-lo)
			for j, v := range ids[lo:hi] {
				seeds[j], lab[j] = g.part.GlobalIDs[v], labels[v]
			}
			if err := g.SampleFanouts(ctx, &a, &mb, seeds, 0, all); err != nil {
				return 0, 0, 0, err
			}
			x := make([]float32, len(mb.InputNodes)*g.dim)
			if err := g.Gather(ctx, mb.InputNodes, x); err != nil {
				return 0, 0, 0, err
			}
			cc, tt, ll, err := train.ScoreBlocks(m, &mb, x, lab)
			if err != nil {
				return 0, 0, 0, err
			}
			c, t, loss = c+float64(cc), t+float64(tt), loss+ll
		}
		return c, t, loss, nil
	}
	return func(ctx context.Context, m *nn.Model) (train.Evaluation, error) {
		vc, vt, vl, err := score(ctx, m, val)
		if err != nil {
			return train.Evaluation{}, err
		}
		tc, tt, _, err := score(ctx, m, test)
		if err != nil {
			return train.Evaluation{}, err
		}
		sums := []float64{vc, vt, vl, tc, tt}
		if err := g.comm.AllReduce(ctx, sums, dist.Sum); err != nil {
			return train.Evaluation{}, err
		}
		ev := train.Evaluation{}
		if sums[1] > 0 {
			ev.ValAcc, ev.ValLoss = sums[0]/sums[1], sums[2]/sums[1]
		}
		if sums[4] > 0 {
			ev.TestAcc = sums[3] / sums[4]
		}
		return ev, nil
	}
}

// GlobalInDegrees returns every node's in-degree in the whole graph,
// indexed by global id, assembled from every rank's part (a collective).
func (g *Graph) GlobalInDegrees(ctx context.Context) ([]float32, error) {
	deg := make([]float64, len(g.partOf))
	for v := 0; v < g.inner; v++ {
		deg[g.part.GlobalIDs[v]] = float64(g.part.InDegrees[v])
	}
	if err := g.comm.AllReduce(ctx, deg, dist.Sum); err != nil {
		return nil, err
	}
	out := make([]float32, len(deg))
	for i, d := range deg {
		out[i] = float32(d)
	}
	return out, nil
}


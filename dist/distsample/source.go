package distsample

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"sync"

	"github.com/graphmill/graphmill/batch"
	"github.com/graphmill/graphmill/dist"
	"github.com/graphmill/graphmill/engine"
	"github.com/graphmill/graphmill/nn"
	"github.com/graphmill/graphmill/pipeline"
	"github.com/graphmill/graphmill/sample"
)

// SourceConfig configures a Source.
type SourceConfig struct {
	// BatchSize is the number of seeds per step over all ranks (the
	// global batch), as a single process's batch size.
	BatchSize int
	// Seed shuffles and keys the draws: train.LoaderSeed(cfg) gives the
	// batches and draws of a single process's loader.
	Seed uint64
	// Prefetch is the number of minibatches prepared ahead (0: 2).
	Prefetch int
	// Workers is the number of minibatches prepared at once (0: 2).
	Workers int
}

// Source is a train.BatchSource over the Graph that reproduces a single
// process's epochs: every rank knows the whole training split (gathered
// once, in increasing id order), shuffles it as the single process's
// loader does and cuts it into the same global batches; at step i each
// rank takes the seeds of global batch i that its part owns, so the ranks'
// minibatches together are the single process's minibatch i, node for
// node (keyed draws), and the all-reduced gradient is its gradient.
// graphmill partition --balance-train makes the ranks' shares even. A rank
// that owns no seed of a batch trains on one unlabelled seed (it adds
// nothing to the gradient) so that every rank takes every step.
type Source struct {
	g      *Graph
	cfg    SourceConfig
	all    []int32 // the whole training split, global ids, increasing
	labels []int32 // by local id
	pad    int32   // a seed of this rank for empty shares
	nb     int
	p      *pipeline.Pipeline

	// The current epoch's batches, read by the stages.
	seeds, batchLabels [][]int32
	key                uint64
}

// NewSource returns a source over the ranks' training nodes (local: this
// part's split, local ids; labels by local id). It gathers the whole split
// from the other ranks (a collective: every rank must call it).
func (g *Graph) NewSource(ctx context.Context, local []int32, labels []int32, cfg SourceConfig) (*Source, error) {
	if cfg.BatchSize < 1 {
		return nil, fmt.Errorf("distsample: batch size %d", cfg.BatchSize)
	}
	if cfg.Prefetch <= 0 {
		cfg.Prefetch = 2
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 2
	}
	if g.inner == 0 {
		return nil, fmt.Errorf("distsample: part %d owns no nodes", g.rank)
	}
	mine := make([]byte, 4*len(local))
	for i, v := range local {
		if v < 0 || int(v) >= g.inner {
			return nil, fmt.Errorf("distsample: seed %d is not an inner node of part %d", v, g.rank)
		}
		binary.LittleEndian.PutUint32(mine[4*i:], uint32(g.part.GlobalIDs[v]))
	}
	counts := make([]int64, g.size)
	counts[g.rank] = int64(len(local))
	if err := g.comm.AllReduce(ctx, counts, dist.Sum); err != nil {
		return nil, err
	}
	most := slices.Max(counts)
	send := make([]byte, 4*most)
	copy(send, mine)
	recv := make([]byte, len(send)*g.size)
	if err := g.comm.AllGather(ctx, send, recv); err != nil {
		return nil, err
	}
	s := &Source{g: g, cfg: cfg, labels: labels, pad: 0}
	for q := 0; q < g.size; q++ {
		blk := recv[q*len(send):]
		for i := 0; i < int(counts[q]); i++ {
			s.all = append(s.all, int32(binary.LittleEndian.Uint32(blk[4*i:])))
		}
	}
	slices.Sort(s.all)
	if len(s.all) == 0 {
		return nil, fmt.Errorf("distsample: no training nodes in any part")
	}
	s.nb = (len(s.all) + cfg.BatchSize - 1) / cfg.BatchSize
	if err := s.newPipeline(); err != nil {
		return nil, err
	}
	return s, nil
}

// NumBatches returns the number of steps of an epoch.
func (s *Source) NumBatches() int { return s.nb }

// NumSeeds returns the number of seeds an epoch visits over all ranks
// (train's seeds per second are the run's, whatever this rank owns).
func (s *Source) NumSeeds() int { return len(s.all) }

// Batches returns this rank's seeds (global ids) and labels at every step
// of epoch epoch (a rank owning none of a global batch gets one seed
// labelled -1).
func (s *Source) Batches(epoch int) (seeds, labels [][]int32) {
	global, _ := sample.Batches(s.all, s.cfg.BatchSize, true, sample.EpochKey(s.cfg.Seed, epoch), false)
	g := s.g
	for _, b := range global {
		var bs, bl []int32
		for _, v := range b {
			if int(g.partOf[v]) == g.rank {
				bs, bl = append(bs, v), append(bl, s.label(v))
			}
		}
		if len(bs) == 0 {
			bs, bl = []int32{g.part.GlobalIDs[s.pad]}, []int32{-1}
		}
		seeds, labels = append(seeds, bs), append(labels, bl)
	}
	return seeds, labels
}

func (s *Source) label(v int32) int32 {
	if s.labels == nil {
		return -1
	}
	return s.labels[s.g.LocalID(v)]
}

// Epoch starts an epoch on the source's pipeline (package pipeline):
// Workers goroutines sample batches (each mostly waits for other ranks'
// replies, so several in flight hide the latency), then one gathers their
// feature rows and labels; batches arrive in order.
func (s *Source) Epoch(ctx context.Context, epoch int) *pipeline.Iter {
	s.seeds, s.batchLabels = s.Batches(epoch)
	s.key = sample.EpochKey(s.cfg.Seed, epoch)
	return s.p.Epoch(ctx, epoch, len(s.seeds))
}

// newPipeline builds the source's stages.
func (s *Source) newPipeline() error {
	var pool sync.Pool
	pool.New = func() any { return new(sample.Assembler) }
	stages := []pipeline.Stage{{Name: "sample", Workers: s.cfg.Workers, Run: func(ctx context.Context, i int, mb *batch.MiniBatch) error {
		a := pool.Get().(*sample.Assembler)
		defer pool.Put(a)
		if err := s.g.Sample(ctx, a, mb, s.seeds[i], s.key); err != nil {
			return fmt.Errorf("batch %d: %w", i, err)
		}
		return nil
	}}, {Name: "gather", Run: func(ctx context.Context, i int, mb *batch.MiniBatch) error {
		ids, err := mb.Local()
		if err != nil {
			return err
		}
		if s.g.feat != nil {
			if err := s.g.Gather(ctx, ids, mb.Features.SetF32(len(ids), s.g.dim)); err != nil {
				return fmt.Errorf("batch %d: %w", i, err)
			}
		}
		mb.Labels = append(mb.Labels[:0], s.batchLabels[i]...)
		return nil
	}}}
	p, err := pipeline.New(pipeline.Config{Stages: stages, Prefetch: s.cfg.Prefetch})
	if err != nil {
		return err
	}
	s.p = p
	return nil
}

// Evaluator returns an evaluator (a train.Evaluator) that scores the model on every
// rank's validation and test nodes (val, test: this part's, local ids;
// labels by local id) with every neighbour sampled (fanouts of -1 for
// layers layers, so the logits are the full-graph ones) in batches of
// size seeds, and sums the counts over the ranks (a collective: every
// rank evaluates at the same points).
func (g *Graph) Evaluator(val, test, labels []int32, layers, size int) func(context.Context, *nn.Model) (engine.Evaluation, error) {
	all := make([]int, layers)
	for i := range all {
		all[i] = -1
	}
	score := func(ctx context.Context, m *nn.Model, ids []int32) (c, t, loss float64, err error) {
		var a sample.Assembler
		var mb batch.MiniBatch
		for lo := 0; lo < len(ids); lo += size {
			hi := min(lo+size, len(ids))
			seeds := make([]int32, hi-lo)
			lab := make([]int32, hi-lo)
			for j, v := range ids[lo:hi] {
				seeds[j], lab[j] = g.part.GlobalIDs[v], labels[v]
			}
			if err := g.SampleFanouts(ctx, &a, &mb, seeds, 0, all); err != nil {
				return 0, 0, 0, err
			}
			in, err := mb.Local()
			if err != nil {
				return 0, 0, 0, err
			}
			if err := g.Gather(ctx, in, mb.Features.SetF32(len(in), g.dim)); err != nil {
				return 0, 0, 0, err
			}
			mb.Labels = append(mb.Labels[:0], lab...)
			cc, tt, ll, err := engine.ScoreBlocks(ctx, m, &mb)
			if err != nil {
				return 0, 0, 0, err
			}
			c, t, loss = c+float64(cc), t+float64(tt), loss+ll
		}
		return c, t, loss, nil
	}
	return func(ctx context.Context, m *nn.Model) (engine.Evaluation, error) {
		saved := g.saveStats()
		defer g.restoreStats(saved)
		vc, vt, vl, err := score(ctx, m, val)
		if err != nil {
			return engine.Evaluation{}, err
		}
		tc, tt, _, err := score(ctx, m, test)
		if err != nil {
			return engine.Evaluation{}, err
		}
		sums := []float64{vc, vt, vl, tc, tt}
		if err := g.comm.AllReduce(ctx, sums, dist.Sum); err != nil {
			return engine.Evaluation{}, err
		}
		ev := engine.Evaluation{}
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

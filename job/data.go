package job

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/graphmill/graphmill/dataset"
	"github.com/graphmill/graphmill/dataset/parts"
	"github.com/graphmill/graphmill/dist"
	"github.com/graphmill/graphmill/dist/distsample"
	"github.com/graphmill/graphmill/dist/samplersvc"
	"github.com/graphmill/graphmill/feature"
	"github.com/graphmill/graphmill/internal/units"
	"github.com/graphmill/graphmill/nn"
	"github.com/graphmill/graphmill/sample"
	"github.com/graphmill/graphmill/train"
)

// trainData is what a run reads: the dataset given to the runner, extra
// runner options, and what to do after the run.
type trainData struct {
	ds     *dataset.Dataset
	opts   []train.Option
	report func(w io.Writer)       // prints the run's traffic figures
	close  func(ok bool)           // releases everything (ok: the run ended well on every rank)
	cfgFix func(cfg *train.Config) // adjusts the configuration
}

// openDistSampled prepares distributed sampling over the partitioned
// dataset dir: this rank's part, its features, the distributed sampler as
// the run's batch source, distributed evaluation and global degrees.
func openDistSampled(ctx context.Context, s Spec, cfg *train.Config) (*trainData, error) {
	comm, out := s.Comm, s.Log
	if comm == nil {
		book, err := parts.ReadBook(s.Dataset)
		if err != nil {
			return nil, err
		}
		src := book.Source
		if src == "" {
			src = "the original dataset"
		}
		return nil, fmt.Errorf("%s is a partitioned dataset of %d parts: train on it under a launcher with one rank per part (graphmill launch -n %d -- graphmill train --dataset %s --mode sampled, or --mode sar for full-graph steps), or give the whole dataset (%s), or one part, which is a dataset of its nodes and halo (%s)",
			s.Dataset, book.NumParts, book.NumParts, s.Dataset, src, filepath.Join(s.Dataset, book.Parts[0].Dir))
	}
	if cfg.Mode != train.Sampled {
		return nil, fmt.Errorf("a partitioned dataset trains in sampled mode (--mode sampled: distributed sampling) or over the whole graph with SAR (--mode sar, sa or one-shot), not %s", cfg.Mode)
	}
	if cfg.OverlapEval {
		return nil, fmt.Errorf("--overlap-eval: distributed evaluation is a collective and cannot overlap training")
	}
	if spec, _ := nn.Lookup(cfg.Model.Kind); spec.EdgeWeights {
		return nil, fmt.Errorf("model %s aggregates by edge weights, which distributed sampling does not carry: train on the whole dataset, or with --mode sar", cfg.Model.Kind)
	}
	// Each rank reads its part's features as stored, in memory.
	switch {
	case cfg.FeatureDType != "":
		return nil, fmt.Errorf("--feature-dtype %s: distributed sampling reads each part's features as stored; convert the dataset first ('graphmill data convert'), then partition it", cfg.FeatureDType)
	case slices.ContainsFunc([]string{cfg.FeaturesInMemory, cfg.GraphInMemory, cfg.GraphOnDisk}, func(v string) bool { return v != "" && v != "auto" }) || cfg.FeatureCacheBytes != 0:
		return nil, errors.New("--features-in-memory, --feature-cache, --graph-in-memory and --graph-on-disk do not apply to distributed sampling: each rank holds its part in memory")
	}
	if s.Backend != "tcp" {
		return nil, fmt.Errorf("distributed sampling needs the tcp backend (its point-to-point messages run beside collectives); --dist-backend %s", s.Backend)
	}
	cacheBytes := s.RemoteCacheBytes
	book, err := parts.ReadBook(s.Dataset)
	if err != nil {
		return nil, err
	}
	if book.NumParts != comm.Size() {
		return nil, fmt.Errorf("%s has %d parts but %d ranks run: start one rank per part", s.Dataset, book.NumParts, comm.Size())
	}
	p, err := parts.OpenPart(s.Dataset, book, comm.Rank())
	if err != nil {
		return nil, err
	}
	st, err := feature.Open(p.Dataset, feature.Options{Workers: 1})
	if err != nil {
		p.Close()
		return nil, err
	}
	normalize := cfg.NormalizeFeatures
	if normalize {
		ok, err := st.NormalizeRows(ctx)
		if err != nil {
			st.Close()
			p.Close()
			return nil, err
		}
		// Every rank must normalise or none (a part whose features have
		// negative values is not normalised).
		flag := []int64{0}
		if !ok {
			flag[0] = 1
		}
		if err := comm.AllReduce(ctx, flag, dist.Max); err != nil {
			st.Close()
			p.Close()
			return nil, err
		}
		if flag[0] != 0 && ok {
			st.Close()
			p.Close()
			return nil, fmt.Errorf("some part's features have negative values, so they are not normalised there; train with --normalize-features=false")
		}
		normalize = ok
	}
	g, err := distsample.Open(ctx, comm, s.Dataset, distsample.Options{Fanouts: cfg.Fanouts, Features: st, CacheBytes: cacheBytes})
	if err != nil {
		st.Close()
		p.Close()
		return nil, err
	}
	fail := func(err error) (*trainData, error) {
		g.Abort()
		st.Close()
		p.Close()
		return nil, err
	}
	src, err := g.NewSource(ctx, p.Train, p.Labels, distsample.SourceConfig{BatchSize: cfg.BatchSize, Seed: train.LoaderSeed(*cfg), Prefetch: cfg.Prefetch})
	if err != nil {
		return fail(err)
	}
	deg, err := g.GlobalInDegrees(ctx)
	if err != nil {
		return fail(err)
	}
	cached := 0
	if cacheBytes > 0 {
		seeds, _ := src.Batches(0)
		if cached, err = g.Presample(ctx, seeds, sample.EpochKey(train.LoaderSeed(*cfg), 0)); err != nil {
			return fail(fmt.Errorf("presampling for the remote-row cache: %w", err))
		}
	}
	if out != nil {
		fmt.Fprintf(out, "distributed sampling over %d parts of %s (%s nodes): part %d holds %s nodes + %s halo, %d training nodes, %d steps per epoch\n",
			book.NumParts, book.Name, units.Count(int64(book.NumNodes)), p.Index, units.Count(int64(p.NumInner())), units.Count(int64(p.NumLocal()-p.NumInner())), len(p.Train), src.NumBatches())
		if cacheBytes > 0 {
			fmt.Fprintf(out, "remote-row cache: %s rows (%s of %s)\n", units.Count(int64(cached)), units.Bytes(int64(cached)*int64(4*st.Dim())), units.Bytes(cacheBytes))
		}
	}
	layers := len(cfg.Fanouts)
	return &trainData{
		ds: p.Dataset,
		opts: []train.Option{train.WithFeatures(st), train.WithBatches(src), train.WithDegrees(deg),
			train.WithEvaluator(g.Evaluator(p.Val, p.Test, p.Labels, layers, max(1, min(cfg.EvalBatchSize, 1024))))},
		cfgFix: func(c *train.Config) { c.NormalizeFeatures = normalize },
		report: func(w io.Writer) {
			s := g.Stats()
			b := float64(max(1, s.Batches))
			fmt.Fprintf(w, "distributed sampling (rank %d): %d minibatches, %.1f sampling + %.1f feature requests per minibatch, %s of remote feature rows per minibatch",
				comm.Rank(), s.Batches, float64(s.SampleRequests)/b, float64(s.GatherRequests)/b, units.Bytes(int64(float64(s.RemoteFeatureBytes)/b)))
			if cacheBytes > 0 {
				fmt.Fprintf(w, ", remote-row cache hit rate %.1f%%", 100*s.CacheHitRate())
			}
			fmt.Fprintln(w)
		},
		close: func(ok bool) {
			if ok {
				g.Close(context.Background())
			} else {
				g.Abort()
			}
			st.Close()
			p.Close()
		},
	}, nil
}

// openTrainData opens what a distributed-sampling or sampler-service run
// reads.
func openTrainData(ctx context.Context, s Spec, cfg *train.Config) (*trainData, error) {
	if len(s.Samplers) > 0 {
		return openSamplerService(ctx, s, cfg)
	}
	return openDistSampled(ctx, s, cfg)
}

// openSamplerService connects to the sampler services of s.Samplers, which
// must serve s.Dataset, and makes them the run's batch source.
func openSamplerService(ctx context.Context, s Spec, cfg *train.Config) (*trainData, error) {
	if cfg.Mode != train.Sampled {
		return nil, fmt.Errorf("--sampler trains in sampled mode (--mode sampled), not %s", cfg.Mode)
	}
	wait := s.ConnectTimeout
	if wait <= 0 {
		wait = time.Minute
	}
	ds, err := OpenDataset(ctx, s.Dataset, "train")
	if err != nil {
		return nil, err
	}
	addrs := s.Samplers
	logf := s.ServiceLog
	if logf == nil {
		logf = func(m string) { fmt.Fprintln(os.Stderr, "graphmill train:", m) }
	}
	c, err := samplersvc.Dial(ctx, samplersvc.ClientConfig{Addrs: addrs, ConnectTimeout: wait, Security: s.Security, Log: logf})
	if err != nil {
		ds.Close()
		return nil, err
	}
	fp := ds.Fingerprint()
	if in := c.Info(); in.Fingerprint != fp {
		c.Close()
		ds.Close()
		what := fmt.Sprintf("%s (%d nodes, %d edges), not --dataset %s (%d nodes, %d edges)", in.Name, in.NumNodes, in.NumEdges, s.Dataset, ds.Meta.NumNodes, ds.Meta.NumEdges)
		if int(in.NumNodes) == ds.Meta.NumNodes && in.NumEdges == ds.Meta.NumEdges {
			what = fmt.Sprintf("%s, whose sizes are --dataset %s's but not its edges, labels, splits or features", in.Name, s.Dataset)
		}
		return nil, fmt.Errorf("the samplers serve %s: give both the same dataset", what)
	}
	spec := samplersvc.EpochSpec{Split: "train", Fanouts: cfg.Fanouts, BatchSize: cfg.BatchSize, Seed: train.LoaderSeed(*cfg),
		Shuffle: true, Features: true, Labels: true, NormalizeFeatures: cfg.NormalizeFeatures, Shards: 1, Fingerprint: fp}
	if p := cfg.Parallel; p != nil {
		spec.Shard, spec.Shards = p.Rank(), p.Size()
	}
	src, err := samplersvc.NewSource(c, spec, len(ds.Train))
	if err != nil {
		c.Close()
		ds.Close()
		return nil, err
	}
	if s.Log != nil {
		fmt.Fprintf(s.Log, "minibatches from %d sampler service(s): %s\n", len(addrs), strings.Join(addrs, ", "))
	}
	return &trainData{
		ds:    ds,
		opts:  []train.Option{train.WithBatches(src)},
		close: func(bool) { src.Close(); c.Close(); ds.Close() },
	}, nil
}

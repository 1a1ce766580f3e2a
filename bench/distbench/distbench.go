// Package distbench is the harness behind "graphmill bench distsample":
// distributed neighbour sampling over a partitioned generated graph with
// 2 and 4 local ranks next to the single-process sampler, the traffic per
// minibatch with and without the remote-row cache, and the sampler
// service's throughput into one trainer over loopback next to the local
// loader and the loopback copy ceiling, all in the same run.
package distbench

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"google.golang.org/grpc"

	"github.com/graphmill/graphmill/batch"
	"github.com/graphmill/graphmill/bench/comm"
	"github.com/graphmill/graphmill/dataset"
	"github.com/graphmill/graphmill/dataset/builtin"
	"github.com/graphmill/graphmill/dataset/parts"
	"github.com/graphmill/graphmill/dist"
	"github.com/graphmill/graphmill/dist/distsample"
	"github.com/graphmill/graphmill/dist/samplersvc"
	"github.com/graphmill/graphmill/feature"
	"github.com/graphmill/graphmill/internal/isa"
	"github.com/graphmill/graphmill/partition"
	"github.com/graphmill/graphmill/pipeline"
	pb "github.com/graphmill/graphmill/proto/graphmill/v1"
	"github.com/graphmill/graphmill/sample"
	"github.com/graphmill/graphmill/synth"
)

// Config configures a run.
type Config struct {
	Nodes     int
	Edges     int64
	Dim       int
	Seed      uint64
	Ranks     []int
	Fanouts   []int
	BatchSize int
	// Batches per rank (and per single-process or service measurement).
	Batches int
	// Dir holds the generated graph and its partitions (default: the
	// cache directory).
	Dir string
	// Step runs and reports one long step (nil: just runs it).
	Step func(what string, f func() error) error
}

// Report is the JSON of "bench distsample".
type Report struct {
	// Machine is the CPU measured on (isa.Describe).
	Machine   isa.Machine `json:"machine"`
	Nodes     int         `json:"nodes"`
	Edges     int64       `json:"edges"`
	Dim       int         `json:"feature_dim"`
	Fanouts   []int       `json:"fanouts"`
	BatchSize int         `json:"batch_size"`
	Batches   int         `json:"batches"`
	Dir       string      `json:"dir"`
	// Nodes, Edges and Dim are the measured graph's own (its meta.json),
	// which Run checks against the sizes asked for.
	//
	// SingleBatchesPerSec is the single-process sampler on the whole
	// graph: Workers (2) goroutines preparing minibatches at once, each
	// sampling and gathering features, as the loader and each rank do.
	SingleBatchesPerSec float64     `json:"single_batches_per_sec"`
	Ranks               []RankPoint `json:"ranks"`
	Service             Service     `json:"service"`
}

// RankPoint is distributed sampling under N local ranks.
type RankPoint struct {
	Ranks int `json:"ranks"`
	// EdgeCut is the partition's cut fraction.
	EdgeCut float64 `json:"edge_cut_fraction"`
	// BatchesPerSecPerRank is each rank's rate (the mean), all ranks
	// sampling at once; RatioToSingle divides it by the single process's.
	BatchesPerSecPerRank float64 `json:"batches_per_sec_per_rank"`
	RatioToSingle        float64 `json:"ratio_to_single"`
	// Requests per minibatch per rank: sampling (target at most
	// hops × (N-1)) and feature rows.
	SampleRequestsPerBatch float64 `json:"sample_requests_per_batch"`
	GatherRequestsPerBatch float64 `json:"gather_requests_per_batch"`
	TargetSampleRequests   int     `json:"target_sample_requests"`
	// Remote feature bytes per minibatch without and with the remote-row
	// cache holding 10% of the rows owned by other ranks (presampled on
	// one epoch, measured on the next).
	RemoteBytesPerBatch       float64 `json:"remote_feature_bytes_per_batch"`
	RemoteBytesPerBatchCached float64 `json:"remote_feature_bytes_per_batch_cached"`
	CacheReduction            float64 `json:"cache_reduction"`
	CacheHitRate              float64 `json:"cache_hit_rate"`
	CacheRows                 int     `json:"cache_rows"`
}

// Service is the sampler service streaming into one trainer.
type Service struct {
	BatchesPerSec      float64 `json:"batches_per_sec"`
	BytesPerBatch      float64 `json:"bytes_per_batch"`
	GBps               float64 `json:"gbps"`
	LocalBatchesPerSec float64 `json:"local_loader_batches_per_sec"`
	RatioToLocal       float64 `json:"ratio_to_local_loader"`
	LoopbackGBps       float64 `json:"loopback_tcp_gbps"`
	RatioToLoopback    float64 `json:"ratio_to_loopback"`
	// GRPCGBps is a bare gRPC stream of prebuilt frames of the same size
	// (no sampling, no decoding): the transport's own ceiling.
	GRPCGBps    float64 `json:"grpc_stream_gbps"`
	RatioToGRPC float64 `json:"ratio_to_grpc_stream"`
}

func (c *Config) step(what string, f func() error) error {
	if c.Step == nil {
		return f()
	}
	return c.Step(what, f)
}

// Run measures everything.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if cfg.Dir == "" {
		cfg.Dir = filepath.Join(builtin.CacheDir(), "bench", fmt.Sprintf("distsample-n%d-e%d-f%d-s%d", cfg.Nodes, cfg.Edges, cfg.Dim, cfg.Seed))
	}
	rep := &Report{Machine: isa.Describe(), Fanouts: cfg.Fanouts, BatchSize: cfg.BatchSize, Batches: cfg.Batches, Dir: cfg.Dir}
	whole := filepath.Join(cfg.Dir, "graph")
	if _, err := os.Stat(filepath.Join(whole, "meta.json")); err != nil {
		if err := cfg.step(fmt.Sprintf("generated a %d-node, %d-edge graph with %d features", cfg.Nodes, cfg.Edges, cfg.Dim), func() error {
			_, err := synth.Generate(ctx, whole, synth.Config{Nodes: cfg.Nodes, Edges: cfg.Edges, FeatureDim: cfg.Dim, Classes: 16, Seed: cfg.Seed}, false)
			return err
		}); err != nil {
			return nil, err
		}
	}
	d, err := dataset.Open(whole)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	// A graph reused from the directory must be the one asked for: the
	// report gives the measured graph's own sizes.
	if err := checkGraph(whole, d.Meta, cfg); err != nil {
		return nil, err
	}
	rep.Nodes, rep.Edges, rep.Dim = d.Meta.NumNodes, d.Meta.NumEdges, d.Meta.FeatureDim
	if err := cfg.step("single-process sampler", func() (err error) {
		rep.SingleBatchesPerSec, err = single(ctx, cfg, d)
		return err
	}); err != nil {
		return nil, err
	}
	for _, n := range cfg.Ranks {
		dir := filepath.Join(cfg.Dir, fmt.Sprintf("parts-%d", n))
		if _, err := os.Stat(filepath.Join(dir, parts.BookFile)); err != nil {
			if err := cfg.step(fmt.Sprintf("partitioned into %d parts", n), func() error { return partitionInto(ctx, d, n, dir) }); err != nil {
				return nil, err
			}
		}
		var pt *RankPoint
		if err := cfg.step(fmt.Sprintf("distributed sampling, %d ranks", n), func() (err error) {
			pt, err = ranks(ctx, cfg, dir, n)
			return err
		}); err != nil {
			return nil, err
		}
		// The single process again, right after: on a shared machine the
		// best of its measurements is its rate.
		if err := cfg.step("single-process sampler", func() error {
			r, err := single(ctx, cfg, d)
			rep.SingleBatchesPerSec = max(rep.SingleBatchesPerSec, r)
			return err
		}); err != nil {
			return nil, err
		}
		rep.Ranks = append(rep.Ranks, *pt)
	}
	for i := range rep.Ranks {
		if rep.SingleBatchesPerSec > 0 {
			rep.Ranks[i].RatioToSingle = rep.Ranks[i].BatchesPerSecPerRank / rep.SingleBatchesPerSec
		}
	}
	if err := cfg.step("sampler service over loopback", func() (err error) {
		rep.Service, err = service(ctx, cfg, d)
		return err
	}); err != nil {
		return nil, err
	}
	return rep, nil
}

// checkGraph refuses a dataset in dir (meta m) that is not the generated
// graph cfg asks for: other node, edge or feature counts, or another seed
// (read from the source line synth writes, "synthetic: seed N, ...").
func checkGraph(dir string, m dataset.Meta, cfg Config) error {
	var seed uint64
	_, serr := fmt.Sscanf(m.Source, "synthetic: seed %d,", &seed)
	if m.NumNodes == cfg.Nodes && m.NumEdges == cfg.Edges && m.FeatureDim == cfg.Dim && serr == nil && seed == cfg.Seed {
		return nil
	}
	has := fmt.Sprintf("seed %d", seed)
	if serr != nil {
		has = fmt.Sprintf("no generator seed (source %q)", m.Source)
	}
	return fmt.Errorf("%s holds %d nodes, %d edges, %d features and %s, not the %d, %d, %d and seed %d asked for; remove it or give another --data-dir",
		dir, m.NumNodes, m.NumEdges, m.FeatureDim, has, cfg.Nodes, cfg.Edges, cfg.Dim, cfg.Seed)
}

func partitionInto(ctx context.Context, d *dataset.Dataset, n int, dir string) error {
	g, err := partition.FromCSC(ctx, d.Graph, 0)
	if err != nil {
		return err
	}
	w, names := partition.BalanceWeights(d, true, false)
	res, err := partition.Partition(ctx, g, partition.Options{Parts: n, Weights: w, Seed: 1})
	if err != nil {
		return err
	}
	_, err = parts.Write(ctx, d, res.Parts, res.NumParts, dir, parts.WriteOptions{Overwrite: true, Method: "metis", Balance: names, Seed: 1, Stats: res.Stats})
	return err
}

// seedBatches returns n batches of size bs from seeds (shuffled with key).
func seedBatches(seeds []int32, bs, n int, key uint64) [][]int32 {
	b, _ := sample.Batches(seeds, bs, true, key, true)
	if len(b) > n {
		b = b[:n]
	}
	return b
}

func single(ctx context.Context, cfg Config, d *dataset.Dataset) (float64, error) {
	s, err := sample.New(d.Graph, sample.Config{Fanouts: cfg.Fanouts})
	if err != nil {
		return 0, err
	}
	st, err := feature.Open(d, feature.Options{Workers: 1})
	if err != nil {
		return 0, err
	}
	defer st.Close()
	batches := seedBatches(d.Train, cfg.BatchSize, cfg.Batches, 7)
	mk := func() func([]int32) error {
		var mb batch.MiniBatch
		return func(b []int32) error {
			if err := s.SampleInto(&mb, b, 1); err != nil {
				return err
			}
			ids, err := mb.Local()
			if err != nil {
				return err
			}
			return st.Gather(ctx, ids, mb.Features.SetF32(len(ids), st.Dim()))
		}
	}
	// The first pass faults the memory-mapped graph and features in; the
	// second is timed.
	if _, err := parallel(batches, mk); err != nil {
		return 0, err
	}
	return parallel(batches, mk)
}

// Workers is the number of minibatches every measurement prepares at once
// (the loader's and the distributed source's default).
const Workers = 2

// parallel runs one(b) for every batch on Workers goroutines (each with
// its own buffers, from mk) and returns batches per second.
func parallel(batches [][]int32, mk func() func([]int32) error) (float64, error) {
	next := make(chan []int32)
	errs := make(chan error, Workers)
	var wg sync.WaitGroup
	t := time.Now()
	for w := 0; w < Workers; w++ {
		wg.Add(1)
		one := mk()
		go func() {
			defer wg.Done()
			for b := range next {
				if err := one(b); err != nil {
					errs <- err
					for range next {
					}
					return
				}
			}
		}()
	}
	for _, b := range batches {
		next <- b
	}
	close(next)
	wg.Wait()
	el := time.Since(t).Seconds()
	select {
	case err := <-errs:
		return 0, err
	default:
	}
	return float64(len(batches)) / el, nil
}

func ranks(ctx context.Context, cfg Config, dir string, n int) (*RankPoint, error) {
	book, err := parts.ReadBook(dir)
	if err != nil {
		return nil, err
	}
	comms, err := dist.LocalGroup(ctx, n, dist.Options{})
	if err != nil {
		return nil, err
	}
	defer func() {
		for _, c := range comms {
			c.Close()
		}
	}()
	type rankOut struct {
		rate       float64
		st, cached distsample.Stats
		cacheRows  int
		err        error
	}
	outs := make([]rankOut, n)
	var wg sync.WaitGroup
	for r := 0; r < n; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o := &outs[r]
			o.err = func() error {
				p, err := parts.OpenPart(dir, book, r)
				if err != nil {
					return err
				}
				defer p.Close()
				fs, err := feature.Open(p.Dataset, feature.Options{Workers: 1})
				if err != nil {
					return err
				}
				defer fs.Close()
				remoteRows := book.NumNodes - p.NumInner()
				budget := int64(remoteRows) / 10 * int64(4*fs.Dim())
				g, err := distsample.Open(ctx, comms[r], dir, distsample.Options{Fanouts: cfg.Fanouts, Features: fs, CacheBytes: budget})
				if err != nil {
					return err
				}
				defer g.Close(ctx)
				seeds := make([]int32, len(p.Train))
				for i, v := range p.Train {
					seeds[i] = p.GlobalIDs[v]
				}
				run := func(batches [][]int32) (float64, error) {
					return parallel(batches, func() func([]int32) error {
						var a sample.Assembler
						var mb batch.MiniBatch
						return func(b []int32) error {
							if err := g.Sample(ctx, &a, &mb, b, 1); err != nil {
								return err
							}
							ids, err := mb.Local()
							if err != nil {
								return err
							}
							return g.Gather(ctx, ids, mb.Features.SetF32(len(ids), fs.Dim()))
						}
					})
				}
				held := seedBatches(seeds, cfg.BatchSize, cfg.Batches, 8)
				if _, err = run(held); err != nil { // faults the part's files in
					return err
				}
				if err := comms[r].Barrier(ctx); err != nil {
					return err
				}
				g.ResetStats()
				if o.rate, err = run(held); err != nil {
					return err
				}
				o.st = g.Stats()
				// Presample on other batches (another epoch), then measure
				// the same batches again with the cache.
				if err := comms[r].Barrier(ctx); err != nil {
					return err
				}
				if o.cacheRows, err = g.Presample(ctx, seedBatches(seeds, cfg.BatchSize, cfg.Batches, 9), 2); err != nil {
					return err
				}
				if err := comms[r].Barrier(ctx); err != nil {
					return err
				}
				if _, err := run(held); err != nil {
					return err
				}
				o.cached = g.Stats()
				return nil
			}()
		}()
	}
	wg.Wait()
	pt := &RankPoint{Ranks: n, EdgeCut: book.Stats.CutFraction, TargetSampleRequests: len(cfg.Fanouts) * (n - 1)}
	var batches, sreq, greq, rb, rbc, hits float64
	for r, o := range outs {
		if o.err != nil {
			return nil, fmt.Errorf("rank %d: %w", r, o.err)
		}
		pt.BatchesPerSecPerRank += o.rate / float64(n)
		batches += float64(o.st.Batches)
		sreq += float64(o.st.SampleRequests)
		greq += float64(o.st.GatherRequests)
		rb += float64(o.st.RemoteFeatureBytes)
		rbc += float64(o.cached.RemoteFeatureBytes)
		hits += o.cached.CacheHitRate() / float64(n)
		pt.CacheRows += o.cacheRows
	}
	if batches > 0 {
		pt.SampleRequestsPerBatch = sreq / batches
		pt.GatherRequestsPerBatch = greq / batches
		pt.RemoteBytesPerBatch = rb / batches
		pt.RemoteBytesPerBatchCached = rbc / batches
	}
	if rb > 0 {
		pt.CacheReduction = 1 - rbc/rb
	}
	pt.CacheHitRate = hits
	return pt, nil
}

func service(ctx context.Context, cfg Config, d *dataset.Dataset) (Service, error) {
	var sv Service
	srv, err := samplersvc.NewServer(samplersvc.ServerConfig{Dataset: d, Workers: Workers})
	if err != nil {
		return sv, err
	}
	defer srv.Close()
	opts, _ := samplersvc.ServerOptions(nil, nil)
	g := grpc.NewServer(opts...)
	pb.RegisterSamplerServer(g, srv)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return sv, err
	}
	go g.Serve(ln)
	defer g.Stop()
	c, err := samplersvc.Dial(ctx, samplersvc.ClientConfig{Addrs: []string{ln.Addr().String()}, Credits: 8})
	if err != nil {
		return sv, err
	}
	defer c.Close()
	spec := samplersvc.EpochSpec{Split: "train", Fanouts: cfg.Fanouts, BatchSize: cfg.BatchSize, Seed: 3, Shuffle: true, Features: true, Labels: true, Shards: 1}
	nb := spec.NumBatches(len(d.Train))
	// Both are timed from the epoch's start, over enough batches that
	// what either prepares ahead is a small part.
	n := min(max(cfg.Batches, 40), nb)
	// A first, untimed pass over the same batches faults the files in on
	// the server (the loader below runs after it, warm as well).
	for pass := 0; pass < 3; pass++ {
		e, err := c.Epoch(ctx, spec, 0, nb)
		if err != nil {
			return sv, err
		}
		if pass > 0 { // the best of two timed passes
			var t Service
			if err := timeService(&t, e, n, int64(d.Meta.NumNodes)); err != nil {
				return sv, err
			}
			if t.BatchesPerSec > sv.BatchesPerSec {
				sv.BatchesPerSec, sv.BytesPerBatch, sv.GBps = t.BatchesPerSec, t.BytesPerBatch, t.GBps
			}
			continue
		}
		for i := 0; i < n; i++ {
			if _, _, ok := e.Next(); !ok {
				break
			}
		}
		e.Close()
	}
	// The local loader with the same workers, on the same batches.
	s, _ := sample.New(d.Graph, sample.Config{Fanouts: cfg.Fanouts})
	st, err := feature.Open(d, feature.Options{Workers: 1})
	if err != nil {
		return sv, err
	}
	defer st.Close()
	l, err := pipeline.NewSampled(s, st, d.Labels, d.Train, pipeline.SampledConfig{BatchSize: cfg.BatchSize, Shuffle: true, Seed: 3, SampleWorkers: Workers})
	if err != nil {
		return sv, err
	}
	for pass := 0; pass < 2; pass++ { // the best of two
		it := l.Epoch(ctx, 0)
		t := time.Now()
		k := 0
		for ; k < n && it.Next(); k++ {
			it.Batch().Release()
		}
		el := time.Since(t).Seconds()
		err := it.Err()
		it.Close()
		if err != nil {
			return sv, err
		}
		sv.LocalBatchesPerSec = max(sv.LocalBatchesPerSec, float64(k)/el)
	}
	sv.RatioToLocal = sv.BatchesPerSec / sv.LocalBatchesPerSec
	if sv.LoopbackGBps, err = comm.LoopbackGBps(4<<20, 500*time.Millisecond); err != nil {
		return sv, err
	}
	sv.RatioToLoopback = sv.GBps / sv.LoopbackGBps
	if sv.GRPCGBps, err = grpcCeiling(ctx, int(sv.BytesPerBatch), 500*time.Millisecond); err != nil {
		return sv, err
	}
	sv.RatioToGRPC = sv.GBps / sv.GRPCGBps
	return sv, nil
}

// rawServer streams one prebuilt frame over and over.
type rawServer struct {
	pb.UnimplementedSamplerServer
	payload []byte
}

// Info implements the service (Dial asks it).
func (r *rawServer) Info(context.Context, *pb.InfoRequest) (*pb.InfoReply, error) {
	return &pb.InfoReply{}, nil
}

// Stream sends the frame until the client goes.
func (r *rawServer) Stream(st pb.Sampler_StreamServer) error {
	for i := 0; ; i++ {
		f := &pb.Frame{Kind: pb.Frame_KIND_BATCH, Sequence: uint64(i), Minibatch: r.payload}
		pb.AlignPayload(f)
		if err := st.Send(f); err != nil {
			return nil
		}
	}
}

// grpcCeiling returns the rate of a bare gRPC stream of size-byte frames
// on loopback, with the sampler service's options, for about d.
func grpcCeiling(ctx context.Context, size int, d time.Duration) (float64, error) {
	opts, _ := samplersvc.ServerOptions(nil, nil)
	g := grpc.NewServer(opts...)
	pb.RegisterSamplerServer(g, &rawServer{payload: make([]byte, max(size, 1))})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	go g.Serve(ln)
	defer g.Stop()
	c, err := samplersvc.Dial(ctx, samplersvc.ClientConfig{Addrs: []string{ln.Addr().String()}})
	if err != nil {
		return 0, err
	}
	defer c.Close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	st, err := c.StreamClient(0).Stream(ctx)
	if err != nil {
		return 0, err
	}
	if err := st.Send(&pb.ClientMessage{}); err != nil {
		return 0, err
	}
	var bytes float64
	t := time.Now()
	for time.Since(t) < d {
		f, err := st.Recv()
		if err != nil {
			return 0, err
		}
		bytes += float64(len(f.Minibatch))
	}
	return bytes / time.Since(t).Seconds() / 1e9, nil
}

// timeService times n batches of the epoch e.
func timeService(sv *Service, e *samplersvc.Epoch, n int, nodes int64) error {
	defer e.Close()
	var bytes float64
	var mb batch.MiniBatch
	t := time.Now()
	for i := 0; i < n; i++ {
		_, p, ok := e.Next()
		if !ok {
			return fmt.Errorf("service: %v", e.Err())
		}
		if err := samplersvc.Decode(p, &mb, nodes); err != nil {
			return err
		}
		if _, err := mb.Local(); err != nil { // what a trainer does with it
			return err
		}
		bytes += float64(len(p))
	}
	el := time.Since(t).Seconds()
	sv.BatchesPerSec = float64(n) / el
	sv.BytesPerBatch = bytes / float64(n)
	sv.GBps = bytes / el / 1e9
	return nil
}

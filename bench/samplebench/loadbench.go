// Package samplebench is the benchmark behind "graphmill bench sample": it
// measures neighbour sampling, feature gathering, the hot-row cache and
// the pipelined loader on a dataset, and, in the same run, the machine's
// memory ceilings they are judged against (bench/membench), reporting
// every speed as a ratio to its ceiling.
//
// Rates are given two ways. Wall rates (per second of elapsed time) are
// what a user sees, but on a machine shared with other work they swing
// with the load. CPU rates (per CPU-second of each worker's own thread,
// summed over workers) are what the workers reach when each has a core to
// itself, and are far steadier; ratios to ceilings use CPU rates on both
// sides.
package samplebench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"time"

	"github.com/graphmill/graphmill/batch"
	"github.com/graphmill/graphmill/bench/membench"
	"github.com/graphmill/graphmill/dataset"
	"github.com/graphmill/graphmill/dataset/builtin"
	"github.com/graphmill/graphmill/feature"
	"github.com/graphmill/graphmill/graph"
	"github.com/graphmill/graphmill/internal/hugemem"
	"github.com/graphmill/graphmill/internal/isa"
	"github.com/graphmill/graphmill/internal/par"
	"github.com/graphmill/graphmill/internal/rng"
	"github.com/graphmill/graphmill/internal/units"
	"github.com/graphmill/graphmill/pipeline"
	"github.com/graphmill/graphmill/sample"
	"github.com/graphmill/graphmill/synth"
)

// Config describes a benchmark run.
type Config struct {
	// Datasets lists what to measure: "synthetic" (generated into
	// SynthDir, or reused if present), "cora", or dataset directories.
	Datasets []string
	// SynthDir is where the synthetic dataset lives; empty means a
	// directory named after its sizes under builtin.CacheDir()/bench.
	SynthDir string
	// SynthNodes, SynthEdges and SynthDim size the synthetic dataset.
	SynthNodes int
	SynthEdges int64
	SynthDim   int
	// Fanouts lists the fanout lists to sample with.
	Fanouts [][]int
	// BatchSize is the number of seeds per minibatch.
	BatchSize int
	// Workers lists the worker counts to measure.
	Workers []int
	// CacheBytes is the hot-cache budget; 0 means 10% of the features.
	CacheBytes int64
	// Batches is the number of minibatches per worker of a sampling or
	// gather measurement (w workers sample w times as many).
	Batches int
	// SampleBatches, when not 0, replaces Batches for the sampling
	// measurements: their rounds alternate with the ceiling's, and a
	// round's first batch runs cold, so their ratio needs more rounds to
	// settle than the other measurements.
	SampleBatches int
	// CeilingTime is how long each ceiling is measured.
	CeilingTime time.Duration
	// ConsumerTime is the simulated training step of the loader test.
	ConsumerTime time.Duration
	// Seed seeds everything.
	Seed uint64
	// CompareDense also measures the first fanout list with each of the
	// two relabelling maps the default chooses between (sample.RelabelHash
	// and sample.RelabelDense).
	CompareDense bool
	// Step runs a long step with progress reporting (nil: just run it).
	Step func(what string, fn func() error) error
	// Progress, if set, is called as minibatches complete, from the
	// sampling workers' goroutines (several at once).
	Progress func(what string, done, total int)
}

// Quick returns the small configuration of --quick: a 1M-node graph,
// short measurements. Sampling takes 40 batches a worker (ten rounds
// against the ceiling), the rest 20: with 20 (five rounds), the worst
// case's ratio to the ceiling read 0.569-0.807 over nine runs (median
// 0.672), with 40 0.632-0.832 over fourteen (median 0.749), the two
// alternated (AMD EPYC Zen 5); a run takes about a second more.
func Quick() Config {
	return Config{
		Datasets: []string{"synthetic", "cora"}, SynthNodes: 1_000_000, SynthEdges: 20_000_000, SynthDim: 128,
		Fanouts: [][]int{{25, 10}, {15, 10, 5}}, BatchSize: 1024, Workers: []int{1, 2},
		Batches: 20, SampleBatches: 40, CeilingTime: 100 * time.Millisecond, ConsumerTime: 5 * time.Millisecond, Seed: 1,
	}
}

// Full returns the default configuration: a 10M-node, 200M-edge graph.
func Full() Config {
	c := Quick()
	c.SynthNodes, c.SynthEdges = 10_000_000, 200_000_000
	c.Batches, c.SampleBatches, c.CeilingTime = 100, 0, 300*time.Millisecond
	c.CompareDense = true
	return c
}

// Report is the result of a run.
type Report struct {
	// Machine is the CPU measured on (isa.Describe).
	Machine    isa.Machine     `json:"machine"`
	GOMAXPROCS int             `json:"gomaxprocs"`
	BatchSize  int             `json:"batch_size"`
	Datasets   []DatasetReport `json:"datasets"`
}

// DatasetReport holds the measurements on one dataset.
type DatasetReport struct {
	Name         string `json:"name"`
	Dir          string `json:"dir"`
	Nodes        int    `json:"nodes"`
	Edges        int64  `json:"edges"`
	FeatureDim   int    `json:"feature_dim"`
	GraphBytes   int64  `json:"graph_bytes"`
	FeatureBytes int64  `json:"feature_bytes"`
	// ReadArrayBytes is the size of the array the random-read ceiling
	// reads: the graph's bytes, but at least 4 MiB (so larger than a
	// small graph such as Cora's, whose ceiling is then over an array
	// that does not fit where the graph does).
	ReadArrayBytes int64     `json:"random_read_array_bytes"`
	Ceilings       []Ceiling `json:"ceilings"`
	// LoadLatency is the latency of a dependent load by the size of the
	// data it ranges over (membench.LoadLatency): where the caches end,
	// and what a random lookup into an array as large as the graph's node
	// count (sampling's relabelling array: 4 bytes a node) costs.
	LoadLatency []LatencyPoint `json:"load_latency"`
	Sampling    []SampleResult `json:"sampling"`
	Gather      []GatherResult `json:"gather"`
	Cache       []CacheResult  `json:"cache"`
	Loader      []LoaderResult `json:"loader,omitempty"`
	Notes       []string       `json:"notes,omitempty"`
	seeds       []int32
	g           *graph.CSC
}

// Ceiling holds the machine's memory ceilings for one worker count.
type Ceiling struct {
	Workers int `json:"workers"`
	// RandomReads is independent random 4-byte reads per CPU-second over
	// an array of DatasetReport.ReadArrayBytes: the graph's size, at least
	// 4 MiB (RandomReadsWall per wall second).
	RandomReads     float64 `json:"random_reads_per_s"`
	RandomReadsWall float64 `json:"random_reads_per_s_wall"`
	// SeqCopy is sequential copy bandwidth, bytes per CPU-second.
	SeqCopy float64 `json:"seq_copy_bytes_per_s"`
	// RandomRows is random feature-row copies per CPU-second from the
	// in-memory float32 feature table (RandomRowsWall per wall second).
	RandomRows     float64 `json:"random_rows_per_s"`
	RandomRowsWall float64 `json:"random_rows_per_s_wall"`
	// RandomHalfRows is the same over rows of 2-byte values (half the
	// bytes: the ceiling of float16 and bfloat16 gathers), best of the
	// measurements beside them; absent when none was gathered.
	RandomHalfRows     float64 `json:"random_half_rows_per_s,omitempty"`
	RandomHalfRowsWall float64 `json:"random_half_rows_per_s_wall,omitempty"`
}

// LatencyPoint is the latency of a dependent load over Bytes of data.
type LatencyPoint struct {
	Bytes int64   `json:"bytes"`
	Ns    float64 `json:"ns"`
}

// SampleResult is one sampling measurement.
type SampleResult struct {
	Fanouts string `json:"fanouts"`
	Workers int    `json:"workers"`
	Relabel string `json:"relabel"`
	// Batches is the minibatches sampled: Config.SampleBatches (or
	// Batches) a worker, more where its rounds take less than minRound.
	Batches int `json:"batches"`
	// EdgesPerBatch is the mean number of sampled edges per minibatch.
	EdgesPerBatch float64 `json:"edges_per_batch"`
	// EdgesPerSec is sampled edges per CPU-second; Wall per wall second.
	EdgesPerSec     float64 `json:"edges_per_s"`
	EdgesPerSecWall float64 `json:"edges_per_s_wall"`
	// MsPerBatch is the wall time per minibatch (all workers together).
	MsPerBatch float64 `json:"ms_per_batch"`
	// Ceiling is the random-read ceiling (reads per CPU-second) for as
	// many workers, measured in slices between the sampling's rounds.
	Ceiling float64 `json:"random_reads_per_s"`
	// Ratio is EdgesPerSec over Ceiling.
	Ratio float64 `json:"ratio_to_random_reads"`
	// Scaling is EdgesPerSec over that of the fewest workers measured
	// (set for the other worker counts); the worker counts take turns
	// round by round, so it is paired in time. ReadScaling and
	// ArithmeticScaling are the same ratio for the random-read ceiling and
	// for the arithmetic one (membench.Arithmetic) measured beside: how
	// the host itself scales memory reads and computation.
	Scaling           float64 `json:"scaling,omitempty"`
	ReadScaling       float64 `json:"read_scaling,omitempty"`
	ArithmeticScaling float64 `json:"arithmetic_scaling,omitempty"`
	// DrawNs and RelabelNs split the sampling's time (each worker's wall time
	// in the sampler) into drawing the edges and relabelling their
	// sources to local ids, in ns per sampled edge over every hop; Hops
	// splits it hop by hop, the seeds' hop first. The ceiling's cost per
	// edge, one random read, is Workers*1e9/Ceiling ns of a worker's time.
	DrawNs    float64    `json:"draw_ns_per_edge,omitempty"`
	RelabelNs float64    `json:"relabel_ns_per_edge,omitempty"`
	Hops      []HopSplit `json:"hops,omitempty"`
}

// HopSplit is one hop's share of a sampling measurement (SampleResult).
type HopSplit struct {
	EdgesPerBatch float64 `json:"edges_per_batch"`
	Draw          float64 `json:"draw_ns_per_edge"`
	Relabel       float64 `json:"relabel_ns_per_edge"`
}

// split turns a sampler's hop timings over batches minibatches into
// SampleResult's split.
func split(ts []sample.HopTiming, batches int) (draw, relabel float64, hops []HopSplit) {
	var edges int64
	var d, r time.Duration
	for _, t := range ts {
		edges += t.Edges
		d += t.Draw
		r += t.Relabel
		hops = append(hops, HopSplit{
			EdgesPerBatch: float64(t.Edges) / float64(max(1, batches)),
			Draw:          nsPer(t.Draw, t.Edges),
			Relabel:       nsPer(t.Relabel, t.Edges),
		})
	}
	return nsPer(d, edges), nsPer(r, edges), hops
}

// nsPer is d in nanoseconds per item (0 for no items).
func nsPer(d time.Duration, items int64) float64 {
	if items == 0 {
		return 0
	}
	return float64(d.Nanoseconds()) / float64(items)
}

// GatherResult is one gather measurement.
type GatherResult struct {
	// Source is "memory float32", "memory float16", "mmap float32" or
	// "mmap float32 + cache".
	Source  string `json:"source"`
	IDs     string `json:"ids"` // "uniform" or "sampled"
	Workers int    `json:"workers"`
	// RowsPerSec is gathered rows per CPU-second; Wall per wall second.
	RowsPerSec     float64 `json:"rows_per_s"`
	RowsPerSecWall float64 `json:"rows_per_s_wall"`
	// BytesPerSec is float32 output bytes per CPU-second.
	BytesPerSec float64 `json:"bytes_per_s"`
	// RowBytes is the width of the rows the source holds and reads (dim
	// values of its element type: float16 rows are half of float32's).
	RowBytes int `json:"row_bytes"`
	// Ceiling is the random-row ceiling (rows per CPU-second) for as many
	// workers, measured in slices between the gather's rounds, over an
	// in-memory table of rows of RowBytes: like with like, the float16
	// sources against a ceiling that reads half the bytes a row.
	Ceiling float64 `json:"random_rows_per_s"`
	// Ratio is RowsPerSec over Ceiling.
	Ratio float64 `json:"ratio_to_random_rows"`
	// HitRate is the cache hit rate when a cache is used.
	HitRate float64 `json:"hit_rate,omitempty"`
}

// CacheResult is the hit rate of one admission policy.
type CacheResult struct {
	Policy      string  `json:"policy"` // "degree" or "presample"
	BudgetBytes int64   `json:"budget_bytes"`
	Rows        int     `json:"rows"`
	RowFraction float64 `json:"row_fraction"`
	// HitRate is the fraction of the input nodes of held-out minibatches
	// (another epoch) whose rows are cached.
	HitRate float64 `json:"hit_rate"`
}

// LoaderResult is the pipelined loader with a consumer that takes a fixed
// time per batch.
type LoaderResult struct {
	Fanouts       string `json:"fanouts"`
	SampleWorkers int    `json:"sample_workers"`
	// Features reports whether the pipeline gathered features.
	Features   bool    `json:"features"`
	ConsumerMs float64 `json:"consumer_ms"`
	Batches    int     `json:"batches"`
	// Busy is the fraction of the consumer's time spent working rather
	// than waiting for batches.
	Busy float64 `json:"consumer_busy"`
	// SampleMsPerBatch and GatherMsPerBatch are the stages' times per
	// batch (sampling summed over workers, divided by their number).
	SampleMsPerBatch float64 `json:"sample_ms_per_batch"`
	GatherMsPerBatch float64 `json:"gather_ms_per_batch"`
	Bottleneck       string  `json:"bottleneck"`
}

// Run performs the benchmark.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if cfg.Step == nil {
		cfg.Step = func(_ string, fn func() error) error { return fn() }
	}
	if cfg.BatchSize <= 0 || len(cfg.Fanouts) == 0 || len(cfg.Workers) == 0 || cfg.Batches <= 0 {
		return nil, fmt.Errorf("loadbench: need a batch size, fanouts, worker counts and a batch count")
	}
	for _, f := range cfg.Fanouts {
		if err := sample.CheckFanouts(f); err != nil {
			return nil, err
		}
	}
	for _, w := range cfg.Workers {
		if w <= 0 {
			return nil, fmt.Errorf("loadbench: worker count %d", w)
		}
	}
	rep := &Report{Machine: isa.Describe(), GOMAXPROCS: par.Workers(0), BatchSize: cfg.BatchSize}
	for _, name := range cfg.Datasets {
		dr, err := runDataset(ctx, cfg, name)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		rep.Datasets = append(rep.Datasets, *dr)
	}
	return rep, nil
}

// SynthDir returns the default directory of the synthetic dataset.
func SynthDir(cfg Config) string {
	return filepath.Join(builtin.CacheDir(), "bench", fmt.Sprintf("synth-n%d-e%d-f%d-s%d", cfg.SynthNodes, cfg.SynthEdges, cfg.SynthDim, cfg.Seed))
}

func openDataset(ctx context.Context, cfg Config, name string) (*dataset.Dataset, error) {
	if name != "synthetic" {
		return builtin.Open(ctx, name)
	}
	dir := cfg.SynthDir
	if dir == "" {
		dir = SynthDir(cfg)
	}
	if _, err := os.Stat(filepath.Join(dir, "meta.json")); err != nil {
		err := cfg.Step(fmt.Sprintf("generated synthetic graph (%d nodes, %d edges) in %s", cfg.SynthNodes, cfg.SynthEdges, dir), func() error {
			_, err := synth.Generate(ctx, dir, synth.Config{Nodes: cfg.SynthNodes, Edges: cfg.SynthEdges, FeatureDim: cfg.SynthDim, Classes: 16, Seed: cfg.Seed}, false)
			return err
		})
		if err != nil {
			return nil, err
		}
	}
	d, err := dataset.Open(dir)
	if err != nil {
		return nil, err
	}
	if d.Meta.NumNodes != cfg.SynthNodes || d.Meta.NumEdges != cfg.SynthEdges {
		d.Close()
		return nil, fmt.Errorf("%s holds %d nodes and %d edges, not the %d and %d asked for; remove it or give another --data-dir", dir, d.Meta.NumNodes, d.Meta.NumEdges, cfg.SynthNodes, cfg.SynthEdges)
	}
	return d, nil
}

type env struct {
	cfg     Config
	d       *dataset.Dataset
	g       *graph.CSC // in huge-page memory
	feats   []float32  // in huge-page memory, nil without features
	dim     int
	readArr []uint32
	ceil    map[int]*Ceiling
	rep     *DatasetReport
	seeds   []int32
	frees   []func()
	batches [][]int32 // epoch 0
	held    [][]int32 // epoch 1 (held out for cache hit rates)
	sampled [][]int32 // input nodes of sampled minibatches of epoch 0
	outRows int       // mean number of input nodes per minibatch
}

func (e *env) close() {
	for _, f := range e.frees {
		f()
	}
	e.d.Close()
}

func runDataset(ctx context.Context, cfg Config, name string) (*DatasetReport, error) {
	d, err := openDataset(ctx, cfg, name)
	if err != nil {
		return nil, err
	}
	e := &env{cfg: cfg, d: d, ceil: map[int]*Ceiling{}}
	defer e.close()
	e.rep = &DatasetReport{Name: d.Meta.Name, Dir: d.Dir, Nodes: d.Meta.NumNodes, Edges: d.Meta.NumEdges, FeatureDim: d.Meta.FeatureDim}
	if err := cfg.Step("loaded graph and features into memory (huge pages)", e.load); err != nil {
		return nil, err
	}
	e.rep.GraphBytes = e.g.Bytes()
	e.rep.FeatureBytes = int64(len(e.feats)) * 4
	e.rep.ReadArrayBytes = 4 * int64(len(e.readArr))
	if err := e.makeBatches(); err != nil {
		return nil, err
	}
	if e.sampled, err = e.inputBatches(e.batches, cfg.Batches); err != nil {
		return nil, err
	}
	for _, b := range e.sampled {
		e.outRows += len(b)
	}
	e.outRows /= max(1, len(e.sampled))
	for _, w := range cfg.Workers {
		e.ceiling(w, ceilAll)
	}
	for _, size := range []int64{256 << 10, 1 << 20, 4 << 20, 16 << 20, e.rep.GraphBytes} {
		loads := 1 << 20
		if size > 4<<20 {
			loads = 1 << 18
		}
		e.rep.LoadLatency = append(e.rep.LoadLatency, LatencyPoint{size, membench.LoadLatency(int(size), loads)})
	}
	if l := e.rep.LoadLatency; l[len(l)-1].Ns <= 3*l[0].Ns {
		e.rep.Notes = append(e.rep.Notes, fmt.Sprintf("the graph stays in cache (a load from %s takes %.0f ns, from 256 KiB %.0f): the draws' "+
			"arithmetic, not memory, bounds sampling, and its ratio to the random-read ceiling is lower than on a graph in memory",
			units.Bytes(e.rep.GraphBytes), l[len(l)-1].Ns, l[0].Ns))
	}
	if err := e.sampling(ctx); err != nil {
		return nil, err
	}
	if e.feats != nil {
		if err := e.gather(); err != nil {
			return nil, err
		}
		if err := e.cache(ctx); err != nil {
			return nil, err
		}
		if err := e.loader(ctx); err != nil {
			return nil, err
		}
	}
	for _, w := range cfg.Workers {
		e.rep.Ceilings = append(e.rep.Ceilings, *e.ceil[w])
	}
	return e.rep, nil
}

// load copies the graph and float32 features into huge-page memory, the
// way a trainer that has the RAM would hold them.
func (e *env) load() error {
	g, free := e.d.GraphInMemory()
	e.frees = append(e.frees, free)
	e.g = &graph.CSC{NumNodes: g.NumNodes, Indptr: g.Indptr, Indices: g.Indices}
	if e.d.FeatureArray != nil {
		st, err := feature.Open(e.d, feature.Options{})
		if err != nil {
			return err
		}
		e.dim = st.Dim()
		feats, f3 := hugemem.Alloc[float32](g.NumNodes * e.dim)
		e.frees = append(e.frees, f3)
		const rows = 1 << 14
		ids := make([][]int32, par.Workers(0))
		errs := make([]error, len(ids))
		par.For(len(ids), (g.NumNodes+rows-1)/rows, func(w, lo, hi int) {
			for c := lo; c < hi; c++ {
				a, b := c*rows, min((c+1)*rows, g.NumNodes)
				ids[w] = ids[w][:0]
				for v := a; v < b; v++ {
					ids[w] = append(ids[w], int32(v))
				}
				if err := st.Gather(context.Background(), ids[w], feats[a*e.dim:b*e.dim]); err != nil {
					errs[w] = err
					return
				}
			}
		})
		for _, err := range errs {
			if err != nil {
				return err
			}
		}
		e.feats = feats
	}
	// The random-read ceiling's array, as large as the graph but at least
	// 4 MiB (1M entries), written so that its pages are real (untouched
	// anonymous pages all alias one zero page and would never miss the
	// cache).
	arr, f4 := hugemem.Alloc[uint32](int(max(e.g.Bytes()/4, 1<<20)))
	e.frees = append(e.frees, f4)
	par.For(par.Workers(0), len(arr), func(_, lo, hi int) {
		for i := lo; i < hi; i++ {
			arr[i] = uint32(i)
		}
	})
	e.readArr = arr
	return nil
}

// makeBatches picks the seeds (the training split, or all nodes when it
// holds fewer than four batches) and two epochs of minibatches.
func (e *env) makeBatches() error {
	seeds := e.d.Train
	if len(seeds) < 4*e.cfg.BatchSize {
		seeds = make([]int32, e.d.Meta.NumNodes)
		for i := range seeds {
			seeds[i] = int32(i)
		}
		e.rep.Notes = append(e.rep.Notes, fmt.Sprintf("seeds: all %d nodes (the training split is smaller than 4 batches)", len(seeds)))
	}
	e.seeds = seeds
	var err error
	e.batches, err = sample.Batches(seeds, e.cfg.BatchSize, true, rng.Derive(e.cfg.Seed, 0), true)
	if err != nil {
		return err
	}
	if len(e.batches) == 0 {
		e.batches, _ = sample.Batches(seeds, e.cfg.BatchSize, true, rng.Derive(e.cfg.Seed, 0), false)
	}
	e.held, _ = sample.Batches(seeds, e.cfg.BatchSize, true, rng.Derive(e.cfg.Seed, 1), false)
	return nil
}

// Ceiling kinds (ceilHalfRows: rows of 2-byte values, noteCeiling only).
const (
	ceilReads = 1 << iota
	ceilCopy
	ceilRows
	ceilHalfRows
	ceilAll = ceilReads | ceilCopy | ceilRows
)

// ceiling (re)measures the given ceilings for w workers, keeping the best
// of all measurements (the least disturbed by other load). Calling it
// right before a measurement keeps both under the same machine load.
func (e *env) ceiling(w, kinds int) *Ceiling {
	t := e.cfg.CeilingTime
	c := e.ceil[w]
	if c == nil {
		c = &Ceiling{Workers: w}
		e.ceil[w] = c
	}
	if kinds&ceilReads != 0 {
		r := membench.RandomReads(e.readArr, w, t)
		c.RandomReads, c.RandomReadsWall = max(c.RandomReads, r.CPUPerSec), max(c.RandomReadsWall, r.PerSec)
	}
	if kinds&ceilCopy != 0 {
		c.SeqCopy = max(c.SeqCopy, membench.SeqCopy(64<<20, w, t).CPUPerSec)
	}
	if kinds&ceilRows != 0 && e.feats != nil {
		r := membench.RandomRows(e.feats, e.dim, e.outRows, w, t)
		c.RandomRows, c.RandomRowsWall = max(c.RandomRows, r.CPUPerSec), max(c.RandomRowsWall, r.PerSec)
	}
	return c
}

// noteCeiling records a paired measurement of a ceiling (kind ceilReads
// or ceilRows) in the ceilings table, which keeps the best seen.
func (e *env) noteCeiling(w, kind int, r membench.Result) {
	c := e.ceiling(w, 0)
	switch kind {
	case ceilReads:
		c.RandomReads, c.RandomReadsWall = max(c.RandomReads, r.CPUPerSec), max(c.RandomReadsWall, r.PerSec)
	case ceilRows:
		c.RandomRows, c.RandomRowsWall = max(c.RandomRows, r.CPUPerSec), max(c.RandomRowsWall, r.PerSec)
	case ceilHalfRows:
		c.RandomHalfRows, c.RandomHalfRowsWall = max(c.RandomHalfRows, r.CPUPerSec), max(c.RandomHalfRowsWall, r.PerSec)
	}
}

// rowTable returns an in-memory table of the dataset's rows with values
// of size bytes, for the random-row ceiling of a gather from a source of
// that element type: the float32 features (size 4), half (the float16
// copy, size 2, when the caller has one), else a table of that width
// written so that its pages are real. free releases it.
func (e *env) rowTable(size int, half []byte) (table []byte, free func()) {
	switch {
	case size == 4:
		return floatBytes(e.feats), func() {}
	case size == 2 && half != nil:
		return half, func() {}
	}
	t, f := hugemem.Alloc[byte](e.d.Meta.NumNodes * e.dim * size)
	par.For(par.Workers(0), len(t), func(_, lo, hi int) {
		for i := lo; i < hi; i++ {
			t[i] = byte(i) | 1
		}
	})
	return t, f
}

// batch returns the i-th minibatch's seeds, cycling through the epoch.
func (e *env) batch(i int) []int32 { return e.batches[i%len(e.batches)] }

func (e *env) sampling(ctx context.Context) error {
	for fi, fan := range e.cfg.Fanouts {
		// The default (what users get), and with CompareDense both maps it
		// chooses between.
		relabels := []sample.Relabel{sample.RelabelAuto}
		if fi == 0 && e.cfg.CompareDense {
			relabels = append(relabels, sample.RelabelHash, sample.RelabelDense)
		}
		for _, relabel := range relabels {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := e.sampleCounts(fan, relabel); err != nil {
				return err
			}
		}
	}
	return nil
}

// sampleCounts measures sampling with fanouts fan and relabel mode
// relabel with each worker count, the counts taking turns round by round
// so that their scaling is paired in time, each round followed by the
// random-read ceiling for as many workers and by the arithmetic ceiling
// (the host's own scaling of computation). Each count has a sampler of its
// own, timing its draws and relabelling apart.
func (e *env) sampleCounts(fan []int, relabel sample.Relabel) error {
	ws, n := e.cfg.Workers, e.cfg.Batches
	if e.cfg.SampleBatches > 0 {
		n = e.cfg.SampleBatches
	}
	ss := make([]*sample.Sampler, len(ws))
	for j := range ws {
		s, err := sample.New(e.g, sample.Config{Fanouts: fan, Relabel: relabel, Timing: true})
		if err != nil {
			return err
		}
		ss[j] = s
	}
	var errOnce atomic.Value
	// Each worker first samples one batch that is not measured (one past
	// the measured ones), as a loader's worker does on its first batch:
	// the minibatch's arrays and the sampler's per-call scratch are
	// allocated and first touched there. A loader recycles both for the
	// rest of training, so counting their page faults (about 11 µs per 4
	// KiB page on these VMs) in a 20-batch measurement would charge a
	// one-off cost to the steady state, twice over with two workers (each
	// warms its own buffers on half as many batches).
	mbs := make([][]*batch.MiniBatch, len(ws))
	for j, w := range ws {
		mbs[j] = make([]*batch.MiniBatch, w)
		membench.Work(w, func(k int) int64 {
			mbs[j][k] = &batch.MiniBatch{}
			if err := ss[j].SampleInto(mbs[j][k], e.batch(n*w+k), rng.Derive(e.cfg.Seed, uint64(n*w+k))); err != nil {
				errOnce.CompareAndSwap(nil, err)
			}
			return 0
		})
		ss[j].ResetTiming()
	}
	if err, _ := errOnce.Load().(error); err != nil {
		return err
	}
	what := fmt.Sprintf("sampling %s (%v, workers %v)", sample.FormatFanouts(fan), relabel, ws)
	var done atomic.Int64
	total := 0
	for _, w := range ws {
		total += n * w
	}
	arith := make([]membench.Result, len(ws))
	res, ceil, items, err := paired(n, ws, func(j, k, i int) (int64, error) {
		mb := mbs[j][k]
		if err := ss[j].SampleInto(mb, e.batch(i), rng.Derive(e.cfg.Seed, uint64(i))); err != nil {
			return 0, err
		}
		if e.cfg.Progress != nil {
			e.cfg.Progress(what, min(int(done.Add(1)), total), total)
		}
		return int64(mb.NumEdges()), nil
	}, func(j int, d time.Duration) membench.Result {
		c := membench.RandomReads(e.readArr, ws[j], d)
		arith[j] = arith[j].Add(membench.Arithmetic(ws[j], max(d/4, time.Millisecond)))
		return c
	})
	if err != nil {
		return err
	}
	base := slices.Index(ws, slices.Min(ws))
	for j, w := range ws {
		e.noteCeiling(w, ceilReads, ceil[j])
		nb := int(items[j])
		r := SampleResult{
			Fanouts: sample.FormatFanouts(fan), Workers: w, Relabel: relabel.String(), Batches: nb,
			EdgesPerBatch: float64(res[j].Ops) / float64(nb),
			EdgesPerSec:   res[j].CPUPerSec, EdgesPerSecWall: res[j].PerSec,
			MsPerBatch: res[j].Elapsed.Seconds() * 1000 / float64(nb),
			Ceiling:    ceil[j].CPUPerSec,
			Ratio:      res[j].CPUPerSec / ceil[j].CPUPerSec,
		}
		r.DrawNs, r.RelabelNs, r.Hops = split(ss[j].Timing(), nb)
		if w > ws[base] {
			r.Scaling = res[j].CPUPerSec / res[base].CPUPerSec
			r.ReadScaling = ceil[j].CPUPerSec / ceil[base].CPUPerSec
			r.ArithmeticScaling = arith[j].CPUPerSec / arith[base].CPUPerSec
		}
		e.rep.Sampling = append(e.rep.Sampling, r)
	}
	return nil
}

// inputBatches samples the input nodes of n minibatches of the first
// fanout list, cycling through the given epoch's batches (with a different
// random seed on every pass) when it has fewer than n.
func (e *env) inputBatches(batches [][]int32, n int) ([][]int32, error) {
	s, err := sample.New(e.g, sample.Config{Fanouts: e.cfg.Fanouts[0]})
	if err != nil {
		return nil, err
	}
	out := make([][]int32, n)
	errs := make([]error, n)
	_ = par.Tasks(context.Background(), par.Workers(0), n, func(_, i int) {
		mb, err := s.Sample(batches[i%len(batches)], rng.Derive(e.cfg.Seed+7, uint64(i)))
		if err != nil {
			errs[i] = err
			return
		}
		out[i], errs[i] = mb.Local()
	})
	return out, errors.Join(errs...)
}

func (e *env) gather() error {
	sampled := e.sampled
	// Uniform ids: as many as a sampled minibatch's input nodes.
	r := rng.New(e.cfg.Seed)
	uniform := make([][]int32, len(sampled))
	for i, s := range sampled {
		u := make([]int32, len(s))
		for j := range u {
			u[j] = int32(r.IntN(e.d.Meta.NumNodes))
		}
		uniform[i] = u
	}
	mem, err := feature.FromFloat32(e.feats, e.d.Meta.NumNodes, e.dim, feature.Options{Workers: 1})
	if err != nil {
		return err
	}
	half, free := hugemem.Alloc[uint16](len(e.feats))
	defer free()
	par.For(par.Workers(0), e.d.Meta.NumNodes, func(_, lo, hi int) {
		feature.EncodeF16(half[lo*e.dim:hi*e.dim], e.feats[lo*e.dim:hi*e.dim])
	})
	hbytes := unsafeBytes(half)
	mem16, err := feature.New(hbytes, feature.Float16, e.d.Meta.NumNodes, e.dim, feature.Options{Workers: 1})
	if err != nil {
		return err
	}
	mapped, err := feature.Open(e.d, feature.Options{Workers: 1})
	if err != nil {
		return err
	}
	type src struct {
		name string
		st   *feature.Store
		ids  map[string][][]int32
		size int // bytes a value in the source's rows
	}
	all := map[string][][]int32{"uniform": uniform, "sampled": sampled}
	for _, sc := range []src{
		{"memory float32", mem, all, 4},
		{"memory float16", mem16, map[string][][]int32{"sampled": sampled}, 2},
		{"mmap " + e.d.FeatureArray.DType.Name(), mapped, map[string][][]int32{"sampled": sampled}, e.d.FeatureArray.DType.Size()},
	} {
		table, freeTable := e.rowTable(sc.size, hbytes)
		for _, kind := range []string{"uniform", "sampled"} {
			ids := sc.ids[kind]
			if ids == nil {
				continue
			}
			res, c, err := e.gatherRates(sc.st, ids, table, sc.size*e.dim)
			if err != nil {
				freeTable()
				return err
			}
			for j, w := range e.cfg.Workers {
				e.rep.Gather = append(e.rep.Gather, GatherResult{
					Source: sc.name, IDs: kind, Workers: w,
					RowsPerSec: res[j].CPUPerSec, RowsPerSecWall: res[j].PerSec, BytesPerSec: res[j].CPUPerSec * float64(4*e.dim),
					RowBytes: sc.size * e.dim, Ceiling: c[j].CPUPerSec, Ratio: res[j].CPUPerSec / c[j].CPUPerSec,
				})
			}
		}
		freeTable()
	}
	return nil
}

// gatherRates gathers the id lists with each worker count of the
// configuration, w times over with w workers (the counts taking turns
// round by round; see paired), each worker taking lists in turn into
// output buffers allocated and touched beforehand (so page faults are not
// timed), each round followed by the random-row ceiling for as many
// workers and as long, over table's rows of rowB bytes (the width of the
// rows st reads). It returns the gather's and the ceiling's measurements,
// one per worker count.
func (e *env) gatherRates(st *feature.Store, ids [][]int32, table []byte, rowB int) (res, ceil []membench.Result, err error) {
	dim, ws := e.dim, e.cfg.Workers
	maxRows := 0
	for _, b := range ids {
		maxRows = max(maxRows, len(b))
	}
	outs := make([][][]float32, len(ws))
	for j, w := range ws {
		outs[j] = make([][]float32, w)
		for k := range outs[j] {
			o := make([]float32, maxRows*dim)
			for i := 0; i < len(o); i += 1024 {
				o[i] = 1
			}
			outs[j][k] = o
		}
	}
	res, ceil, _, err = paired(len(ids), ws, func(j, k, i int) (int64, error) {
		b := ids[i%len(ids)]
		if err := st.Gather(context.Background(), b, outs[j][k][:len(b)*dim]); err != nil {
			return 0, err
		}
		return int64(len(b)), nil
	}, func(j int, d time.Duration) membench.Result {
		return membench.RandomRowBytes(table, rowB, e.outRows, ws[j], d)
	})
	// The ceilings table keeps float32 rows' and 2-byte rows' apart.
	kind := 0
	switch rowB {
	case 4 * dim:
		kind = ceilRows
	case 2 * dim:
		kind = ceilHalfRows
	}
	for j, w := range ws {
		if kind != 0 {
			e.noteCeiling(w, kind, ceil[j])
		}
	}
	return res, ceil, err
}

// paired does items 0..n·w-1 with each worker count w of ws, so that a
// worker does about n items whatever the count, each worker taking the
// next item in turn, in rounds (n/4 of them, at most 10) in which the
// worker counts take turns and every worker does as many items (four
// when n is at most 40), each count's round
// followed by its ceiling for as long (membench.PairedSet). A ceiling
// evicts the caches, so a round's first item on each worker runs cold:
// rounds of four items in all had given two workers half as many warm
// items as one, and [25,10]'s scaling read 1.65-1.96 (median 1.72) where
// the sampler's own benchmark, without the ceilings, gave 1.83-1.85.
// A round whose share of the items takes less than minRound goes on with
// more items (numbered past every share) until it has run that long.
// item(j, k, i) does item i on worker k of count ws[j] and returns its
// operation count, ceiling(j, d) measures count ws[j]'s ceiling for d;
// the first error stops its worker and is returned. The results, and the
// items done, are one per count.
func paired(n int, ws []int, item func(j, k, i int) (int64, error), ceiling func(j int, d time.Duration) membench.Result) (res, ceil []membench.Result, items []int64, err error) {
	rounds := min(max(n/4, 1), 10)
	var firstErr atomic.Value
	works := make([]func(int) membench.Result, len(ws))
	ceils := make([]func(time.Duration) membench.Result, len(ws))
	items = make([]int64, len(ws))
	for j, w := range ws {
		works[j] = func(round int) membench.Result {
			var next, extra, done atomic.Int64
			next.Store(int64(round * n * w / rounds))
			end := int64((round + 1) * n * w / rounds)
			start := time.Now()
			r := membench.Work(w, func(k int) int64 {
				var ops int64
				for {
					i := next.Add(1) - 1
					if i >= end {
						if time.Since(start) >= minRound {
							return ops
						}
						// Items past the round's share, numbered
						// apart from every round's share.
						i = int64(round+1)<<32 + extra.Add(1) - 1
					}
					o, err := item(j, k, int(i))
					if err != nil {
						firstErr.CompareAndSwap(nil, err)
						return ops
					}
					ops += o
					done.Add(1)
				}
			})
			items[j] += done.Load()
			return r
		}
		ceils[j] = func(d time.Duration) membench.Result { return ceiling(j, d) }
	}
	res, ceil = membench.PairedSet(rounds, works, ceils)
	err, _ = firstErr.Load().(error)
	return res, ceil, items, err
}

// minRound is the least time a round of paired's items runs, its share of
// the items done, as the ceiling after it runs at least 5 ms
// (membench.PairedSet). On a graph held in cache (Cora: 12.3k edges, 30
// µs a [25,10] minibatch on AMD EPYC Zen 5) a round of four minibatches
// took 0.16 ms, the cold first of them (the ceiling's array of at least
// 4 MiB had evicted the sampler's lines) cost 5-9 ns an edge against 2.0-2.2
// for the others, and [25,10] read 0.46-0.52 of the read ceiling; with
// rounds of 5 ms, 0.7-0.8. A graph in memory takes about 2 ms a
// minibatch, and its four already run longer.
const minRound = 5 * time.Millisecond

// cache compares the admission policies: hit rates on held-out batches,
// and the gather rate through the mapping with the degree-ordered cache.
func (e *env) cache(ctx context.Context) error {
	n := e.d.Meta.NumNodes
	rowB := int64(4 * e.dim)
	budget := e.cfg.CacheBytes
	if budget == 0 {
		budget = int64(n) * rowB / 10
	}
	rows := int(min(budget/rowB, int64(n)))
	heldInputs, err := e.inputBatches(e.held, e.cfg.Batches)
	if err != nil {
		return err
	}
	s, err := sample.New(e.g, sample.Config{Fanouts: e.cfg.Fanouts[0]})
	if err != nil {
		return err
	}
	var counts []uint32
	err = e.cfg.Step(fmt.Sprintf("pre-sampled %d minibatches to rank nodes", len(e.batches)), func() error {
		var err error
		counts, err = s.CountInputs(ctx, e.batches, e.cfg.Seed+11, 0)
		return err
	})
	if err != nil {
		return err
	}
	orders := []struct {
		name  string
		order []int32
	}{{"degree", feature.DegreeOrder(e.g)}, {"presample", feature.HotOrder(counts)}}
	for _, o := range orders {
		in := make([]bool, n)
		k := min(rows, len(o.order))
		for _, v := range o.order[:k] {
			in[v] = true
		}
		var hit, total int
		for _, b := range heldInputs {
			for _, v := range b {
				if in[v] {
					hit++
				}
			}
			total += len(b)
		}
		e.rep.Cache = append(e.rep.Cache, CacheResult{
			Policy: o.name, BudgetBytes: budget, Rows: k, RowFraction: float64(k) / float64(n),
			HitRate: float64(hit) / float64(max(total, 1)),
		})
	}
	st, err := feature.Open(e.d, feature.Options{Workers: 1, CacheBytes: budget, CacheOrder: orders[0].order})
	if err != nil {
		return err
	}
	defer st.Close()
	st.ResetStats()
	size := e.d.FeatureArray.DType.Size()
	table, freeTable := e.rowTable(size, nil)
	defer freeTable()
	res, c, err := e.gatherRates(st, heldInputs, table, size*e.dim)
	if err != nil {
		return err
	}
	for j, w := range e.cfg.Workers {
		e.rep.Gather = append(e.rep.Gather, GatherResult{
			Source: "mmap " + e.d.FeatureArray.DType.Name() + " + degree cache", IDs: "sampled", Workers: w,
			RowsPerSec: res[j].CPUPerSec, RowsPerSecWall: res[j].PerSec, BytesPerSec: res[j].CPUPerSec * float64(4*e.dim),
			RowBytes: size * e.dim, Ceiling: c[j].CPUPerSec, Ratio: res[j].CPUPerSec / c[j].CPUPerSec, HitRate: st.CacheStats().HitRate(),
		})
	}
	return nil
}

// loader runs the pipeline with a consumer that spins for ConsumerTime
// per batch, with the largest worker count, without and with features.
func (e *env) loader(ctx context.Context) error {
	w := e.cfg.Workers[len(e.cfg.Workers)-1]
	st, err := feature.FromFloat32(e.feats, e.d.Meta.NumNodes, e.dim, feature.Options{Workers: w})
	if err != nil {
		return err
	}
	// The first fanout list without and with features, and a light one
	// (10,5) whose sampling alone is faster than a 5 ms consumer.
	for _, run := range []struct {
		fan []int
		f   pipeline.Fetcher
	}{{e.cfg.Fanouts[0], nil}, {e.cfg.Fanouts[0], st}, {[]int{10, 5}, nil}} {
		s, err := sample.New(e.g, sample.Config{Fanouts: run.fan})
		if err != nil {
			return err
		}
		r, err := e.runLoader(ctx, s, run.f, w)
		if err != nil {
			return err
		}
		e.rep.Loader = append(e.rep.Loader, *r)
	}
	return nil
}

func (e *env) runLoader(ctx context.Context, s *sample.Sampler, f pipeline.Fetcher, w int) (*LoaderResult, error) {
	var labels []int32
	if f != nil {
		labels = e.d.Labels
	}
	l, err := pipeline.NewSampled(s, f, labels, e.seeds, pipeline.SampledConfig{BatchSize: e.cfg.BatchSize, Shuffle: true, Seed: e.cfg.Seed, SampleWorkers: w, Prefetch: 4})
	if err != nil {
		return nil, err
	}
	what := "loader (sampling only)"
	if f != nil {
		what = "loader (sampling + features)"
	}
	// Run epochs until Batches batches have been consumed (small datasets
	// have few batches per epoch).
	n := e.cfg.Batches
	var stats pipeline.Stats
	var sampleT, gatherT time.Duration
	for k, epoch := 0, 0; k < n; epoch++ {
		it := l.Epoch(ctx, epoch)
		for k < n && it.Next() {
			spin(e.cfg.ConsumerTime)
			it.Batch().Release()
			k++
			if e.cfg.Progress != nil {
				e.cfg.Progress(what, k, n)
			}
		}
		st := it.Stats()
		it.Close()
		if err := it.Err(); err != nil {
			return nil, err
		}
		stats.Batches += st.Batches
		stats.Busy += st.Busy
		stats.Wait += st.Wait
		stats.FirstWait += st.FirstWait
		sampleT += st.Stage("sample")
		gatherT += st.Stage("gather")
		stats.Stages = st.Stages
	}
	for i := range stats.Stages {
		stats.Stages[i].Busy = map[string]time.Duration{"sample": sampleT, "gather": gatherT}[stats.Stages[i].Name]
	}
	per := func(d time.Duration, div int) float64 {
		return d.Seconds() * 1000 / float64(max(1, stats.Batches)) / float64(max(1, div))
	}
	return &LoaderResult{
		Fanouts: sample.FormatFanouts(s.Config().Fanouts), SampleWorkers: w, Features: f != nil,
		ConsumerMs: e.cfg.ConsumerTime.Seconds() * 1000, Batches: stats.Batches, Busy: stats.Utilization(),
		SampleMsPerBatch: per(sampleT, w), GatherMsPerBatch: per(gatherT, 1), Bottleneck: stats.Bottleneck(),
	}, nil
}

// spin burns CPU for d, like a training step would.
func spin(d time.Duration) {
	end := time.Now().Add(d)
	x := uint64(1)
	for time.Now().Before(end) {
		for i := 0; i < 1000; i++ {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	spinSink.Add(x)
}

var spinSink atomic.Uint64

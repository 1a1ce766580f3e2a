// Package sarbench measures distributed full-graph training (package sar)
// as 'graphmill bench sar' reports it: for every mode and rank count, the
// peak resident set and Go heap of every rank (each rank a child process,
// so the peaks are its own), the bytes every rank sends per epoch against
// the analytic minimum, the epoch time, and a modelled epoch time on N
// machines of a given core count and link bandwidth.
package sarbench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/graphmill/graphmill/dataset"
	"github.com/graphmill/graphmill/dataset/parts"
	"github.com/graphmill/graphmill/dist"
	"github.com/graphmill/graphmill/internal/isa"
	"github.com/graphmill/graphmill/internal/units"
	"github.com/graphmill/graphmill/partition"
	"github.com/graphmill/graphmill/sar"
	"github.com/graphmill/graphmill/synth"
)

// Options sizes the benchmark.
type Options struct {
	// Nodes, Degree (edges per node) and FeatureDim describe the synthetic
	// graph; Model, Hidden and Layers the model (dropout 0.5).
	Nodes      int    `json:"nodes"`
	Degree     int    `json:"degree"`
	FeatureDim int    `json:"feature_dim"`
	Model      string `json:"model"`
	Hidden     int    `json:"hidden"`
	Layers     int    `json:"layers"`
	// Epochs are timed after one warm-up epoch (0: the warm-up alone,
	// timed).
	Epochs int `json:"epochs"`
	// Ranks lists the rank counts; the graph is partitioned into their
	// largest (a multiple of all of them).
	Ranks []int      `json:"ranks"`
	Modes []sar.Mode `json:"modes"`
	// ModelBandwidth (bits per second) and ModelCores size the modelled
	// cluster: machines of ModelCores cores joined by links of
	// ModelBandwidth.
	ModelBandwidth float64 `json:"model_bandwidth_bits"`
	ModelCores     int     `json:"model_cores"`
	// Dir holds the generated and partitioned datasets (reused); Exe is
	// the graphmill binary run for every rank.
	Dir      string            `json:"-"`
	Exe      string            `json:"-"`
	Progress func(step string) `json:"-"`
}

// Quick and Full are the standard sizes.
var (
	Quick = Options{Nodes: 500_000, Degree: 10, FeatureDim: 100, Model: "sage", Hidden: 64, Layers: 3, Epochs: 0, Ranks: []int{1, 2}, Modes: sar.Modes, ModelBandwidth: 25e9, ModelCores: 64}
	Full  = Options{Nodes: 2_000_000, Degree: 10, FeatureDim: 100, Model: "sage", Hidden: 128, Layers: 3, Epochs: 1, Ranks: []int{1, 2, 4, 8}, Modes: sar.Modes, ModelBandwidth: 25e9, ModelCores: 64}
)

// RankReport is what one rank measures ('graphmill bench sar-rank'
// prints it as JSON).
type RankReport struct {
	Rank       int `json:"rank"`
	Size       int `json:"size"`
	InnerNodes int `json:"inner_nodes"`
	Edges      int `json:"edges"`
	// Boundary rows this rank sends per exchange; Fetched rows it receives.
	Boundary int `json:"boundary_rows"`
	Fetched  int `json:"fetched_rows"`
	// PeakRSSBytes is the process's VmHWM; PeakHeapBytes the largest live Go
	// heap seen during the steps, BaseHeapBytes the heap before them (the
	// shard: features, graph, model), so PeakHeapBytes-BaseHeapBytes is
	// the step's tensors; PeakFetchedBytes the other ranks' rows held at
	// once.
	PeakRSSBytes     int64 `json:"peak_rss_bytes"`
	PeakHeapBytes    int64 `json:"peak_heap_bytes"`
	BaseHeapBytes    int64 `json:"base_heap_bytes"`
	StepTensorBytes  int64 `json:"step_tensor_bytes"`
	PeakFetchedBytes int64 `json:"peak_fetched_bytes"`
	// Per epoch: bytes sent for rows and gradients (exactly), for the
	// parameter all-reduce (at the ring's cost), and the analytic minimum
	// of the former.
	ExchangeBytes int64   `json:"exchange_bytes_per_epoch"`
	ReduceBytes   int64   `json:"reduce_bytes_per_epoch"`
	MinBytes      int64   `json:"min_exchange_bytes_per_epoch"`
	EpochSeconds  float64 `json:"epoch_seconds"`
	Threads       int     `json:"threads"`
	Loss          float64 `json:"loss"`
	SetupSeconds  float64 `json:"setup_seconds"`
}

// Run is one mode on one rank count.
type Run struct {
	Mode  sar.Mode     `json:"mode"`
	Ranks int          `json:"ranks"`
	Rank  []RankReport `json:"per_rank,omitempty"`
	// The worst rank's peaks, and the worst peak × ranks ÷ the same mode's
	// peak on one rank.
	PeakRSSBytes    int64   `json:"peak_rss_bytes"`
	StepTensorBytes int64   `json:"step_tensor_bytes"`
	RSSRatio        float64 `json:"rss_ratio"`
	TensorRatio     float64 `json:"tensor_ratio"`
	// The worst rank's bytes sent per epoch, and its rows-and-gradients
	// bytes over their analytic minimum.
	BytesSent  int64   `json:"bytes_sent_per_epoch"`
	MinBytes   int64   `json:"min_bytes_per_epoch"`
	BytesRatio float64 `json:"bytes_ratio"`
	// EpochSeconds is measured (N ranks on this machine's cores);
	// ModelledSeconds the model's epoch on N machines.
	EpochSeconds    float64 `json:"epoch_seconds"`
	ModelledSeconds float64 `json:"modelled_epoch_seconds"`
	Loss            float64 `json:"loss"`
	Error           string  `json:"error,omitempty"`
}

// Report is the benchmark's result.
type Report struct {
	// Machine is the CPU measured on (isa.Describe).
	Machine isa.Machine `json:"machine"`
	Options Options     `json:"options"`
	Nodes   int         `json:"nodes"`
	Edges   int64       `json:"edges"`
	Parts   int         `json:"parts"`
	// CutFraction is the partition's edge cut over its edges.
	CutFraction float64 `json:"cut_fraction"`
	Runs        []Run   `json:"runs"`
	// MemoryRatio is the worst sar-mode per-rank peak resident set × N ÷
	// the one-rank peak over the runs with N > 1 (target <= 1.3);
	// TensorRatio the same for the step's tensors; BytesRatio the worst
	// rows-and-gradients bytes over the analytic minimum (target <= 1.1).
	MemoryRatio float64 `json:"memory_ratio"`
	TensorRatio float64 `json:"tensor_ratio"`
	BytesRatio  float64 `json:"bytes_ratio"`
	// CoreSeconds is the one-rank sar epoch's compute in core-seconds,
	// the basis of the modelled times.
	CoreSeconds float64 `json:"core_seconds"`
	Seconds     float64 `json:"seconds"`
}

func (o *Options) progress(f string, a ...any) {
	if o.Progress != nil {
		o.Progress(fmt.Sprintf(f, a...))
	}
}

// Prepare generates (or reuses) the graph and its partition into the
// largest rank count, returning the partitioned dataset's directory.
func Prepare(ctx context.Context, o Options) (string, *parts.Book, error) {
	base := filepath.Join(o.Dir, fmt.Sprintf("bench-sar-%d-%d-%d", o.Nodes, o.Degree, o.FeatureDim))
	k := 1
	for _, n := range o.Ranks {
		k = lcm(k, n)
	}
	k = max(k, 2)
	pdir := fmt.Sprintf("%s-p%d", base, k)
	if b, err := parts.ReadBook(pdir); err == nil && b.NumParts == k && b.NumNodes == o.Nodes {
		return pdir, b, nil
	}
	o.progress("generating %s nodes, %s edges, %d features", units.Count(o.Nodes), units.Count(int64(o.Nodes)*int64(o.Degree)), o.FeatureDim)
	cfg := synth.Config{Name: fmt.Sprintf("synthetic-%s", units.Count(o.Nodes)), Nodes: o.Nodes, Edges: int64(o.Nodes) * int64(o.Degree), FeatureDim: o.FeatureDim, Classes: 16, Seed: 1}
	if _, err := synth.Ensure(ctx, base, cfg); err != nil {
		return "", nil, err
	}
	d, err := dataset.Open(base)
	if err != nil {
		return "", nil, err
	}
	defer d.Close()
	o.progress("partitioning into %d parts", k)
	g, err := partition.FromCSC(ctx, d.Graph, 0)
	if err != nil {
		return "", nil, err
	}
	res, err := partition.Partition(ctx, g, partition.Options{Parts: k, Seed: 1})
	if err != nil {
		return "", nil, err
	}
	b, err := parts.Write(ctx, d, res.Parts, k, pdir, parts.WriteOptions{Overwrite: true, Method: "metis", Stats: res.Stats})
	return pdir, b, err
}

func lcm(a, b int) int {
	x, y := a, b
	for y != 0 {
		x, y = y, x%y
	}
	return a / x * b
}

// RunAll runs every mode on every rank count.
func RunAll(ctx context.Context, o Options) (*Report, error) {
	start := time.Now()
	dir, book, err := Prepare(ctx, o)
	if err != nil {
		return nil, err
	}
	rep := &Report{Machine: isa.Describe(), Options: o, Nodes: book.NumNodes, Edges: book.NumEdges, Parts: book.NumParts, CutFraction: book.Stats.CutFraction}
	one := map[sar.Mode]Run{}
	for _, n := range o.Ranks {
		for _, mode := range o.Modes {
			o.progress("%s mode on %d rank(s)", mode, n)
			r := runRanks(ctx, o, dir, mode, n)
			if r.Error == "" {
				if n == 1 {
					one[mode] = r
					if mode == sar.SAR {
						rep.CoreSeconds = r.EpochSeconds * float64(r.Rank[0].Threads)
					}
				} else if b, ok := one[mode]; ok {
					r.RSSRatio = float64(r.PeakRSSBytes) * float64(n) / float64(b.PeakRSSBytes)
					r.TensorRatio = float64(r.StepTensorBytes) * float64(n) / float64(max(b.StepTensorBytes, 1))
					if mode == sar.SAR {
						rep.MemoryRatio = max(rep.MemoryRatio, r.RSSRatio)
						rep.TensorRatio = max(rep.TensorRatio, r.TensorRatio)
					}
				}
				if r.MinBytes > 0 {
					rep.BytesRatio = max(rep.BytesRatio, r.BytesRatio)
				}
			}
			rep.Runs = append(rep.Runs, r)
		}
	}
	// The model: the one-rank epoch's core-seconds spread over N machines
	// of ModelCores cores, plus the worst rank's bytes over the link.
	for i := range rep.Runs {
		r := &rep.Runs[i]
		if r.Error == "" && rep.CoreSeconds > 0 {
			r.ModelledSeconds = rep.CoreSeconds/float64(r.Ranks*o.ModelCores) + float64(r.BytesSent)*8/o.ModelBandwidth
		}
	}
	rep.Seconds = time.Since(start).Seconds()
	var bad []string
	for _, r := range rep.Runs {
		if r.Error != "" {
			bad = append(bad, fmt.Sprintf("%s on %d ranks: %s", r.Mode, r.Ranks, r.Error))
		}
	}
	if len(bad) > 0 {
		return rep, fmt.Errorf("%d runs failed: %s", len(bad), strings.Join(bad, "; "))
	}
	return rep, nil
}

// runRanks starts n rank processes of one mode and gathers their reports.
func runRanks(ctx context.Context, o Options, dir string, mode sar.Mode, n int) Run {
	r := Run{Mode: mode, Ranks: n}
	port, err := freePort()
	if err != nil {
		r.Error = err.Error()
		return r
	}
	secret := dist.NewSecret()
	threads := max(1, runtimeCPUs()/n)
	outs := make([]bytes.Buffer, n)
	errs := make([]bytes.Buffer, n)
	runErr := make([]error, n)
	ctx, cancel := context.WithTimeout(ctx, 20*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	for rank := 0; rank < n; rank++ {
		args := []string{"bench", "sar-rank", "--dataset", dir, "--mode", string(mode), "--model", o.Model,
			"--hidden", strconv.Itoa(o.Hidden), "--layers", strconv.Itoa(o.Layers), "--epochs", strconv.Itoa(o.Epochs), "--threads", strconv.Itoa(threads)}
		c := exec.CommandContext(ctx, o.Exe, args...)
		c.Env = append(cleanEnv(), "RANK="+strconv.Itoa(rank), "WORLD_SIZE="+strconv.Itoa(n), "LOCAL_RANK="+strconv.Itoa(rank), "LOCAL_WORLD_SIZE="+strconv.Itoa(n),
			"MASTER_ADDR=127.0.0.1", "MASTER_PORT="+strconv.Itoa(port), dist.TokenEnv+"="+secret)
		c.Stdout, c.Stderr = &outs[rank], &errs[rank]
		wg.Add(1)
		go func() {
			defer wg.Done()
			runErr[rank] = c.Run()
		}()
	}
	wg.Wait()
	for rank := 0; rank < n; rank++ {
		if runErr[rank] != nil {
			msg := strings.TrimSpace(errs[rank].String())
			if i := strings.LastIndex(msg, "\n"); i >= 0 {
				msg = msg[i+1:]
			}
			r.Error = fmt.Sprintf("rank %d: %v: %s", rank, runErr[rank], msg)
			return r
		}
		var rr RankReport
		if err := json.Unmarshal(outs[rank].Bytes(), &rr); err != nil {
			r.Error = fmt.Sprintf("rank %d: reading its report: %v", rank, err)
			return r
		}
		r.add(rr)
	}
	if err := r.checkBytes(); err != nil {
		r.Error = err.Error()
	}
	return r
}

// add folds one rank's report into the run's worst figures.
func (r *Run) add(rr RankReport) {
	r.Rank = append(r.Rank, rr)
	r.PeakRSSBytes = max(r.PeakRSSBytes, rr.PeakRSSBytes)
	r.StepTensorBytes = max(r.StepTensorBytes, rr.StepTensorBytes)
	if rr.ExchangeBytes+rr.ReduceBytes > r.BytesSent {
		r.BytesSent = rr.ExchangeBytes + rr.ReduceBytes
	}
	if rr.MinBytes > 0 {
		ratio := float64(rr.ExchangeBytes) / float64(rr.MinBytes)
		if ratio > r.BytesRatio {
			r.BytesRatio, r.MinBytes = ratio, rr.MinBytes
		}
	}
	r.EpochSeconds = max(r.EpochSeconds, rr.EpochSeconds)
	r.Loss = rr.Loss
}

// checkBytes fails a run on several ranks whose bytes ratio is missing:
// the check (ratio <= 1.1) must never pass for want of a minimum. A rank
// that sent rows or gradients against a minimum of 0, or a run in which
// no rank has a minimum, is an error.
func (r *Run) checkBytes() error {
	if r.Ranks < 2 {
		return nil
	}
	for _, rr := range r.Rank {
		if rr.MinBytes <= 0 && rr.ExchangeBytes > 0 {
			return fmt.Errorf("rank %d sent %s of rows and gradients per epoch against an analytic minimum of %d: no bytes ratio", rr.Rank, units.Bytes(rr.ExchangeBytes), rr.MinBytes)
		}
	}
	if r.MinBytes <= 0 {
		return fmt.Errorf("no analytic minimum of the bytes sent on any of the %d ranks: no bytes ratio", r.Ranks)
	}
	return nil
}

// cleanEnv is this process's environment without any launcher's
// variables (the ranks get their own).
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		skip := false
		for _, p := range []string{"RANK=", "WORLD_SIZE=", "LOCAL_RANK=", "LOCAL_WORLD_SIZE=", "MASTER_ADDR=", "MASTER_PORT=", "OMPI_", "PMI_", "SLURM_", "PET_", "JOB_COMPLETION_INDEX=", "TORCHELASTIC_", "GROUP_RANK=", dist.TokenEnv + "="} {
			if strings.HasPrefix(kv, p) {
				skip = true
				break
			}
		}
		if !skip {
			env = append(env, kv)
		}
	}
	return env
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Package diskbench measures training on features larger than the memory
// the process is given ('graphmill bench disk'). It first measures the
// device's ceilings in the same run (random 4 KiB reads at queue depth 1
// and 64, sequential reads), then trains one epoch of GraphSAGE with the
// features in memory (the reference) and from disk inside a memory cgroup
// a quarter of the features' size (as root; or, with Full, on a dataset
// larger than RAM), with the dataset's pages dropped from the page cache
// first, and reports the reads against the ceilings. It also replays the
// epoch's sampled rows against three cache policies at the same budget:
// the static degree order training uses, GNNLab's presampling, and
// Ginex's superbatch Belady.
package diskbench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/graphmill/graphmill/dataset"
	"github.com/graphmill/graphmill/internal/cgroup"
	"github.com/graphmill/graphmill/internal/diskio"
	"github.com/graphmill/graphmill/internal/isa"
	"github.com/graphmill/graphmill/internal/memstat"
	"github.com/graphmill/graphmill/internal/units"
	"github.com/graphmill/graphmill/layout"
	"github.com/graphmill/graphmill/sample"
	"github.com/graphmill/graphmill/synth"
)

// Options sizes the benchmark.
type Options struct {
	Nodes      int
	Degree     int
	FeatureDim int
	TrainFrac  float64
	Batch      int
	Fanouts    []int
	// LimitFraction is the memory cgroup's limit as a fraction of the
	// features' size (0.25).
	LimitFraction float64
	// Superbatch is the number of batches the Belady policy looks ahead.
	Superbatch int
	// CeilingTime is how long each random-read ceiling is measured.
	CeilingTime time.Duration
	// Full trains on a dataset larger than this machine's memory, without
	// a cgroup (Nodes is then raised to make the features 1.3x RAM).
	Full bool
	// Dir holds the generated dataset (reused when present); Exe is the
	// graphmill binary the training runs use.
	Dir, Exe string
	Progress func(string) `json:"-"`
}

// Quick and Standard are the sizes of 'bench disk --quick' and 'bench disk'.
var (
	Quick    = Options{Nodes: 1_500_000, Degree: 10, FeatureDim: 256, TrainFrac: 0.02, Batch: 1024, Fanouts: []int{25, 10}, LimitFraction: 0.25, Superbatch: 10, CeilingTime: time.Second}
	Standard = Options{Nodes: 3_000_000, Degree: 10, FeatureDim: 256, TrainFrac: 0.01, Batch: 1024, Fanouts: []int{25, 10}, LimitFraction: 0.25, Superbatch: 10, CeilingTime: 3 * time.Second}
)

// Ceilings are the device's rates, measured on the features file with
// O_DIRECT.
type Ceilings struct {
	Backend         string  `json:"backend"`
	RandomQD1       float64 `json:"random_4k_qd1_reads_per_second"`
	RandomQD64      float64 `json:"random_4k_qd64_reads_per_second"`
	SequentialBytes float64 `json:"sequential_bytes_per_second"`
}

// Report is the benchmark's outcome.
type Report struct {
	// Machine is the CPU measured on (isa.Describe).
	Machine       isa.Machine `json:"machine"`
	Options       Options     `json:"options"`
	Ceilings      Ceilings    `json:"ceilings"`
	FeatureBytes  int64       `json:"feature_bytes"`
	LimitBytes    int64       `json:"memory_limit_bytes"`
	Limit         string      `json:"memory_limit"` // how the limit was set: "cgroup v1", "cgroup v2", "RAM" or "none"
	InMemorySeeds float64     `json:"in_memory_seeds_per_second"`
	DiskSeeds     float64     `json:"disk_seeds_per_second"`
	// IOEfficiency is the pages/s the gathers read while the step waited
	// on them, over the random-read ceiling at queue depth 64.
	IOEfficiency float64 `json:"io_efficiency"`
	// ReadAmplification is KernelReadBytes over DiskReadBytes: what the
	// kernel read from storage for the training process over what its
	// readers asked for (the gathers' distinct pages of missed rows, the
	// cache fill, the graph's reads); 0: not measured.
	ReadAmplification float64 `json:"read_amplification"`
	// FillEfficiency is the sequential pass's rate over the sequential
	// ceiling.
	FillEfficiency float64 `json:"fill_efficiency"`
	VsInMemory     float64 `json:"vs_in_memory"`
	// FirstBatch is the time from start to the first batch, and
	// FirstBatchBound the bar: 1.5x the features' sequential read time
	// + 2 s.
	FirstBatch      float64 `json:"time_to_first_batch_seconds"`
	FirstBatchBound float64 `json:"time_to_first_batch_bound_seconds"`
	EpochSeconds    float64 `json:"epoch_seconds"`
	// DiskReadBytes is what training reported reading; KernelReadBytes
	// what the kernel counted for the process (/proc/PID/io).
	DiskReadBytes   int64   `json:"disk_read_bytes"`
	KernelReadBytes int64   `json:"kernel_read_bytes"`
	CacheBytes      int64   `json:"cache_bytes"`
	HitRate         float64 `json:"hit_rate"`
	PeakCgroupBytes int64   `json:"peak_cgroup_bytes,omitempty"`
	// LossesEqual says whether the losses from disk equal the in-memory
	// run's (nil with Full, which has no in-memory run).
	LossesEqual *bool `json:"losses_equal,omitempty"`
	// BarsMissed names the bars of #25 this run missed (io_efficiency,
	// read_amplification, fill_efficiency, time_to_first_batch,
	// losses_equal), a bar not measured counting as missed; empty when
	// every one was met.
	BarsMissed []string `json:"bars_missed"`
	// Policies compares cache policies at the run's cache budget on the
	// same sampled epoch.
	Policies []PolicyResult `json:"policies"`
	// Layouts compares the node layouts of graphmill data pack on the
	// same epoch, under the superbatch policy.
	Layouts []LayoutResult `json:"layouts"`
	// Packed is the same training from disk on a packed copy of the
	// dataset (graphmill data pack, the default layout).
	Packed *PackedRun `json:"packed,omitempty"`
}

// PackedRun is training from disk on the packed copy, in the same limit.
type PackedRun struct {
	// PackSeconds is the time the copy took (0 when reused).
	PackSeconds    float64 `json:"pack_seconds"`
	DiskReadBytes  int64   `json:"disk_read_bytes"`
	SeedsPerSecond float64 `json:"seeds_per_second"`
	HitRate        float64 `json:"hit_rate"`
	// ReadVsOriginal is DiskReadBytes over the original layout's run.
	ReadVsOriginal float64 `json:"read_vs_original"`
	// SeedsVsOriginal is SeedsPerSecond over the original layout's run.
	SeedsVsOriginal float64 `json:"seeds_vs_original"`
	// LossesEqual says whether the losses equal the in-memory run's on the
	// original dataset (the packed copy samples by original id).
	LossesEqual bool `json:"losses_equal"`
}

// say reports progress, when Progress is set.
func (o Options) say(f string, a ...any) {
	if o.Progress != nil {
		o.Progress(fmt.Sprintf(f, a...))
	}
}

// Run runs the benchmark.
func Run(ctx context.Context, o Options) (*Report, error) {
	rep := &Report{Machine: isa.Describe(), Options: o}
	if o.Full {
		// Features of 1.3x the machine's memory.
		ram := memstat.Limit()
		o.Nodes = max(o.Nodes, int(ram*13/10/int64(o.FeatureDim*4))+1)
		rep.Options = o
	}
	dir := filepath.Join(o.Dir, fmt.Sprintf("bench-disk-%d-%d-%d", o.Nodes, o.Degree, o.FeatureDim))
	o.say("dataset: %s nodes, %s edges, %d features (%s of features) in %s", units.Count(o.Nodes), units.Count(int64(o.Nodes)*int64(o.Degree)), o.FeatureDim,
		units.Bytes(int64(o.Nodes)*int64(o.FeatureDim)*4), dir)
	cfg := synth.Config{Name: "bench-disk", Nodes: o.Nodes, Edges: int64(o.Nodes) * int64(o.Degree), FeatureDim: o.FeatureDim, Classes: 16, Seed: 7,
		TrainFrac: o.TrainFrac, ValFrac: 0.001, TestFrac: 0.001}
	if _, err := synth.Ensure(ctx, dir, cfg); err != nil {
		return nil, err
	}
	d, err := dataset.Open(dir)
	if err != nil {
		return nil, err
	}
	featPath := d.FeatureArray.Path
	rep.FeatureBytes = int64(len(d.FeatureArray.Data))
	d.Close()

	o.say("ceilings: random 4 KiB reads at queue depth 1 and 64, sequential reads")
	if rep.Ceilings, err = measureCeilings(ctx, featPath, o.CeilingTime); err != nil {
		return nil, err
	}
	rep.FirstBatchBound = 1.5*float64(rep.FeatureBytes)/rep.Ceilings.SequentialBytes + 2
	o.say("  %s: %s reads/s at depth 1, %s at 64; sequential %s/s", rep.Ceilings.Backend, units.Count(rep.Ceilings.RandomQD1),
		units.Count(rep.Ceilings.RandomQD64), units.Bytes(int64(rep.Ceilings.SequentialBytes)))

	args := []string{"train", "--dataset", dir, "--model", "sage", "--batch", strconv.Itoa(o.Batch), "--fanouts", sample.FormatFanouts(o.Fanouts),
		"--epochs", "1", "--no-eval", "--seed", "3", "--quiet"}
	var mem *metrics
	if !o.Full {
		o.say("training in memory (the reference)")
		if mem, _, err = runTrain(ctx, o.Exe, append(args, "--features-in-memory", "yes"), nil); err != nil {
			return nil, err
		}
		rep.InMemorySeeds = mem.Summary.SeedsPerSecond
	}

	var cg *cgroup.Group
	switch {
	case o.Full:
		rep.Limit, rep.LimitBytes = "RAM", memstat.Limit()
	default:
		rep.LimitBytes = int64(float64(rep.FeatureBytes) * o.LimitFraction)
		if cg, err = cgroup.New(fmt.Sprintf("graphmill-bench-disk-%d", os.Getpid()), rep.LimitBytes); err != nil {
			o.say("  no memory cgroup (%v): training from disk without a limit", err)
			rep.Limit, rep.LimitBytes = "none", 0
		} else {
			defer cg.Close()
			rep.Limit = cg.Version()
		}
	}
	if err := dropCache(dir); err != nil {
		return nil, err
	}
	o.say("training from disk (memory limit %s, %s)", units.Bytes(rep.LimitBytes), rep.Limit)
	disk, kernel, err := runTrain(ctx, o.Exe, append(args, "--features-in-memory", "no"), cg)
	if err != nil {
		return nil, err
	}
	s := disk.Summary
	rep.DiskSeeds, rep.EpochSeconds, rep.FirstBatch = s.SeedsPerSecond, s.EpochSeconds, s.FirstBatchSeconds
	rep.DiskReadBytes, rep.KernelReadBytes = s.DiskReadBytes, kernel
	if kernel > 0 && s.DiskReadBytes > 0 {
		rep.ReadAmplification = float64(kernel) / float64(s.DiskReadBytes)
	}
	rep.CacheBytes, rep.HitRate = s.FeatureCacheBytes, s.FeatureCacheHitRate
	if s.Disk != nil {
		rep.IOEfficiency = s.Disk.PagesPerSecond / rep.Ceilings.RandomQD64
		if s.Disk.FillSeconds > 0 && s.FeatureCacheBytes > 0 {
			rep.FillEfficiency = float64(s.Disk.FillBytes) / s.Disk.FillSeconds / rep.Ceilings.SequentialBytes
		}
	}
	if cg != nil {
		rep.PeakCgroupBytes = cg.Peak()
	}
	if mem != nil {
		rep.VsInMemory = rep.DiskSeeds / rep.InMemorySeeds
		eq := sameLosses(mem, disk)
		rep.LossesEqual = &eq
	}
	if !o.Full {
		if rep.Packed, err = runPacked(ctx, o, dir, args, cg, rep, mem); err != nil {
			return nil, err
		}
	}
	o.say("cache policies at the same budget (%s), replayed on one sampled epoch", units.Bytes(rep.CacheBytes))
	if rep.Policies, rep.Layouts, err = ComparePolicies(ctx, dir, o, rep.CacheBytes); err != nil {
		return nil, err
	}
	rep.BarsMissed = rep.missed()
	return rep, nil
}

// measureCeilings measures the device's random and sequential read rates
// on path with O_DIRECT.
func measureCeilings(ctx context.Context, path string, dur time.Duration) (Ceilings, error) {
	r, err := diskio.Open(path, diskio.Options{Direct: true, Depth: 64})
	if err != nil {
		return Ceilings{}, err
	}
	defer r.Close()
	c := Ceilings{Backend: r.Backend()}
	if c.RandomQD1, err = diskio.RandomReadRate(ctx, r, 1, 4096, dur); err != nil {
		return c, err
	}
	if c.RandomQD64, err = diskio.RandomReadRate(ctx, r, 64, 4096, dur); err != nil {
		return c, err
	}
	c.SequentialBytes, err = diskio.SequentialRate(ctx, r, 8<<20, 2, min(r.Size(), 2<<30))
	return c, err
}

// metrics is what the benchmark reads of a training run's --metrics-out.
type metrics struct {
	Summary struct {
		SeedsPerSecond      float64 `json:"seeds_per_second"`
		EpochSeconds        float64 `json:"epoch_seconds"`
		FirstBatchSeconds   float64 `json:"time_to_first_batch_seconds"`
		DiskReadBytes       int64   `json:"disk_read_bytes"`
		GraphReadBytes      int64   `json:"graph_read_bytes"`
		ReadAmplification   float64 `json:"read_amplification"`
		FeatureCacheBytes   int64   `json:"feature_cache_bytes"`
		FeatureCacheHitRate float64 `json:"feature_cache_hit_rate"`
		Disk                *struct {
			PagesPerSecond float64 `json:"pages_per_second"`
			FillBytes      int64   `json:"fill_bytes"`
			FillSeconds    float64 `json:"fill_seconds"`
		} `json:"disk"`
	} `json:"summary"`
	History []struct {
		Loss float64 `json:"loss"`
	} `json:"history"`
}

// runTrain runs graphmill with args (in cg when set) and returns its
// metrics and the bytes the kernel counted it reading.
func runTrain(ctx context.Context, exe string, args []string, cg *cgroup.Group) (*metrics, int64, error) {
	f, err := os.CreateTemp("", "graphmill-bench-disk-*.json")
	if err != nil {
		return nil, 0, err
	}
	f.Close()
	defer os.Remove(f.Name())
	cmd := exec.CommandContext(ctx, exe, append(args, "--metrics-out", f.Name())...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if cg != nil {
		if err := cg.Prepare(cmd); err != nil {
			return nil, 0, err
		}
	}
	if err := cmd.Start(); err != nil {
		return nil, 0, err
	}
	// The kernel's count of the child's reads, polled until it exits.
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var kernel int64
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			if err != nil {
				return nil, kernel, fmt.Errorf("graphmill %v: %v: %s", args, err, bytes.TrimSpace(stderr.Bytes()))
			}
			var m metrics
			b, err := os.ReadFile(f.Name())
			if err == nil {
				err = json.Unmarshal(b, &m)
			}
			return &m, kernel, err
		case <-tick.C:
			if n := memstat.ProcessReadBytes(cmd.Process.Pid); n > 0 {
				kernel = n
			}
		}
	}
}

// runPacked packs the dataset (graphmill data pack's default layout; the
// copy is kept beside the dataset and reused) and trains from disk on it
// in the same memory limit, after dropping its pages from the page cache.
func runPacked(ctx context.Context, o Options, dir string, args []string, cg *cgroup.Group, rep *Report, mem *metrics) (*PackedRun, error) {
	pdir := dir + "-packed"
	pr := &PackedRun{}
	if p, err := dataset.Open(pdir); err == nil && p.Meta.Packed != nil && p.Meta.Packed.From == dir {
		p.Close()
	} else {
		if err == nil {
			p.Close()
		}
		o.say("packing the dataset (graphmill data pack) into %s", pdir)
		d, err := dataset.Open(dir)
		if err != nil {
			return nil, err
		}
		t0 := time.Now()
		order, err := layout.Order(ctx, d, layout.Config{Fanouts: o.Fanouts, BatchSize: o.Batch})
		if err == nil {
			err = layout.Write(ctx, d, pdir, order, layout.WriteOptions{Method: layout.Sample, Overwrite: true})
		}
		d.Close()
		if err != nil {
			return nil, err
		}
		pr.PackSeconds = time.Since(t0).Seconds()
	}
	err := dropCache(pdir)
	if err != nil {
		return nil, err
	}
	if cg != nil {
		// A fresh group: the first run's page cache stays charged to its
		// group (cgroup v1), and would shrink this run's cache.
		if cg, err = cgroup.New(fmt.Sprintf("graphmill-bench-disk-packed-%d", os.Getpid()), rep.LimitBytes); err != nil {
			return nil, err
		}
		defer cg.Close()
	}
	o.say("training from disk on the packed copy (memory limit %s)", units.Bytes(rep.LimitBytes))
	pargs := slices.Clone(args)
	pargs[slices.Index(pargs, dir)] = pdir
	m, _, err := runTrain(ctx, o.Exe, append(pargs, "--features-in-memory", "no"), cg)
	if err != nil {
		return nil, err
	}
	s := m.Summary
	pr.DiskReadBytes, pr.SeedsPerSecond, pr.HitRate = s.DiskReadBytes, s.SeedsPerSecond, s.FeatureCacheHitRate
	pr.ReadVsOriginal = float64(s.DiskReadBytes) / float64(max(1, rep.DiskReadBytes))
	pr.SeedsVsOriginal = s.SeedsPerSecond / max(rep.DiskSeeds, 1e-9)
	pr.LossesEqual = sameLosses(mem, m)
	return pr, nil
}

// sameLosses says whether two runs' losses are equal, epoch by epoch.
func sameLosses(a, b *metrics) bool {
	if a == nil || b == nil || len(a.History) != len(b.History) {
		return false
	}
	for i := range a.History {
		if a.History[i].Loss != b.History[i].Loss {
			return false
		}
	}
	return true
}

// missed names the bars the report does not meet; one that was not
// measured (0) is missed, never met by default.
func (r *Report) missed() []string {
	out := []string{}
	bar := func(name string, ok bool) {
		if !ok {
			out = append(out, name)
		}
	}
	bar("io_efficiency", r.IOEfficiency >= 0.6)
	bar("read_amplification", r.ReadAmplification > 0 && r.ReadAmplification <= 1.3)
	bar("fill_efficiency", r.FillEfficiency >= 0.7)
	bar("time_to_first_batch", r.FirstBatch > 0 && r.FirstBatch <= r.FirstBatchBound)
	bar("losses_equal", r.LossesEqual != nil && *r.LossesEqual)
	return out
}

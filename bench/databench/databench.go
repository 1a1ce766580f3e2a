// Package databench measures the data layer: graph build throughput and
// peak memory per edge, synthetic generation throughput, and the time to
// open a multi-gigabyte native dataset. 'graphmill bench data' prints it.
package databench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/graphmill/graphmill/bench/membench"
	"github.com/graphmill/graphmill/dataset"
	"github.com/graphmill/graphmill/graph"
	"github.com/graphmill/graphmill/internal/isa"
	"github.com/graphmill/graphmill/internal/memstat"
	"github.com/graphmill/graphmill/internal/par"
	"github.com/graphmill/graphmill/internal/rng"
	"github.com/graphmill/graphmill/npy"
	"github.com/graphmill/graphmill/synth"
)

// Options sizes the benchmark.
type Options struct {
	// BuildNodes and BuildEdges size the random edge list given to the
	// graph builder.
	BuildNodes, BuildEdges int
	// GenNodes, GenEdges and GenFeatures size the synthetic dataset that
	// is generated (timed) and then opened (timed).
	GenNodes    int
	GenEdges    int64
	GenFeatures int
	// Dir holds the generated dataset; it is reused when it already
	// holds one of the requested size (then generation is not re-timed).
	Dir     string
	Workers int
	// Python is the interpreter that runs the peer (scipy's COO-to-CSR
	// conversions); "" picks python3 on PATH or /usr/bin/python3,
	// whichever imports scipy; "none" skips the peer.
	Python string
	// Rounds is how many times each build runs, ours and the peer's in
	// turn (the best time of each is reported); 0 means 3.
	Rounds int
	// Progress is told which step runs.
	Progress func(step string)
}

// Quick and Full are the standard sizes: Full builds 50M edges and opens a
// dataset of more than 2 GB.
var (
	Quick = Options{BuildNodes: 1_000_000, BuildEdges: 10_000_000, GenNodes: 500_000, GenEdges: 5_000_000, GenFeatures: 64}
	Full  = Options{BuildNodes: 5_000_000, BuildEdges: 50_000_000, GenNodes: 4_000_000, GenEdges: 60_000_000, GenFeatures: 128}
)

// BuildResult is one graph build measurement.
type BuildResult struct {
	Name          string  `json:"name"`
	Nodes         int     `json:"nodes"`
	InputEdges    int     `json:"input_edges"`
	OutputEdges   int64   `json:"output_edges"`
	Seconds       float64 `json:"seconds"`
	EdgesPerSec   float64 `json:"edges_per_second"`
	PeakBytes     int64   `json:"peak_rss_bytes"`
	PeakPerEdge   float64 `json:"peak_bytes_per_input_edge"`
	InputPerEdge  float64 `json:"input_bytes_per_edge"`
	OutputPerEdge float64 `json:"output_bytes_per_input_edge"`
	// PeerSeconds is the best time of the same build by scipy (one
	// thread) on the same edge list, PeerOutputEdges what it stored, and
	// VsPeer PeerSeconds / Seconds (nil when the peer did not run or
	// stored another number of edges: not the same work).
	PeerSeconds     float64  `json:"peer_seconds,omitempty"`
	PeerOutputEdges int64    `json:"peer_output_edges,omitempty"`
	VsPeer          *float64 `json:"speedup_vs_peer"`
}

// Report is the benchmark's result.
type Report struct {
	// Machine is the CPU measured on (isa.Describe).
	Machine isa.Machine `json:"machine"`
	Workers int         `json:"workers"`
	// Peer names the build's peer ("scipy 1.10.1, one thread"), or says
	// why it did not run (PeerMissing).
	Peer           string        `json:"peer,omitempty"`
	PeerMissing    string        `json:"peer_missing,omitempty"`
	Builds         []BuildResult `json:"builds"`
	GenNodes       int           `json:"gen_nodes"`
	GenEdges       int64         `json:"gen_edges"`
	GenFeatures    int           `json:"gen_features"`
	GenSeconds     float64       `json:"gen_seconds,omitempty"`
	GenEdgesPerSec float64       `json:"gen_edges_per_second,omitempty"`
	GenBytesPerSec float64       `json:"gen_bytes_per_second,omitempty"`
	GenReused      bool          `json:"gen_reused"`
	DatasetBytes   int64         `json:"dataset_bytes"`
	OpenSeconds    float64       `json:"open_seconds"`
	VerifySeconds  float64       `json:"verify_seconds"`
}

// Run measures and returns the report.
func Run(ctx context.Context, o Options) (*Report, error) {
	rep := &Report{Machine: isa.Describe(), Workers: par.Workers(o.Workers), GenNodes: o.GenNodes, GenEdges: o.GenEdges, GenFeatures: o.GenFeatures}
	step := func(s string) {
		if o.Progress != nil {
			o.Progress(s)
		}
	}
	peer, err := findPeer(ctx, o.Python)
	if err != nil {
		rep.PeerMissing = err.Error()
	} else {
		rep.Peer = peer.name
	}
	for _, c := range []struct {
		name string
		opts graph.BuildOptions
	}{
		{"as-is", graph.BuildOptions{}},
		{"symmetrize+dedup", graph.BuildOptions{Symmetrize: true, Dedup: true, SelfLoops: graph.RemoveSelfLoops}},
	} {
		step(fmt.Sprintf("building a %d-edge graph (%s), and scipy the same", o.BuildEdges, c.name))
		b, err := measureBuild(ctx, o, c.name, c.opts, peer)
		if err != nil {
			return nil, err
		}
		rep.Builds = append(rep.Builds, b)
	}
	if o.Dir == "" {
		return nil, fmt.Errorf("databench: no directory for the generated dataset")
	}
	step(fmt.Sprintf("generating %d nodes, %d edges, %d features (unless already there)", o.GenNodes, o.GenEdges, o.GenFeatures))
	gen := time.Now()
	cfg := synth.Config{Name: "bench", Nodes: o.GenNodes, Edges: o.GenEdges, FeatureDim: o.GenFeatures, Classes: 16, Seed: 1, Workers: o.Workers}
	reused, err := synth.Ensure(ctx, o.Dir, cfg)
	if err != nil {
		return nil, err
	}
	rep.GenReused = reused
	if !reused {
		rep.GenSeconds = time.Since(gen).Seconds()
		rep.GenEdgesPerSec = float64(o.GenEdges) / rep.GenSeconds
	}
	step("opening the dataset")
	t := time.Now()
	d, err := dataset.Open(o.Dir)
	if err != nil {
		return nil, err
	}
	rep.OpenSeconds = time.Since(t).Seconds()
	rep.DatasetBytes = d.Bytes()
	if rep.GenSeconds > 0 {
		rep.GenBytesPerSec = float64(rep.DatasetBytes) / rep.GenSeconds
	}
	step("verifying every edge")
	t = time.Now()
	err = d.Verify(ctx)
	rep.VerifySeconds = time.Since(t).Seconds()
	d.Close()
	return rep, err
}

func measureBuild(ctx context.Context, o Options, name string, opts graph.BuildOptions, peer *scipyPeer) (BuildResult, error) {
	n, m := o.BuildNodes, o.BuildEdges
	src := make([]int32, m)
	dst := make([]int32, m)
	par.For(par.Workers(o.Workers), m, func(w, lo, hi int) {
		var r rng.Rand
		r.Seed(rng.Derive(7, uint64(lo)))
		for i := lo; i < hi; i++ {
			src[i], dst[i] = int32(r.IntN(n)), int32(r.IntN(n))
		}
	})
	opts.Workers = o.Workers
	res := BuildResult{Name: name, Nodes: n, InputEdges: m, InputPerEdge: 8}
	var input string
	if peer != nil {
		dir, err := os.MkdirTemp("", "graphmill-bench-data-")
		if err != nil {
			return res, err
		}
		defer os.RemoveAll(dir)
		input = dir
		if err := npy.WriteFile(filepath.Join(dir, "src.npy"), src, m); err != nil {
			return res, err
		}
		if err := npy.WriteFile(filepath.Join(dir, "dst.npy"), dst, m); err != nil {
			return res, err
		}
	}
	rounds := o.Rounds
	if rounds <= 0 {
		rounds = 3
	}
	ours := func(round int) error {
		memstat.ResetPeak()
		t := time.Now()
		g, err := graph.Build(ctx, n, src, dst, nil, opts)
		if err != nil {
			return err
		}
		secs := time.Since(t).Seconds()
		if round == 0 || secs < res.Seconds {
			res.Seconds = secs
		}
		if round == 0 {
			res.PeakBytes = memstat.Peak()
			res.OutputEdges = g.NumEdges()
			res.OutputPerEdge = float64(g.Bytes()) / float64(m)
		}
		return nil
	}
	theirs := func(round int) error {
		if peer == nil {
			return nil
		}
		secs, edges, err := peer.build(ctx, input, n, opts.Symmetrize)
		if err != nil {
			return err
		}
		if round == 0 || secs < res.PeerSeconds {
			res.PeerSeconds = secs
		}
		res.PeerOutputEdges = edges
		return nil
	}
	if err := membench.Alternate(rounds, ours, theirs); err != nil {
		return res, err
	}
	res.EdgesPerSec = float64(m) / res.Seconds
	res.PeakPerEdge = float64(res.PeakBytes) / float64(m)
	if res.PeerSeconds > 0 && res.PeerOutputEdges == res.OutputEdges {
		v := res.PeerSeconds / res.Seconds
		res.VsPeer = &v
	}
	return res, nil
}

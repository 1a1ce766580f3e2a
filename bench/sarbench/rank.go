package sarbench

import (
	"context"
	"runtime"
	"runtime/debug"
	"time"

	"github.com/graphmill/graphmill/dist"
	"github.com/graphmill/graphmill/internal/memstat"
	"github.com/graphmill/graphmill/internal/rng"
	"github.com/graphmill/graphmill/nn"
	"github.com/graphmill/graphmill/sar"
	"github.com/graphmill/graphmill/tensor"
)

func runtimeCPUs() int { return runtime.NumCPU() }

// RankOptions is what one rank process runs.
type RankOptions struct {
	Dataset string
	Mode    sar.Mode
	Model   nn.Config
	Epochs  int
}

// RunRank is one rank of a benchmark run: it opens its shard, trains one
// warm-up epoch and then Epochs timed ones (Adam, no evaluation), and
// reports its peaks and traffic (the bytes and their analytic minimum of
// the last epoch).
func RunRank(ctx context.Context, comm dist.Comm, o RankOptions) (*RankReport, error) {
	t0 := time.Now()
	s, err := sar.Open(ctx, comm, o.Dataset, sar.ShardOptions{})
	if err != nil {
		return nil, err
	}
	e := sar.NewEngine(s, o.Mode)
	e.TrackHeap = true
	m, err := sar.NewModel(s, o.Model)
	if err != nil {
		return nil, err
	}
	opt, err := nn.NewOptimizer(nn.OptimConfig{Name: "adam", LR: 0.01})
	if err != nil {
		return nil, err
	}
	debug.FreeOSMemory()
	rep := &RankReport{Rank: s.Rank, Size: s.Size, InnerNodes: s.NumInner(), Edges: s.NumEdges(), Boundary: s.Boundary(), Fetched: s.Fetched(),
		BaseHeapBytes: sar.LiveHeap(), Threads: tensor.Threads(), SetupSeconds: time.Since(t0).Seconds()}
	if err := comm.Barrier(ctx); err != nil {
		return nil, err
	}
	var secs float64
	for ep := 0; ep <= o.Epochs; ep++ {
		ex0, red0 := e.BytesSent()
		t := time.Now()
		res, err := e.Grad(ctx, m, rng.Derive(o.Model.Seed, uint64(ep)))
		if err != nil {
			return nil, err
		}
		// The analytic minimum is the last step's (the engine knows it
		// only once a step has run): the same every step.
		rep.MinBytes = e.MinBytesPerStep(m)
		opt.Step(m.Params())
		if err := comm.Barrier(ctx); err != nil {
			return nil, err
		}
		if ep > 0 || o.Epochs == 0 {
			secs += time.Since(t).Seconds()
		}
		ex, red := e.BytesSent()
		rep.ExchangeBytes, rep.ReduceBytes = ex-ex0, red-red0
		rep.Loss = res.Loss
		rep.PeakFetchedBytes = max(rep.PeakFetchedBytes, res.PeakFetchedBytes)
	}
	rep.EpochSeconds = secs / float64(max(o.Epochs, 1))
	rep.PeakHeapBytes = e.PeakHeapBytes()
	rep.StepTensorBytes = rep.PeakHeapBytes - rep.BaseHeapBytes
	rep.PeakRSSBytes = memstat.ProcessPeak()
	return rep, nil
}

package distbench

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/graphmill/graphmill/internal/cli"
	"github.com/graphmill/graphmill/internal/units"
	"github.com/graphmill/graphmill/job"
	"github.com/graphmill/graphmill/sample"
)

// Command is 'graphmill bench distsample'.
func Command() *cobra.Command {
	var quick, asJSON bool
	var nodesS, edgesS, dir string
	var fan sample.Fanouts
	var dim, batch, batches int
	var seed uint64
	c := &cobra.Command{
		Use:   "distsample",
		Short: "Distributed sampling with 2 and 4 local ranks and the sampler service, against the single-process sampler",
		Long: `On a generated graph (2M nodes, 20M edges, 100 features; --quick: 200k nodes, 2M edges),
partitioned 2 and 4 ways (generated and partitioned once into --data-dir, then reused), measure
in one run:

  single      minibatches/s of the single-process sampler on the whole graph (sampling and feature
              rows, 2 goroutines preparing minibatches at once, as the loader and each rank do)
  ranks       minibatches/s per rank with 2 and 4 local ranks sampling at once, and the ratio to
              the single process; sampling requests per minibatch per rank (target: at most
              hops x (ranks-1)) and feature requests; remote feature bytes per minibatch without and
              with the remote-row cache holding 10% of the rows other ranks own (presampled on
              other batches), and the reduction
  service     minibatches/s a sampler service streams into one trainer over loopback gRPC, as a
              ratio to the local sampling pipeline's (same workers), and the stream's GB/s to the
              loopback TCP copy ceiling and to a bare gRPC stream of frames of the same size

Local ranks share this machine's cores, so per-rank rates fall as ranks are added. A graph already
in --data-dir is reused only if it has the nodes, edges, features and seed asked for (otherwise the
command stops with an error); the report gives the measured graph's sizes.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg := Config{Dim: dim, Seed: seed, Ranks: []int{2, 4}, BatchSize: batch, Batches: batches, Dir: dir}
			if quick {
				cfg.Nodes, cfg.Edges = 200_000, 2_000_000
				if !cmd.Flags().Changed("batches") {
					cfg.Batches = 10
				}
			} else {
				cfg.Nodes, cfg.Edges = 2_000_000, 20_000_000
			}
			if nodesS != "" {
				n, err := units.ParseCount(nodesS)
				if err != nil {
					return fmt.Errorf("--nodes: %w", err)
				}
				cfg.Nodes = int(n)
			}
			if edgesS != "" {
				n, err := units.ParseCount(edgesS)
				if err != nil {
					return fmt.Errorf("--edges: %w", err)
				}
				cfg.Edges = n
			}
			cfg.Fanouts = fan
			if cfg.BatchSize < 1 || cfg.Batches < 1 || cfg.Dim < 1 {
				return fmt.Errorf("--batch, --batches and --feature-dim must be positive")
			}
			cfg.Step = cli.Step
			rep, err := Run(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			if asJSON {
				return cli.WriteJSON(cmd.OutOrStdout(), rep)
			}
			printDistBench(cmd.OutOrStdout(), rep)
			return nil
		},
	}
	fl := c.Flags()
	fl.BoolVar(&quick, "quick", false, "a 200k-node graph and 10 minibatches per measurement (well under a minute once generated)")
	fl.BoolVar(&asJSON, "json", false, "print the figures as JSON")
	fl.StringVar(&nodesS, "nodes", "", "nodes of the generated graph (default 2M; --quick 200k)")
	fl.StringVar(&edgesS, "edges", "", "edges of the generated graph (default 20M; --quick 2M)")
	fl.IntVar(&dim, "feature-dim", 100, "features per node")
	job.FanoutsFlag(fl, &fan, []int{15, 10}, "sampling")
	fl.IntVar(&batch, "batch", 512, "seeds per minibatch (per rank)")
	fl.IntVar(&batches, "batches", 30, "minibatches per measurement")
	fl.Uint64Var(&seed, "seed", 1, "seed of the generated graph")
	fl.StringVar(&dir, "data-dir", "", "where the generated graph and its partitions are kept (default: <cache dir>/bench/distsample-...)")
	return c
}

func printDistBench(w io.Writer, r *Report) {
	fmt.Fprintf(w, "machine: %s\n", r.Machine)
	fmt.Fprintf(w, "graph: %s nodes, %s edges, %d features; fanouts %v, batch %d, %d minibatches per measurement\n",
		units.Count(int64(r.Nodes)), units.Count(r.Edges), r.Dim, r.Fanouts, r.BatchSize, r.Batches)
	fmt.Fprintf(w, "single process (%d goroutines): %.1f minibatches/s\n\n", Workers, r.SingleBatchesPerSec)
	fmt.Fprintf(w, "%5s %8s %12s %9s %14s %10s %14s %14s %9s %9s\n", "ranks", "cut", "mb/s/rank", "x single", "sample req/mb", "(target)", "remote B/mb", "cached B/mb", "saved", "hit rate")
	for _, p := range r.Ranks {
		fmt.Fprintf(w, "%5d %7.1f%% %12.1f %9.2f %14.2f %10d %14s %14s %8.1f%% %8.1f%%\n", p.Ranks, 100*p.EdgeCut, p.BatchesPerSecPerRank, p.RatioToSingle,
			p.SampleRequestsPerBatch, p.TargetSampleRequests, units.Bytes(int64(p.RemoteBytesPerBatch)), units.Bytes(int64(p.RemoteBytesPerBatchCached)), 100*p.CacheReduction, 100*p.CacheHitRate)
	}
	s := r.Service
	fmt.Fprintf(w, "\nsampler service -> one trainer over loopback: %.1f minibatches/s (%s each, %.2f GB/s)\n", s.BatchesPerSec, units.Bytes(int64(s.BytesPerBatch)), s.GBps)
	fmt.Fprintf(w, "  local sampling pipeline: %.1f minibatches/s -> ratio %.2f; loopback TCP ceiling %.2f GB/s -> ratio %.2f; bare gRPC stream of such frames %.2f GB/s -> ratio %.2f\n",
		s.LocalBatchesPerSec, s.RatioToLocal, s.LoopbackGBps, s.RatioToLoopback, s.GRPCGBps, s.RatioToGRPC)
}

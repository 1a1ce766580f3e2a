package samplebench

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/graphmill/graphmill/internal/cli"
	"github.com/graphmill/graphmill/internal/units"
	"github.com/graphmill/graphmill/sample"
)

// Command is 'graphmill bench sample'.
func Command() *cobra.Command {
	var (
		quick, asJSON                bool
		dataDir, cache, nodes, edges string
		fanouts, datasets            []string
		workers                      []int
		batch, batches, dim          int
		seed                         uint64
		ceilingTime, consumer        time.Duration
	)
	c := &cobra.Command{
		Use:   "sample",
		Short: "Measure neighbour sampling, feature gathering and the loader against memory ceilings",
		Long: `Measure, on a synthetic power-law graph (10M nodes, 200M edges, 128 features by
default; generated once into --data-dir and reused) and on Cora:

  sampling   sampled edges per second for each fanout list and worker count,
             and its split: ns an edge drawing and relabelling, hop by hop,
             beside the cost of one random read of the ceiling
  gather     feature rows (and float32 output bytes) per second from memory (float32,
             float16) and through the dataset's file mapping, with and without the
             hot cache
  cache      hit rate of the two cache admission policies under --feature-cache:
             "degree" (how often a node is a source in the CSC: quiver, PaGraph)
             and "presample" (how often one epoch of sampling reads it: GNNLab),
             on minibatches of another epoch
  loader     the fraction of time a consumer needing --consumer-time per batch
             is kept busy by the pipelined loader

In the same run it measures the machine's ceilings: independent random 4-byte
reads per second over an array as large as the graph's arrays but at least
4 MiB (so on a graph smaller than that, such as Cora's, over an array larger
than the graph: the ceiling is then a poor guide), sequential copy bandwidth,
and random row copies per second from an in-memory table of rows as wide as
the source's (float32 rows for float32 sources, rows of half the bytes for
float16 ones), and prints every speed as a ratio to its ceiling. Graph and
features are held in memory with transparent huge pages for both the
measurements and the ceilings. Byte sizes and rates are binary (KiB, MiB, GiB).

Rates are per CPU-second of each worker's thread (what the workers reach with
a core each; steady on a shared machine), with wall-clock rates alongside.
A sampling or gather measurement runs in rounds of a few batches, each followed
by its ceiling for as long ("beside" in the tables): the ratio compares the two
over the same stretch of time, so a machine whose speed drifts (virtual
machines' does, by up to 1.6x within seconds) does not put the ceiling in a
fast stretch and the work in a slow one. The worker counts take turns too,
round by round, so that "scaling" (edges/s over the fewest workers') is
paired in time; beside it, how the host itself scales random reads and
plain arithmetic over as many workers (virtual CPUs that share a core or a
power budget compute less than twice as fast with two busy). The ceilings
table shows the best of all measurements.`,
		Example: `  graphmill bench sample --quick
  graphmill bench sample --json > sample.json
  graphmill bench sample --fanouts 25,10 --workers 1,2,4 --feature-cache 0.1G --datasets cora`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg := Full()
			if quick {
				cfg = Quick()
			}
			f := cmd.Flags()
			if f.Changed("nodes") {
				n, err := units.ParseCount(nodes)
				if err != nil {
					return fmt.Errorf("--nodes: %w", err)
				}
				cfg.SynthNodes = int(n)
			}
			if f.Changed("edges") {
				m, err := units.ParseCount(edges)
				if err != nil {
					return fmt.Errorf("--edges: %w", err)
				}
				cfg.SynthEdges = m
			}
			if f.Changed("feature-dim") {
				cfg.SynthDim = dim
			}
			if f.Changed("datasets") {
				cfg.Datasets = datasets
			}
			if f.Changed("fanouts") {
				cfg.Fanouts = nil
				for _, s := range fanouts {
					fo, err := sample.ParseFanouts(s)
					if err != nil {
						return fmt.Errorf("--fanouts: %w", err)
					}
					cfg.Fanouts = append(cfg.Fanouts, fo)
				}
			}
			if f.Changed("workers") {
				cfg.Workers = workers
			}
			if f.Changed("batch-size") {
				cfg.BatchSize = batch
			}
			if f.Changed("batches") {
				cfg.Batches, cfg.SampleBatches = batches, 0
			}
			if f.Changed("ceiling-time") {
				cfg.CeilingTime = ceilingTime
			}
			if f.Changed("consumer-time") {
				cfg.ConsumerTime = consumer
			}
			if f.Changed("seed") {
				cfg.Seed = seed
			}
			if cache != "" {
				b, err := units.ParseBytes(cache)
				if err != nil {
					return fmt.Errorf("--feature-cache: %w", err)
				}
				cfg.CacheBytes = b
			}
			cfg.SynthDir = dataDir
			cfg.Step = cli.Step
			var (
				barMu   sync.Mutex // the sampling workers report at once
				bar     *cli.Bar
				barWhat string
			)
			cfg.Progress = func(what string, done, total int) {
				barMu.Lock()
				defer barMu.Unlock()
				if what != barWhat {
					if bar != nil {
						bar.Finish()
					}
					bar, barWhat = cli.NewBar(int64(total), what, "steps"), what
				}
				bar.Set(int64(done))
			}
			rep, err := Run(cmd.Context(), cfg)
			if bar != nil {
				bar.Finish()
			}
			if err != nil {
				return err
			}
			if asJSON {
				return cli.WriteJSON(cmd.OutOrStdout(), rep)
			}
			printSampleReport(cmd.OutOrStdout(), rep)
			return nil
		},
	}
	f := c.Flags()
	f.BoolVar(&quick, "quick", false, "small configuration: a 1M-node, 20M-edge graph and short measurements (under 30 s)")
	f.BoolVar(&asJSON, "json", false, "print the report as JSON (datasets[].ceilings, sampling, gather, cache, loader)")
	f.StringVar(&dataDir, "data-dir", "", "directory of the synthetic dataset, generated there if absent (default: <cache dir>/bench/synth-n<nodes>-e<edges>-f<dim>-s<seed>)")
	f.StringSliceVar(&datasets, "datasets", []string{"synthetic", "cora"}, `datasets to measure: "synthetic", "cora" or dataset directories, comma-separated`)
	f.StringVar(&nodes, "nodes", "10M", "nodes of the synthetic graph (1M with --quick)")
	f.StringVar(&edges, "edges", "200M", "edges of the synthetic graph (20M with --quick)")
	f.IntVar(&dim, "feature-dim", 128, "feature dimension of the synthetic graph")
	f.StringArrayVar(&fanouts, "fanouts", []string{"25,10", "15,10,5"}, "fanout list per hop from the seeds, e.g. 25,10 (-1 = all neighbours); repeat the flag for several")
	f.IntSliceVar(&workers, "workers", []int{1, 2}, "worker counts to measure, comma-separated")
	f.IntVar(&batch, "batch-size", 1024, "seeds per minibatch")
	f.IntVar(&batches, "batches", 100, "minibatches a worker per measurement (20 with --quick, 40 for its sampling measurements)")
	f.StringVar(&cache, "feature-cache", "", `hot feature cache budget, e.g. 2GiB or 0.1G (default: 10% of the features)`)
	f.DurationVar(&ceilingTime, "ceiling-time", 300*time.Millisecond, "duration of each ceiling measurement (100ms with --quick)")
	f.DurationVar(&consumer, "consumer-time", 5*time.Millisecond, "simulated training step per batch in the loader measurement")
	f.Uint64Var(&seed, "seed", 1, "random seed (also names the synthetic dataset)")
	return c
}

func printSampleReport(w io.Writer, rep *Report) {
	fmt.Fprintf(w, "machine: %s\n", rep.Machine)
	tw := tabwriter.NewWriter(w, 2, 0, 2, ' ', tabwriter.AlignRight)
	defer tw.Flush()
	mps := func(x float64) string { return units.Count(x) + "/s" }
	for _, d := range rep.Datasets {
		fmt.Fprintf(tw, "\n%s: %s nodes, %s edges, %d features (graph %s, features %s), batch %d, GOMAXPROCS %d\n",
			d.Name, units.Count(d.Nodes), units.Count(d.Edges), d.FeatureDim, units.Bytes(d.GraphBytes), units.Bytes(d.FeatureBytes), rep.BatchSize, rep.GOMAXPROCS)
		for _, n := range d.Notes {
			fmt.Fprintf(tw, "  note: %s\n", n)
		}
		fmt.Fprintf(tw, "random reads over an array of %s (the graph's %s, at least 4 MiB); random rows of %d float32 values (%s) and, beside float16 gathers, of %d 2-byte values (%s)\n",
			units.Bytes(d.ReadArrayBytes), units.Bytes(d.GraphBytes), d.FeatureDim, units.Bytes(4*int64(d.FeatureDim)), d.FeatureDim, units.Bytes(2*int64(d.FeatureDim)))
		fmt.Fprintln(tw, "\nceilings\tworkers\trandom 4B reads\t(wall)\tseq copy\tfloat32 rows\t(wall)\t2-byte rows\t(wall)\t")
		for _, c := range d.Ceilings {
			fmt.Fprintf(tw, "\t%d\t%s\t%s\t%s/s\t%s\t%s\t%s\t%s\t\n", c.Workers, mps(c.RandomReads), mps(c.RandomReadsWall), units.Bytes(int64(c.SeqCopy)), mps(c.RandomRows), mps(c.RandomRowsWall),
				optRate(c.RandomHalfRows), optRate(c.RandomHalfRowsWall))
		}
		if len(d.LoadLatency) > 0 {
			fmt.Fprint(tw, "\nload latency by data size:")
			for _, l := range d.LoadLatency {
				fmt.Fprintf(tw, " %s %.0f ns", units.Bytes(l.Bytes), l.Ns)
			}
			if sample.AutoDense(d.Nodes) {
				fmt.Fprintf(tw, " (relabelling array %s)", units.Bytes(4*int64(d.Nodes)))
			}
			fmt.Fprintln(tw)
		}
		fmt.Fprintln(tw, "\nsampling\tfanouts\trelabel\tworkers\tedges/batch\tedges/s\t(wall)\tms/batch\treads/s beside\tx random reads\tscaling\t(host: reads, arithmetic)\t")
		for _, s := range d.Sampling {
			scaling, host := "", ""
			if s.Scaling > 0 {
				scaling = fmt.Sprintf("%.2fx", s.Scaling)
				host = fmt.Sprintf("%.2fx, %.2fx", s.ReadScaling, s.ArithmeticScaling)
			}
			fmt.Fprintf(tw, "\t%s\t%s\t%d\t%s\t%s\t%s\t%.2f\t%s\t%.2f\t%s\t%s\t\n", s.Fanouts, s.Relabel, s.Workers, units.Count(s.EdgesPerBatch), mps(s.EdgesPerSec), mps(s.EdgesPerSecWall), s.MsPerBatch, mps(s.Ceiling), s.Ratio, scaling, host)
		}
		if len(d.Sampling) > 0 {
			fmt.Fprintln(tw, "\nsampling split (ns an edge)\tfanouts\trelabel\tworkers\tdraw\trelabel\ta random read beside\tby hop (edges a batch: draw + relabel)\t")
			for _, s := range d.Sampling {
				var hops []string
				for _, h := range s.Hops {
					hops = append(hops, fmt.Sprintf("%s: %.1f + %.1f", units.Count(h.EdgesPerBatch), h.Draw, h.Relabel))
				}
				fmt.Fprintf(tw, "\t%s\t%s\t%d\t%.1f\t%.1f\t%.1f\t%s\t\n", s.Fanouts, s.Relabel, s.Workers, s.DrawNs, s.RelabelNs, 1e9*float64(s.Workers)/s.Ceiling, strings.Join(hops, ", "))
			}
		}
		if len(d.Gather) > 0 {
			fmt.Fprintln(tw, "\ngather\tsource\tids\tworkers\trows/s\t(wall)\toutput/s\trow\tsuch rows/s beside\tx random rows\thit rate\t")
			for _, g := range d.Gather {
				hr := ""
				if strings.Contains(g.Source, "cache") {
					hr = fmt.Sprintf("%.1f%%", 100*g.HitRate)
				}
				fmt.Fprintf(tw, "\t%s\t%s\t%d\t%s\t%s\t%s/s\t%s\t%s\t%.2f\t%s\t\n", g.Source, g.IDs, g.Workers, mps(g.RowsPerSec), mps(g.RowsPerSecWall), units.Bytes(int64(g.BytesPerSec)),
					units.Bytes(int64(g.RowBytes)), mps(g.Ceiling), g.Ratio, hr)
			}
		}
		if len(d.Cache) > 0 {
			fmt.Fprintln(tw, "\ncache\tpolicy\tbudget\trows cached\thit rate\t")
			for _, c := range d.Cache {
				fmt.Fprintf(tw, "\t%s\t%s\t%s (%.1f%%)\t%.1f%%\t\n", c.Policy, units.Bytes(c.BudgetBytes), units.Count(c.Rows), 100*c.RowFraction, 100*c.HitRate)
			}
		}
		if len(d.Loader) > 0 {
			fmt.Fprintln(tw, "\nloader\tfanouts\tfeatures\tworkers\tconsumer\tbatches\tsample ms/batch\tgather ms/batch\tconsumer busy\tbottleneck\t")
			for _, l := range d.Loader {
				fmt.Fprintf(tw, "\t%s\t%v\t%d\t%.1f ms\t%d\t%.2f\t%.2f\t%.1f%%\t%s\t\n", l.Fanouts, l.Features, l.SampleWorkers, l.ConsumerMs, l.Batches, l.SampleMsPerBatch, l.GatherMsPerBatch, 100*l.Busy, l.Bottleneck)
			}
		}
	}
}

// optRate formats a rate that may not have been measured ("-").
func optRate(x float64) string {
	if x <= 0 {
		return "-"
	}
	return units.Count(x) + "/s"
}

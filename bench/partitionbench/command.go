package partitionbench

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/graphmill/graphmill/dataset/builtin"
	"github.com/graphmill/graphmill/internal/cli"
	"github.com/graphmill/graphmill/internal/shareddata"
)

// Command is 'graphmill bench partition'.
func Command() *cobra.Command {
	var (
		cfg     Config
		parts   string
		asJSON  bool
		noMetis bool
	)
	c := &cobra.Command{
		Use:   "partition",
		Short: "Compare the partitioner with METIS (gpmetis): edge cut, balance, time, memory",
		Long: `Partition the shared graphs (wave.graph.bz2 and email-Enron.txt.gz from
DATA/structure-only, Cora, CiteSeer from DATA/planetoid) and a synthetic graph of
5M nodes (generated once into the cache directory) into K = 4, 16, 64 parts,
and, when gpmetis is on PATH (apt-get install metis), run "gpmetis -ufactor=30"
on the same graph in the same run. cut_ratio = ours/gpmetis edge cut.

time_ratio = our partitioning wall time / gpmetis's own reported partitioning
time. Neither includes reading the graph or writing the result, and both start
from a cold heap (gpmetis is a new process; the Go heap is returned to the OS
before each of our runs). METIS's timer is the CPU time of its single-threaded
process: its wall time on an idle core, less on a busy machine, so the ratio
errs in gpmetis's favour there. cpu_ratio = our CPU time (both cores) / the
same reported time. time_ratio_wall is end to end: our time to read the METIS
file gpmetis reads, build the graph and partition it / the wall time of the
whole gpmetis process. Runs alternate between the two partitioners and the
fastest of each is kept (--repeat). Before every run of either, every core is
kept busy for --warm, so that neither starts on a virtual CPU waking from idle
(on the VMs measured, that made the next tens of milliseconds 15-25 % slower).
--quick skips the synthetic graph.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if cfg.DataDir == "" {
				cfg.DataDir = shareddata.Dir()
			}
			if cfg.CacheDir == "" {
				cfg.CacheDir = filepath.Join(builtin.CacheDir(), "bench")
			}
			for _, f := range strings.Split(parts, ",") {
				k, err := strconv.Atoi(strings.TrimSpace(f))
				if err != nil || k <= 0 {
					return fmt.Errorf("--parts: %q is not a positive integer", f)
				}
				cfg.Parts = append(cfg.Parts, k)
			}
			cfg.NoGpmetis = noMetis
			cfg.Log = func(format string, a ...any) { fmt.Fprintf(cli.Stderr, format+"\n", a...) }
			rep, err := Measure(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			if asJSON {
				return cli.WriteJSON(cmd.OutOrStdout(), rep)
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "machine: %s\n", rep.Machine)
			for _, r := range rep.Records {
				fmt.Fprintln(w, r.Line())
			}
			for _, s := range rep.Skipped {
				fmt.Fprintln(w, "skipped:", s)
			}
			if noMetis {
				fmt.Fprintln(w, "gpmetis comparison skipped (--no-gpmetis)")
			} else if !rep.Gpmetis {
				fmt.Fprintln(w, "gpmetis not on PATH: no comparison (apt-get install metis)")
			} else {
				fmt.Fprintf(w, "max cut ratio %s, max time ratio %s; total %.2fs ours vs %.2fs gpmetis\n", na(rep.MaxCutRatio, "%.3f"), na(rep.MaxTimeRatio, "%.2f"), rep.GraphmillTotal, rep.GpmetisTotal)
				if rep.NoCutRatio > 0 || rep.NoTimeRatio > 0 {
					fmt.Fprintf(w, "left out of the maxima (n/a): %d records without a cut ratio (gpmetis cut 0, ours above), %d without a time ratio (gpmetis reported 0.000 s)\n", rep.NoCutRatio, rep.NoTimeRatio)
				}
				fmt.Fprintln(w, "times:", rep.TimingNote)
			}
			return nil
		},
	}
	f := c.Flags()
	f.BoolVar(&asJSON, "json", false, "print the report as JSON")
	f.BoolVar(&cfg.Quick, "quick", false, "shared graphs only (under 30 seconds)")
	f.StringVar(&cfg.DataDir, "data", "", "shared data directory (default $GRAPHMILL_DATA, else the first shared/data above the working directory)")
	f.StringVar(&cfg.CacheDir, "cache", "", "where the synthetic graph is generated once (default <graphmill cache>/bench)")
	f.StringVar(&parts, "parts", "4,16,64", "comma-separated part counts")
	f.Float64Var(&cfg.Imbalance, "imbalance", 1.03, "balance tolerance (gpmetis -ufactor = 1000*(imbalance-1))")
	f.Uint64Var(&cfg.Seed, "seed", 1, "seed of both partitioners")
	f.IntVar(&cfg.VCycles, "vcycles", 0, "our rounds of V-cycles after the first pass (0: two on graphs of up to 32,768 edges, none above; -1: none)")
	f.IntVar(&cfg.SynthNodes, "synth-nodes", 5_000_000, "nodes of the synthetic graph")
	f.Int64Var(&cfg.SynthEdges, "synth-edges", 25_000_000, "directed edges of the synthetic graph")
	f.BoolVar(&noMetis, "no-gpmetis", false, "do not run gpmetis even if installed")
	f.StringSliceVar(&cfg.Graphs, "graphs", nil, "only these graphs (name prefixes: wave, email-Enron, cora, citeseer, synthetic)")
	f.DurationVar(&cfg.Warm, "warm", 0, "how long every core is kept busy before each run of either partitioner (0: 100ms; negative: none)")
	cli.CountVar(f, &cfg.Repeat, "repeat", 0, "runs per partitioner, alternating, fastest kept (0: 10 below 2M edges, 3 up to 5M, else 1)")
	return c
}

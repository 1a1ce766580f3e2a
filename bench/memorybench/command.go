package memorybench

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/graphmill/graphmill/dataset/builtin"
	"github.com/graphmill/graphmill/internal/cli"
	"github.com/graphmill/graphmill/internal/units"
)

// Command is 'graphmill bench memory'.
func Command() *cobra.Command {
	var (
		quick, asJSON bool
		dir, bound    string
		nodes, modes  string
	)
	c := &cobra.Command{
		Use:   "memory",
		Short: "Measure peak memory of full-graph, sampled, GAS and memory-bounded training",
		Long: `Train a 2-layer GCN (hidden 128) for one epoch on synthetic power-law graphs of 1M and 4M nodes
(10 edges per node, 128 features; --quick: 50k and 200k, under 30 s) in five ways: full-graph, full-graph under
--max-memory, sampled (fanouts 25,10, batch 1024), GNNAutoScale (parts of 2,000 nodes, 10 per batch, so a
batch does not grow with the graph) and GNNAutoScale under --max-memory. Each run is a child process, so
its peaks are its own. For each run it reports the peak resident set and Go heap, the dataset and the
history tables (separately), the rest (resident set minus both), and for bounded runs whether the heap
that training added stayed within the bound. Targets, each judged in the report (bound_held,
gas_rest_growth_met; null and "not measured" when no run measured it): bounded runs stay within the bound
(a failed bounded run fails it), and GAS's rest grows less than 1.3x when the graph grows 4x (judged
when the unbounded GAS runs span a graph at least 4x larger). A configuration that fails or exceeds its
bound makes the command exit non-zero; a missed growth target does not. The datasets are generated once
into --dir and reused.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o := Full
			if quick {
				o = Quick
			}
			if cmd.Flags().Changed("nodes") {
				o.Nodes = nil
				for _, s := range strings.Split(nodes, ",") {
					n, err := units.ParseCount(strings.TrimSpace(s))
					if err != nil || n < 100 {
						return fmt.Errorf("--nodes %q: want node counts such as 1M,4M", nodes)
					}
					o.Nodes = append(o.Nodes, int(n))
				}
			}
			if bound != "" {
				b, err := cli.ParseMaxMemory(bound)
				if err != nil {
					return err
				}
				o.Bound = b
			}
			if modes != "" {
				o.Modes = strings.Split(modes, ",")
				for _, m := range o.Modes {
					if !slices.Contains([]string{"full", "bounded", "sampled", "gas", "gas-bounded"}, m) {
						return fmt.Errorf("--modes: unknown configuration %q (want full, bounded, sampled, gas or gas-bounded)", m)
					}
				}
			}
			o.Dir = dir
			if o.Dir == "" {
				o.Dir = builtin.CacheDir()
			}
			exe, err := os.Executable()
			if err != nil {
				return err
			}
			o.Exe = exe
			o.Progress = func(s string) { fmt.Fprintln(cli.Stderr, s) }
			rep, err := RunAll(cmd.Context(), o)
			if err != nil {
				return err
			}
			// A configuration that failed or broke its bound fails the
			// command (after the report), so scripts and CI see it.
			var bad []string
			for _, r := range rep.Runs {
				if r.Error != "" || r.UnderBound != nil && !*r.UnderBound {
					bad = append(bad, fmt.Sprintf("%s on %s nodes", r.Mode, units.Count(r.Nodes)))
				}
			}
			var status error
			if len(bad) > 0 {
				status = fmt.Errorf("%d of %d configurations failed or exceeded their bound: %s", len(bad), len(rep.Runs), strings.Join(bad, ", "))
			}
			if asJSON {
				if err := cli.WriteJSON(cmd.OutOrStdout(), rep); err != nil {
					return err
				}
				return status
			}
			fmt.Fprintf(cmd.OutOrStdout(), "machine: %s\n", rep.Machine)
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', tabwriter.AlignRight)
			fmt.Fprintln(w, "nodes\tedges\tmode\tpeak RSS\tpeak heap\tdataset\thistories\trest\ttraining heap\tbound\tmicro-batches\tepoch\t")
			var failed []string
			for _, r := range rep.Runs {
				if r.Error != "" {
					failed = append(failed, fmt.Sprintf("%s on %s nodes failed: %s", r.Mode, units.Count(r.Nodes), r.Error))
					continue
				}
				held := ""
				if r.UnderBound != nil {
					held = units.Bytes(r.Bound) + map[bool]string{true: " held", false: " EXCEEDED"}[*r.UnderBound]
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d/%d\t%s\t\n", units.Count(r.Nodes), units.Count(r.Edges), r.Mode,
					units.Bytes(r.PeakRSSBytes), units.Bytes(r.PeakHeapBytes), units.Bytes(r.DatasetBytes), units.Bytes(r.HistoryBytes),
					units.Bytes(r.RestBytes), units.Bytes(r.StepPeakBytes), held, r.MicroBatches, r.Batches, units.Duration(cli.Seconds(r.EpochSeconds)))
			}
			w.Flush()
			for _, f := range failed {
				fmt.Fprintln(cmd.OutOrStdout(), f)
			}
			printChecks(cmd.OutOrStdout(), rep)
			return status
		},
	}
	c.Flags().BoolVar(&quick, "quick", false, "graphs of 50k and 200k nodes, bound 256MiB (under 30 s)")
	c.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	c.Flags().StringVar(&dir, "dir", "", "where to generate (and reuse) the synthetic datasets (default: the cache directory)")
	c.Flags().StringVar(&bound, "max-memory", "", "bound of the bounded runs (default 512MiB; quick 256MiB)")
	c.Flags().StringVar(&nodes, "nodes", "", "graph sizes, e.g. 1M,4M")
	c.Flags().StringVar(&modes, "modes", "", "run only these configurations: full, bounded, sampled, gas, gas-bounded (comma separated)")
	return c
}

// printChecks prints the report's targets, each with its verdict: "met",
// "MISSED", or "not measured" / "not judged" where nothing measured it.
func printChecks(w io.Writer, rep *Report) {
	switch {
	case rep.GASGrowth == nil:
		fmt.Fprintf(w, "GAS rest growth: not measured (needs two successful gas runs) (target < %.1fx for a %dx larger graph)\n", GASGrowthTarget, GASGrowthNodes)
	case rep.GASGrowthMet == nil:
		fmt.Fprintf(w, "GAS rest grows %.2fx for a %.2fx larger graph: not judged (target < %.1fx for a graph at least %dx larger)\n", *rep.GASGrowth, *rep.NodesGrowth, GASGrowthTarget, GASGrowthNodes)
	default:
		fmt.Fprintf(w, "GAS rest grows %.2fx for a %.2fx larger graph (target < %.1fx): %s\n", *rep.GASGrowth, *rep.NodesGrowth, GASGrowthTarget, verdict(*rep.GASGrowthMet))
	}
	switch {
	case rep.BoundHeld == nil:
		fmt.Fprintln(w, "bounds held: not measured (no bounded run)")
	case *rep.BoundHeld:
		fmt.Fprintf(w, "bounds held: met (%d bounded runs)\n", rep.BoundedRuns)
	default:
		fmt.Fprintf(w, "bounds held: MISSED (of %d bounded runs, one or more failed or exceeded the bound)\n", rep.BoundedRuns)
	}
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "MISSED"
}

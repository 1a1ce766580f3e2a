package sarbench

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/graphmill/graphmill/dataset/builtin"
	"github.com/graphmill/graphmill/internal/cli"
	"github.com/graphmill/graphmill/internal/units"
	"github.com/graphmill/graphmill/job"
	"github.com/graphmill/graphmill/nn"
	"github.com/graphmill/graphmill/sar"
	"github.com/graphmill/graphmill/tensor"
)

// Commands are 'graphmill bench sar' and its hidden per-rank command,
// sar-rank, which the benchmark starts once per rank.
func Commands() []*cobra.Command {
	var (
		quick, asJSON         bool
		dir, bandwidth, nodes string
		ranks, modes          string
		cores, hidden, epochs int
	)
	c := &cobra.Command{
		Use:   "sar",
		Short: "Measure distributed full-graph training (sar, sa, one-shot): memory and bytes per rank",
		Long: `Train a 3-layer GraphSAGE (hidden 128, one warm-up and one timed epoch) full-graph on a synthetic
power-law graph of 2M nodes (10 edges per node, 100 features), partitioned into 8 parts, in every
SAR mode on 1, 2, 4 and 8 ranks (--quick: 500k nodes, hidden 64, 1 and 2 ranks, one epoch, under
3 minutes). Every rank is a child process of this machine, so its peaks are its own.

For every run it reports the worst rank's peak resident set (VmHWM) and step tensors (Go heap at
the step's peak minus before it), their ratio N x per-rank peak / one-rank peak (the 1/N law: target
<= 1.3 in sar mode, reported at the JSON's top level as memory_ratio), the bytes every rank sends per
epoch against the analytic minimum (boundary rows x width x layers x passes: target <= 1.1), the
measured epoch time (N ranks share this machine's cores, so it cannot show speedup), and a modelled
epoch time on N machines of --model-cores cores linked at --model-bandwidth: the one-rank epoch's
core-seconds divided over N x cores, plus the worst rank's bytes over the link (no overlap of
communication and compute; see README). The datasets are generated and partitioned once into --dir.

The full run's one-rank process peaks at about 16 GiB (with GOGC=50 in the environment, which
the ranks inherit; more without); --nodes, --hidden and --ranks size it down.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o := Full
			if quick {
				o = Quick
			}
			fl := cmd.Flags()
			if fl.Changed("nodes") {
				n, err := units.ParseCount(nodes)
				if err != nil || n < 1000 {
					return fmt.Errorf("--nodes %q: want a node count such as 2M", nodes)
				}
				o.Nodes = int(n)
			}
			if fl.Changed("ranks") {
				o.Ranks = nil
				for _, s := range strings.Split(ranks, ",") {
					n, err := strconv.Atoi(strings.TrimSpace(s))
					if err != nil || n < 1 || n > 64 {
						return fmt.Errorf("--ranks %q: want rank counts such as 1,2,4", ranks)
					}
					o.Ranks = append(o.Ranks, n)
				}
				if o.Ranks[0] != 1 {
					o.Ranks = append([]int{1}, o.Ranks...) // the one-rank baseline of the ratios
				}
			}
			if fl.Changed("modes") {
				o.Modes = nil
				for _, s := range strings.Split(modes, ",") {
					m, err := sar.ParseMode(strings.TrimSpace(s))
					if err != nil {
						return err
					}
					o.Modes = append(o.Modes, m)
				}
			}
			if fl.Changed("hidden") {
				o.Hidden = hidden
			}
			if fl.Changed("epochs") {
				if epochs < 0 {
					return fmt.Errorf("--epochs must be >= 0, got %d", epochs)
				}
				o.Epochs = epochs
			}
			bw, err := parseBandwidth(bandwidth)
			if err != nil {
				return err
			}
			if cores < 1 {
				return fmt.Errorf("--model-cores must be >= 1, got %d", cores)
			}
			o.ModelBandwidth, o.ModelCores = bw, cores
			o.Dir = dir
			if o.Dir == "" {
				o.Dir = builtin.CacheDir()
			}
			if o.Exe, err = os.Executable(); err != nil {
				return err
			}
			o.Progress = func(s string) { fmt.Fprintln(cli.Stderr, s) }
			rep, runErr := RunAll(cmd.Context(), o)
			if rep == nil {
				return runErr
			}
			if asJSON {
				if err := cli.WriteJSON(cmd.OutOrStdout(), rep); err != nil {
					return err
				}
				return runErr
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "machine: %s\n", rep.Machine)
			fmt.Fprintf(out, "%s nodes, %s edges, %d features; %s hidden %d, %d layers; %d parts (edge cut %.2f%%)\n",
				units.Count(rep.Nodes), units.Count(rep.Edges), o.FeatureDim, o.Model, o.Hidden, o.Layers, rep.Parts, 100*rep.CutFraction)
			w := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
			fmt.Fprintln(w, "mode\tranks\tpeak RSS/rank\tN x peak / 1-rank\tstep tensors/rank\tN x / 1-rank\tsent/epoch/rank\tminimum\tratio\tepoch (measured)\tepoch (modelled)\t")
			for _, r := range rep.Runs {
				if r.Error != "" {
					fmt.Fprintf(w, "%s\t%d\tfailed: %s\t\t\t\t\t\t\t\t\t\n", r.Mode, r.Ranks, r.Error)
					continue
				}
				fmt.Fprintf(w, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", r.Mode, r.Ranks, units.Bytes(r.PeakRSSBytes), cli.Measured(r.RSSRatio, "%.2f"),
					units.Bytes(r.StepTensorBytes), cli.Measured(r.TensorRatio, "%.2f"), units.Bytes(r.BytesSent), minString(r.MinBytes), cli.Measured(r.BytesRatio, "%.2f"),
					units.Duration(cli.Seconds(r.EpochSeconds)), units.Duration(cli.Seconds(r.ModelledSeconds)))
			}
			w.Flush()
			// A ratio no run measured (no sar run, no run on several
			// ranks, or a failed one) is "-", never 0.00 under its target.
			fmt.Fprintf(out, "memory ratio (sar, worst N x per-rank peak RSS / one rank) %s (target <= 1.3); step tensors %s; bytes / analytic minimum %s (target <= 1.1)\n",
				cli.Measured(rep.MemoryRatio, "%.2f"), cli.Measured(rep.TensorRatio, "%.2f"), cli.Measured(rep.BytesRatio, "%.2f"))
			fmt.Fprintf(out, "model: %.1f core-seconds per epoch, machines of %d cores, links of %s/s; total %s\n", rep.CoreSeconds, o.ModelCores, bitsString(o.ModelBandwidth), units.Duration(cli.Seconds(rep.Seconds)))
			return runErr
		},
	}
	f := c.Flags()
	f.BoolVar(&quick, "quick", false, "500k nodes, hidden 64, 1 and 2 ranks (under 3 minutes)")
	f.BoolVar(&asJSON, "json", false, "print the report as JSON")
	f.StringVar(&dir, "dir", "", "where to generate and partition (and reuse) the synthetic dataset (default: the cache directory)")
	f.StringVar(&bandwidth, "model-bandwidth", "25Gbit", "link bandwidth of the modelled cluster, e.g. 25Gbit, 100Gbit, 10Gbit")
	f.IntVar(&cores, "model-cores", 64, "cores per machine of the modelled cluster")
	f.StringVar(&nodes, "nodes", "", "graph size, e.g. 2M")
	f.StringVar(&ranks, "ranks", "", "rank counts, e.g. 1,2,4,8 (1 is always run: the baseline)")
	f.StringVar(&modes, "modes", "", "modes to run: sar, sa, one-shot (comma separated)")
	cli.CountVar(f, &hidden, "hidden", 0, "hidden width (default 128; quick 64)")
	f.IntVar(&epochs, "epochs", 0, "timed epochs after the warm-up (default 1; quick 0: the warm-up alone, timed)")

	// sar-rank is one rank of 'bench sar' (a child process).
	var (
		rdataset, rmode, rmodel string
		rhidden, rlayers, rep   int
		threads                 int
		df                      job.DistFlags
	)
	rc := &cobra.Command{
		Use:    "sar-rank",
		Short:  "One rank of 'graphmill bench sar' (internal)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			mode, err := sar.ParseMode(rmode)
			if err != nil {
				return err
			}
			kind, err := nn.ParseKind(rmodel)
			if err != nil {
				return err
			}
			if threads > 0 {
				tensor.SetThreads(threads)
			}
			comm, err := df.JoinOrAlone(cmd.Context())
			if err != nil {
				return err
			}
			defer comm.Close()
			r, err := RunRank(cmd.Context(), comm, RankOptions{Dataset: rdataset, Mode: mode, Epochs: rep,
				Model: nn.Config{Kind: kind, Hidden: rhidden, Layers: rlayers, Dropout: 0.5, Heads: 4, OutHeads: 1, Seed: 1}})
			if err != nil {
				return err
			}
			return cli.WriteJSON(cmd.OutOrStdout(), r)
		},
	}
	rf := rc.Flags()
	rf.StringVar(&rdataset, "dataset", "", "partitioned dataset")
	rf.StringVar(&rmode, "mode", "sar", "sar, sa or one-shot")
	rf.StringVar(&rmodel, "model", "sage", "model")
	cli.PositiveVar(rf, &rhidden, "hidden", 128, "hidden width")
	rf.IntVar(&rlayers, "layers", 3, "layers")
	rf.IntVar(&rep, "epochs", 1, "timed epochs after the warm-up")
	cli.CountVar(rf, &threads, "threads", 0, "kernel goroutines (0 = all cores)")
	df.Add(rf)
	return []*cobra.Command{c, rc}
}

// parseBandwidth parses a link bandwidth in bits per second: "25Gbit",
// "100Gbit/s", "400Mbit", "10G" or a plain number; a capital B is bytes
// ("3.125GB/s" is 25 Gbit/s; "25GB" was read as 25 Gbit).
func parseBandwidth(s string) (float64, error) {
	perByte := 1.0
	if strings.HasSuffix(strings.TrimSuffix(strings.TrimSuffix(strings.TrimSpace(s), "/s"), "ps"), "B") {
		perByte = 8
	}
	t := strings.TrimSuffix(strings.TrimSuffix(strings.ToLower(strings.TrimSpace(s)), "/s"), "ps")
	t = strings.TrimSuffix(strings.TrimSuffix(t, "bit"), "b")
	mult := 1.0
	switch {
	case strings.HasSuffix(t, "k"):
		mult, t = 1e3, t[:len(t)-1]
	case strings.HasSuffix(t, "m"):
		mult, t = 1e6, t[:len(t)-1]
	case strings.HasSuffix(t, "g"):
		mult, t = 1e9, t[:len(t)-1]
	case strings.HasSuffix(t, "t"):
		mult, t = 1e12, t[:len(t)-1]
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || !(v > 0) {
		return 0, fmt.Errorf("--model-bandwidth %q: want a bandwidth such as 25Gbit", s)
	}
	return v * mult * perByte, nil
}

// minString formats an analytic minimum of bytes, or "-" where there is
// none (a run on one rank).
func minString(b int64) string {
	if b <= 0 {
		return "-"
	}
	return units.Bytes(b)
}

// bitsString formats bits per second.
func bitsString(b float64) string {
	switch {
	case b >= 1e12:
		return fmt.Sprintf("%gTbit", b/1e12)
	case b >= 1e9:
		return fmt.Sprintf("%gGbit", b/1e9)
	case b >= 1e6:
		return fmt.Sprintf("%gMbit", b/1e6)
	}
	return fmt.Sprintf("%gbit", b)
}

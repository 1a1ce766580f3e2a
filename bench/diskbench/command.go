package diskbench

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/graphmill/graphmill/dataset/builtin"
	"github.com/graphmill/graphmill/internal/cli"
	"github.com/graphmill/graphmill/internal/units"
)

// Command is 'graphmill bench disk'.
func Command() *cobra.Command {
	var (
		quick, full, graph, asJSON bool
		dir                        string
	)
	c := &cobra.Command{
		Use:   "disk",
		Short: "Measure training on features larger than the memory given, against the disk's ceilings",
		Long: `Measure training from disk. First the device's ceilings, in the same run, on the features file with O_DIRECT:
random 4 KiB reads at queue depth 1 and 64, and sequential reads. Then one epoch of GraphSAGE ([25,10], batch 1024)
on a generated dataset (1.5M nodes and 256 features, 1.5 GB of features, with --quick; 3M nodes otherwise), once
with the features in memory (the reference) and once from disk (--features-in-memory no) inside a memory cgroup of a
quarter of the features' size (as root; without a limit otherwise), after dropping the dataset's pages from the
page cache; then from disk again on a packed copy (graphmill data pack, kept beside the dataset). With --full the dataset's features are 1.3x this machine's memory and no cgroup is used.

Reported: io_efficiency (pages/s the gathers read while waiting on them / the QD64 random-read ceiling),
read_amplification (the bytes the kernel read for the training process / the bytes its readers asked for: each
batch's distinct pages of missed rows, the cache fill and the graph's reads), fill_efficiency
(the cache's sequential fill / the sequential ceiling), vs_in_memory (seeds/s from disk / in memory),
time_to_first_batch_seconds (and its bar: 1.5x the features' sequential read time + 2 s), the bytes read as
training reports them and as the kernel counts them, whether the losses equal the in-memory run's, and the hit rate
and bytes read of three cache policies at the same budget replayed on one sampled epoch: the static degree order,
presampling (GNNLab; training from disk ranks its cache so by default) and Ginex's superbatch Belady (10
batches ahead; training from disk plans so by default, --superbatch). Last, the layouts of
'graphmill data pack' replayed on that epoch under the superbatch policy: the bytes read when the rows are stored
in each layout's order (page-aligned) against the original file.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o := Standard
			if quick {
				o = Quick
			}
			o.Full = full
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
			if graph {
				rep, err := RunGraph(cmd.Context(), o)
				if err != nil {
					return err
				}
				if asJSON {
					return cli.WriteJSON(cmd.OutOrStdout(), rep)
				}
				w := cmd.OutOrStdout()
				fmt.Fprintf(w, "machine: %s\n", rep.Machine)
				fmt.Fprintf(w, "graph of %s nodes and %s edges (%s), memory cgroup of %s, features in memory:\n",
					units.Count(rep.Nodes), units.Count(rep.Edges), units.Bytes(rep.GraphBytes), units.Bytes(rep.LimitBytes))
				for _, r := range rep.Runs {
					how := map[string]string{"yes": "advice + reads in flight", "advice": "random-access advice", "no": "default readahead"}[r.Mode]
					how = fmt.Sprintf("%-24s", how)
					if r.TimedOut {
						fmt.Fprintf(w, "  %s: stopped after %s without finishing the epoch, %s read\n", how, units.Duration(cli.Seconds(r.Seconds)), units.Bytes(r.ReadBytes))
					} else {
						fmt.Fprintf(w, "  %s: epoch %s, %s read\n", how, units.Duration(cli.Seconds(r.EpochSeconds)), units.Bytes(r.ReadBytes))
					}
				}
				return nil
			}
			rep, err := Run(cmd.Context(), o)
			if err != nil {
				return err
			}
			if asJSON {
				return cli.WriteJSON(cmd.OutOrStdout(), rep)
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "machine: %s\n", rep.Machine)
			c := rep.Ceilings
			fmt.Fprintf(w, "device (%s, O_DIRECT): random 4 KiB %s reads/s at depth 1, %s at depth 64; sequential %s/s\n",
				c.Backend, units.Count(c.RandomQD1), units.Count(c.RandomQD64), units.Bytes(int64(c.SequentialBytes)))
			fmt.Fprintf(w, "features %s, memory limit %s (%s); cache %s, hit rate %.1f%%\n", units.Bytes(rep.FeatureBytes), units.Bytes(rep.LimitBytes), rep.Limit,
				units.Bytes(rep.CacheBytes), 100*rep.HitRate)
			ra := "- (not measured)"
			if rep.ReadAmplification > 0 {
				ra = fmt.Sprintf("%.2f", rep.ReadAmplification)
			}
			fmt.Fprintf(w, "io_efficiency %.3f (bar >= 0.6)   read_amplification %s (bar <= 1.3)   fill_efficiency %.3f (bar >= 0.7)\n",
				rep.IOEfficiency, ra, rep.FillEfficiency)
			fmt.Fprintf(w, "first batch after %.1fs (bar %.1fs); epoch %s; %s seeds/s from disk", rep.FirstBatch, rep.FirstBatchBound,
				units.Duration(cli.Seconds(rep.EpochSeconds)), units.Count(rep.DiskSeeds))
			if rep.InMemorySeeds > 0 {
				fmt.Fprintf(w, ", %s in memory (vs_in_memory %.2f); losses equal: %v", units.Count(rep.InMemorySeeds), rep.VsInMemory, *rep.LossesEqual)
			}
			fmt.Fprintf(w, "\nread %s as training reports it, %s as the kernel counts it; cgroup peak %s\n", units.Bytes(rep.DiskReadBytes), units.Bytes(rep.KernelReadBytes), units.Bytes(rep.PeakCgroupBytes))
			if len(rep.BarsMissed) == 0 {
				fmt.Fprintln(w, "bars: all met")
			} else {
				fmt.Fprintf(w, "bars MISSED: %s\n", strings.Join(rep.BarsMissed, ", "))
			}
			for _, p := range rep.Policies {
				fmt.Fprintf(w, "  policy %-18s hit rate %5.1f%%  reads %s\n", p.Policy, 100*p.HitRate, units.Bytes(p.ReadBytes))
			}
			if p := rep.Packed; p != nil {
				fmt.Fprintf(w, "packed copy (data pack): read %s (%.2fx), %s seeds/s (%.2fx), hit rate %.1f%%; losses equal the original's in memory: %v\n",
					units.Bytes(p.DiskReadBytes), p.ReadVsOriginal, units.Count(p.SeedsPerSecond), p.SeedsVsOriginal, 100*p.HitRate, p.LossesEqual)
			}
			for _, l := range rep.Layouts {
				fmt.Fprintf(w, "  layout %-10s rows from byte %-5d reads %s (%.2fx the original), %.2f bytes a byte of row missed\n",
					l.Layout, l.DataOffset, units.Bytes(l.ReadBytes), l.VsOriginal, l.RowAmplification)
			}
			return nil
		},
	}
	c.Flags().BoolVar(&quick, "quick", false, "1.5M nodes, 1.5 GB of features (about a minute)")
	c.Flags().BoolVar(&full, "full", false, "features of 1.3x this machine's memory, no cgroup (long: generating it writes that much)")
	c.Flags().BoolVar(&graph, "graph", false, "instead: a graph larger than memory (4M nodes, 80M edges, 352 MB) sampled in a 160 MB memory cgroup: with random-access advice and reads in flight ahead of sampling (--graph-on-disk yes), with the advice alone, and with the default readahead (stopped at 5x the advice's time); root only")
	c.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	c.Flags().StringVar(&dir, "dir", "", "where to generate (and reuse) the dataset (default: the cache directory)")
	return c
}

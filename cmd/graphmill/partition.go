package main

import (
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/graphmill/graphmill/dataset"
	"github.com/graphmill/graphmill/dataset/parts"
	"github.com/graphmill/graphmill/internal/atomicfile"
	"github.com/graphmill/graphmill/internal/cli"
	"github.com/graphmill/graphmill/internal/memstat"
	"github.com/graphmill/graphmill/internal/units"
	"github.com/graphmill/graphmill/job"
	"github.com/graphmill/graphmill/npy"
	"github.com/graphmill/graphmill/partition"
)

func init() {
	rootCmd.AddCommand(newPartitionCmd())
}

func newPartitionCmd() *cobra.Command {
	var (
		numParts                  int
		method                    string
		imbalance                 float64
		balanceTrain, balanceEdge bool
		out, assign               string
		seed                      uint64
		overwrite, asJSON         bool
		workers, vcycles          int
	)
	c := &cobra.Command{
		Use:   "partition --parts K (--out DIR | --assignment FILE.npy) DATASET",
		Short: "Split a dataset into K parts with few cut edges, for cluster or distributed training",
		Long: `Partition the nodes of DATASET (a native dataset directory, or "cora") into K
parts of balanced size with few edges between parts, and write a partitioned
dataset to DIR: partition.json (the partition book), the node maps, and one
native dataset per part holding its nodes, their in-edges, the one-hop halo
nodes owned by other parts, features, labels, split indices and the
global in- and out-degree of every local node. See the dataset/parts package
documentation for the format (version 2).

With --assignment FILE.npy it writes only every node's part (int32
[num_nodes], numpy's format) instead: what GNNAutoScale's batches of parts
need (the Python client's graphmill.gas.Loader uses it).

Methods: metis (multilevel k-way, like METIS; best cut), fennel (one-pass
streaming), random (baseline). With metis, --vcycles N runs N rounds of
V-cycles after the first pass (each round: two cycles that coarsen again
within the parts and refine back up; the better kept if the cut falls). On
wave and email-Enron one round cuts 0.3-4.4 % fewer edges for 2.1-3.4x the
time; by default graphs of up to 32,768 edges get two, where it costs
milliseconds.

Memory: inside a memory cgroup (a container's limit) the Go heap is kept
under 9/10 of its limit (unless GOMEMLIMIT is set), and metis runs its
initial partitions one after another instead of side by side when the
memory left would not hold them (slower, same partition). Where the
memory left (the system's or the cgroup's) would not hold its coarse
levels, it keeps fewer of them for refinement (a partition refined on
fewer levels, instead of the process being killed).`,
		Args: cli.OneArg("DATASET (a dataset directory, or cora)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if (out == "") == (assign == "") {
				return fmt.Errorf("give one of --out DIR (a partitioned dataset) and --assignment FILE.npy (every node's part)")
			}
			m, err := partition.ParseMethod(method)
			if err != nil {
				return err
			}
			if out != "" {
				if err := atomicfile.CheckDest(filepath.Clean(out), overwrite, parts.DirKind); err != nil {
					return err
				}
			} else if err := atomicfile.CheckWritable(assign); err != nil {
				return err
			}
			defer memstat.HeapWithinCgroup()()
			d, err := job.OpenDataset(ctx, args[0], "partition")
			if err != nil {
				return err
			}
			defer d.Close()
			if p := d.Meta.Packed; p != nil && out != "" {
				return fmt.Errorf("%s was packed for training from disk (by 'graphmill data pack', from %s): partition that dataset instead; a partitioned dataset lays its nodes out by part itself", args[0], p.From)
			}
			var g *partition.Graph
			if err := cli.Step("building the undirected graph", func() (err error) {
				g, err = partition.FromCSC(ctx, d.Graph, workers)
				return err
			}); err != nil {
				return err
			}
			weights, names := partition.BalanceWeights(d, balanceTrain, balanceEdge)
			var res *partition.Result
			start := time.Now()
			if err := cli.Step(fmt.Sprintf("partitioning %s nodes into %d parts (%s)", units.Count(g.NumNodes()), numParts, m), func() (err error) {
				res, err = partition.Partition(ctx, g, partition.Options{Parts: numParts, Method: m, Imbalance: imbalance, Weights: weights, Seed: seed, Workers: workers, VCycles: vcycles})
				return err
			}); err != nil {
				return err
			}
			elapsed := time.Since(start)
			if assign != "" {
				// Every node's part by its original id (a packed dataset's
				// nodes are renumbered).
				if err := writeAssignment(assign, dataset.InOriginalOrder(d, res.Parts, 1)); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s: %d parts by %s in %s, edge cut %s of %s undirected edges (%.2f%%), node imbalance %.3f\n",
					assign, numParts, m, units.Duration(elapsed), units.Count(res.Stats.EdgeCut), units.Count(g.NumEdges()), 100*res.Stats.CutFraction, res.Stats.Imbalance)
				return nil
			}
			bar := cli.NewBar(int64(numParts), "writing parts", "parts")
			book, err := parts.Write(ctx, d, res.Parts, res.NumParts, out, parts.WriteOptions{
				Overwrite: overwrite, Method: string(m), Imbalance: imbalance, Balance: names, Seed: seed, VCycles: vcycles, Stats: res.Stats,
				Progress: func(done, _ int) { bar.Set(int64(done)) },
			})
			bar.Finish()
			if err != nil {
				return err
			}
			if asJSON {
				return cli.WriteJSON(cmd.OutOrStdout(), book)
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "%s: %d parts by %s in %s\n", out, numParts, m, units.Duration(elapsed))
			fmt.Fprintf(w, "edge cut %s of %s undirected edges (%.2f%%), node imbalance %.3f", units.Count(res.Stats.EdgeCut), units.Count(g.NumEdges()), 100*res.Stats.CutFraction, res.Stats.Imbalance)
			for i, x := range res.Stats.WeightImbalance {
				fmt.Fprintf(w, ", %s imbalance %.3f", names[i+1], x)
			}
			fmt.Fprintln(w)
			if e := res.Stats.EmptyParts; e > 0 {
				fmt.Fprintf(w, "warning: %d of the %d parts are empty (%s nodes for %d parts): fewer parts would balance\n", e, numParts, units.Count(g.NumNodes()), numParts)
			}
			for p, pi := range book.Parts {
				fmt.Fprintf(w, "  part %d: %s inner + %s halo nodes, %s edges, train %d\n", p, units.Count(pi.NumInner), units.Count(pi.NumHalo), units.Count(pi.NumEdges), pi.Train)
			}
			return nil
		},
	}
	f := c.Flags()
	f.IntVarP(&numParts, "parts", "k", 0, "number of parts K (required)")
	f.StringVar(&method, "method", "metis", "partitioner: metis, fennel or random")
	f.Float64Var(&imbalance, "imbalance", partition.DefaultImbalance, "balance tolerance: a part may hold this times the average (1.03 = METIS's ufactor 30)")
	f.BoolVar(&balanceTrain, "balance-train", false, "also balance the number of training nodes per part")
	f.BoolVar(&balanceEdge, "balance-edges", false, "also balance the number of edges (in-degrees) per part")
	f.StringVarP(&out, "out", "o", "", "output directory (written atomically)")
	f.StringVar(&assign, "assignment", "", "write only every node's part to this .npy file (int32 [num_nodes], atomically) instead of a partitioned dataset")
	f.Uint64Var(&seed, "seed", 1, "random seed (same seed, same partition)")
	f.IntVar(&vcycles, "vcycles", 0, "metis: rounds of V-cycles after the first pass, each two cycles of about one more coarsening and refinement, kept if the cut falls (0: two rounds on graphs of up to 32,768 edges, none above; -1: none)")
	f.BoolVar(&overwrite, "overwrite", false, "replace --out if it holds a partitioned dataset (anything else there is refused)")
	f.BoolVar(&asJSON, "json", false, "print the partition book as JSON")
	cli.CountVar(f, &workers, "workers", 0, "goroutines to use (0: all cores)")
	_ = c.MarkFlagRequired("parts")
	return c
}

// writeAssignment writes every node's part as an int32 .npy file,
// atomically.
func writeAssignment(path string, assign []int32) error {
	hdr, err := npy.EncodeHeader(npy.Int32, []int{len(assign)})
	if err != nil {
		return err
	}
	return atomicfile.Write(path, func(w io.Writer) error {
		if _, err := w.Write(hdr); err != nil {
			return err
		}
		_, err := w.Write(npy.AsBytes(assign))
		return err
	})
}

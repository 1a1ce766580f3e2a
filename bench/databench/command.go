package databench

import (
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/graphmill/graphmill/dataset/builtin"
	"github.com/graphmill/graphmill/internal/cli"
	"github.com/graphmill/graphmill/internal/units"
)

// Command is 'graphmill bench data'.
func Command() *cobra.Command {
	var (
		quick, asJSON bool
		dir           string
		workers       int
		buildNodes    string
		buildEdges    string
		python        string
	)
	c := &cobra.Command{
		Use:   "data",
		Short: "Measure graph building, synthetic generation and dataset opening",
		Long: `Measure the data layer:
  - graph build throughput (edges/s) and peak memory per edge on a random edge list
    (50M edges; --quick: 10M), as-is and symmetrized+deduplicated, against scipy.sparse building
    the same CSR arrays from the same edge list (the peer: one thread; ours and its runs alternate
    three times and the best of each counts; loading the arrays is not timed);
  - synthetic generation throughput (4M nodes, 60M edges, 128 features: a 2.3 GB dataset;
    --quick: 500k nodes);
  - the time to open that dataset (memory-mapping and the O(nodes) checks) and to verify every edge.
The generated dataset is kept in --dir and reused by later runs (then generation is not re-timed).
Peak memory is the process's resident-set high-water mark during the build, input included.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o := Full
			if quick {
				o = Quick
			}
			o.Workers, o.Python = workers, python
			if buildNodes != "" {
				n, err := units.ParseCount(buildNodes)
				if err != nil {
					return fmt.Errorf("--build-nodes: %w", err)
				}
				o.BuildNodes = int(n)
			}
			if buildEdges != "" {
				m, err := units.ParseCount(buildEdges)
				if err != nil {
					return fmt.Errorf("--build-edges: %w", err)
				}
				o.BuildEdges = int(m)
			}
			o.Dir = dir
			if o.Dir == "" {
				o.Dir = filepath.Join(builtin.CacheDir(), fmt.Sprintf("bench-data-%d-%d", o.GenNodes, o.GenEdges))
			}
			o.Progress = func(s string) {
				if !asJSON {
					fmt.Fprintln(cli.Stderr, s+" ...")
				}
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
			peer := rep.Peer
			if peer == "" {
				peer = "no peer: " + rep.PeerMissing
			}
			fmt.Fprintf(w, "graph build (%d workers; peer %s)\n", rep.Workers, peer)
			for _, b := range rep.Builds {
				fmt.Fprintf(w, "  %-18s %s edges -> %s stored in %s: %s edges/s, peak RSS %s (%.1f bytes per input edge); %s\n",
					b.Name, units.Count(b.InputEdges), units.Count(b.OutputEdges), units.Duration(cli.Seconds(b.Seconds)),
					units.Count(b.EdgesPerSec), units.Bytes(b.PeakBytes), b.PeakPerEdge, vsPeer(b))
			}
			if rep.GenReused {
				fmt.Fprintf(w, "synthetic dataset reused from %s (%s)\n", o.Dir, units.Bytes(rep.DatasetBytes))
			} else {
				fmt.Fprintf(w, "synthetic generation: %s nodes, %s edges, %d features (%s) in %s: %s edges/s, %s/s written\n",
					units.Count(rep.GenNodes), units.Count(rep.GenEdges), rep.GenFeatures, units.Bytes(rep.DatasetBytes),
					units.Duration(cli.Seconds(rep.GenSeconds)), units.Count(rep.GenEdgesPerSec), units.Bytes(int64(rep.GenBytesPerSec)))
			}
			fmt.Fprintf(w, "open %s dataset: %s (warm page cache); verify every edge: %s\n",
				units.Bytes(rep.DatasetBytes), units.Duration(cli.Seconds(rep.OpenSeconds)), units.Duration(cli.Seconds(rep.VerifySeconds)))
			return nil
		},
	}
	c.Flags().BoolVar(&quick, "quick", false, "small sizes (finishes in well under 30 seconds)")
	c.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	c.Flags().StringVar(&dir, "dir", "", "where to generate (and reuse) the dataset that is opened (default: in the cache directory)")
	c.Flags().StringVar(&python, "python", "", `interpreter that runs the scipy peer (default: python3 on PATH or /usr/bin/python3, whichever imports scipy; "none" skips it)`)
	cli.CountVar(c.Flags(), &workers, "workers", 0, "goroutines for building and generating (0 = all cores)")
	c.Flags().StringVar(&buildNodes, "build-nodes", "", "nodes of the random graph given to the builder (default 5M; quick 1M)")
	c.Flags().StringVar(&buildEdges, "build-edges", "", "edges of the random graph given to the builder (default 50M; quick 10M), e.g. 200M")
	return c
}

// vsPeer says how the build compared with scipy's.
func vsPeer(b BuildResult) string {
	switch {
	case b.VsPeer != nil:
		return fmt.Sprintf("%.2fx scipy's speed (%s)", *b.VsPeer, units.Duration(cli.Seconds(b.PeerSeconds)))
	case b.PeerSeconds > 0:
		return fmt.Sprintf("scipy stored %s edges, not the same work: no ratio", units.Count(b.PeerOutputEdges))
	}
	return "scipy: n/a"
}

package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/graphmill/graphmill/dataset"
	"github.com/graphmill/graphmill/graph"
	"github.com/graphmill/graphmill/importer"
	"github.com/graphmill/graphmill/internal/cli"
)

// importFlags are the flags of "graphmill data import".
type importFlags struct {
	format, src, name, out   string
	overwrite                bool
	symmetrize, dedup        bool
	selfLoops                string
	relabel                  string
	numNodes                 int
	workers                  int
	split                    string
	trainPerClass, val, test int
	seed                     uint64
	ogbSplit                 string
}

func init() {
	dataCmd.AddCommand(newImportCmd())
}

func newImportCmd() *cobra.Command {
	var f importFlags
	c := &cobra.Command{
		Use:   "import --format FORMAT --src PATH --out DIR",
		Short: "Convert a dataset from a foreign format into graphmill's native format",
		Long: `Import a dataset into a native dataset directory (one .npy per array + meta.json).

Formats:
  planetoid  the original Planetoid files ind.<name>.{x,y,tx,ty,allx,ally,graph,test.index}
             (as PyG and DGL download them), with the standard public split.
             --src is the directory holding them; --name picks the dataset (cora, citeseer, pubmed).
  npz        gnn-benchmark / ppnp .npz files (scipy CSR adj_*/attr_* + labels); --split random
             draws the usual split (--train-per-class per class, --val and --test in total).
  ogb        the OGB node-property raw layout: --src is the dataset root holding
             raw/{edge,node-feat,node-label}.csv.gz and split/<name>/{train,valid,test}.csv.gz.
  edgelist   whitespace- or comma-separated "src dst [weight]" lines, '#' or '%' comments,
             optionally gzip or bzip2 compressed.
  metis      the METIS graph format (1-based adjacency lists, as gpmetis reads).

Each importer states how it builds the graph (Planetoid and npz: symmetrized, duplicates
removed, as PyG does); --symmetrize, --dedup and --self-loops override it.
The output is written atomically: a failed import leaves nothing (or the old dataset) behind.`,
		Example: `  graphmill data import --format planetoid --src ../shared/data/planetoid --name cora --out data/cora
  graphmill data import --format metis --src ../shared/data/structure-only/wave.graph.bz2 --out data/wave`,
		Args: cli.NoArgs("give the input with --src PATH"),
		RunE: func(cmd *cobra.Command, _ []string) error { return runImport(cmd, &f) },
	}
	fl := c.Flags()
	fl.StringVar(&f.format, "format", "", "source format: planetoid, npz, ogb, edgelist or metis (required)")
	fl.StringVar(&f.src, "src", "", "source file or directory (required)")
	fl.StringVar(&f.name, "name", "", "dataset name (planetoid: which dataset in --src; others: stored in meta.json; default from --src)")
	fl.StringVar(&f.out, "out", "", "output dataset directory (required)")
	fl.BoolVar(&f.overwrite, "overwrite", false, "replace an existing graphmill dataset at --out (atomically); anything else there is refused")
	fl.BoolVar(&f.symmetrize, "symmetrize", false, "add the reverse of every edge (overrides the format's default)")
	fl.BoolVar(&f.dedup, "dedup", false, "remove duplicate edges (overrides the format's default)")
	fl.StringVar(&f.selfLoops, "self-loops", "", "self-loop policy: keep, remove or add (overrides the format's default)")
	fl.StringVar(&f.relabel, "relabel", "auto", "edgelist: renumber node ids densely: always, never, or auto (keep the ids when at least half of 0..max occur)")
	fl.IntVar(&f.numNodes, "num-nodes", 0, "edgelist: number of nodes (ids are then kept, each below it; trailing isolated nodes are included)")
	fl.StringVar(&f.split, "split", "none", "npz: 'random' draws a per-class train split plus val/test; 'none' stores no split")
	cli.PositiveVar(fl, &f.trainPerClass, "train-per-class", 20, "npz --split random: training nodes per class")
	cli.PositiveVar(fl, &f.val, "val", 500, "npz --split random: validation nodes in total")
	cli.CountVar(fl, &f.test, "test", 1000, "npz --split random: test nodes in total (0: all remaining nodes)")
	fl.Uint64Var(&f.seed, "seed", 0, "npz --split random: random seed")
	fl.StringVar(&f.ogbSplit, "ogb-split", "", "ogb: the split sub-directory of split/ to use (default: the only one)")
	cli.CountVar(fl, &f.workers, "workers", 0, "graph builder goroutines (0 = all cores)")
	return c
}

func runImport(cmd *cobra.Command, f *importFlags) error {
	if f.format == "" || f.src == "" || f.out == "" {
		return fmt.Errorf("--format, --src and --out are required (see 'graphmill data import --help')")
	}
	// A flag of another format would be ignored without a word.
	for flag, format := range map[string]string{"relabel": "edgelist", "num-nodes": "edgelist", "split": "npz",
		"train-per-class": "npz", "val": "npz", "test": "npz", "seed": "npz", "ogb-split": "ogb"} {
		if cmd.Flags().Changed(flag) && f.format != format {
			return fmt.Errorf("--%s applies to --format %s, not %s", flag, format, f.format)
		}
	}
	// Checked before reading the input, which can take minutes.
	if err := dataset.CheckDest(f.out, f.overwrite); err != nil {
		return err
	}
	var raw *dataset.Raw
	err := cli.Step(fmt.Sprintf("read %s (%s)", filepath.Base(f.src), f.format), func() error {
		// The parsers take no context: on Ctrl-C the command returns at
		// once and the process exits (nothing has been written yet).
		return untilDone(cmd.Context(), func() error {
			var err error
			raw, err = readSource(f)
			return err
		})
	})
	if err != nil {
		return err
	}
	bo := raw.Build
	fl := cmd.Flags()
	if fl.Changed("symmetrize") {
		bo.Symmetrize = f.symmetrize
	}
	if fl.Changed("dedup") {
		bo.Dedup = f.dedup
	}
	if fl.Changed("self-loops") {
		p, err := parseSelfLoops(f.selfLoops)
		if err != nil {
			return err
		}
		bo.SelfLoops = p
	}
	if f.name != "" && f.format != "planetoid" {
		raw.Name = f.name
	}
	if raw.Source == "" {
		raw.Source = f.format + ":" + f.src
	}
	err = cli.Step("build graph and write "+filepath.Base(f.out), func() error {
		return dataset.Write(cmd.Context(), f.out, raw, dataset.WriteOptions{Build: &bo, Overwrite: f.overwrite, Workers: f.workers})
	})
	if err != nil {
		return err
	}
	d, err := dataset.Open(f.out)
	if err != nil {
		return fmt.Errorf("re-opening the written dataset: %w", err)
	}
	defer d.Close()
	m := d.Meta
	fmt.Fprintf(cmd.OutOrStdout(), "wrote %s: %d nodes, %d edges, %d features, %d classes%s\n",
		f.out, m.NumNodes, m.NumEdges, m.FeatureDim, m.NumClasses, splitText(m.Splits))
	return nil
}

func readSource(f *importFlags) (*dataset.Raw, error) {
	switch strings.ToLower(f.format) {
	case "planetoid":
		name := f.name
		if name == "" {
			return nil, fmt.Errorf("planetoid: --name is required (cora, citeseer or pubmed)")
		}
		return importer.Planetoid(f.src, name)
	case "edgelist":
		rl, err := parseRelabel(f.relabel)
		if err != nil {
			return nil, err
		}
		raw, info, err := importer.EdgeList(f.src, importer.EdgeListOptions{Relabel: rl, NumNodes: f.numNodes, Name: f.name})
		if err == nil && info.Relabelled {
			fmt.Fprintf(cli.Stderr, "node ids renumbered densely: %d distinct ids, largest %d\n", info.Distinct, info.MaxID)
		}
		return raw, err
	case "metis":
		return importer.METIS(f.src)
	case "npz":
		var opts importer.NPZOptions
		switch f.split {
		case "random":
			opts = importer.NPZOptions{RandomSplit: true, TrainPerClass: f.trainPerClass, Val: f.val, Test: f.test, Seed: f.seed}
		case "none":
		default:
			return nil, fmt.Errorf("--split %q: want random or none", f.split)
		}
		opts.Name = f.name
		return importer.NPZ(f.src, opts)
	case "ogb":
		return importer.OGB(f.src, f.ogbSplit)
	}
	return nil, fmt.Errorf("unknown --format %q: want planetoid, npz, ogb, edgelist or metis", f.format)
}

func splitText(s map[string]int) string {
	if len(s) == 0 {
		return ""
	}
	return fmt.Sprintf(", split %d/%d/%d", s["train"], s["val"], s["test"])
}

func parseSelfLoops(s string) (graph.SelfLoopPolicy, error) {
	for _, p := range []graph.SelfLoopPolicy{graph.KeepSelfLoops, graph.RemoveSelfLoops, graph.AddSelfLoops} {
		if p.String() == s {
			return p, nil
		}
	}
	return 0, fmt.Errorf("--self-loops %q: want keep, remove or add", s)
}

func parseRelabel(s string) (importer.Relabel, error) {
	switch s {
	case "auto":
		return importer.RelabelAuto, nil
	case "always":
		return importer.RelabelAlways, nil
	case "never":
		return importer.RelabelNever, nil
	}
	return 0, fmt.Errorf("--relabel %q: want auto, always or never", s)
}

// untilDone runs fn and returns its error, or ctx's error as soon as ctx is
// done (fn then goes on in the background until the process exits: only
// for work that writes nothing).
func untilDone(ctx context.Context, fn func() error) error {
	done := make(chan error, 1)
	go func() { done <- fn() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

package pybench

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/spf13/cobra"

	"github.com/graphmill/graphmill/dataset/builtin"
	"github.com/graphmill/graphmill/internal/cli"
	"github.com/graphmill/graphmill/internal/units"
	"github.com/graphmill/graphmill/job"
	"github.com/graphmill/graphmill/sample"
	"github.com/graphmill/graphmill/synth"
)

// Command is 'graphmill bench python'.
func Command() *cobra.Command {
	var quick, asJSON, pyg bool
	var dir, py, pypath, modesS, device, cachesS, malloc string
	var fan sample.Fanouts
	var batchSize, batches, rounds, workers, epochBatches int
	c := &cobra.Command{
		Use:   "python",
		Short: "Minibatches per second reaching PyTorch through the Python client, against the Go loader",
		Long: `Serve a generated graph (1M nodes, 20M edges, 100 float32 features) with "graphmill serve
sampler" and time, alternating, --rounds times each:

  go loader    sampling and feature gathering in process (--workers goroutines, as the
               service prepares batches): the ceiling
  go client    the service's frames received and decoded in place by the Go client
  python       the same frames received by the Python client (python3 -m graphmill.bench),
               decoded as numpy views and converted to torch tensors, with the feature rows
               inside the frames ("frame"; "shm": the same payloads through shared memory) or gathered in Python from the memory map ("local")

Rates are batches/s of GraphSAGE minibatches ([25,10], 1024 seeds), the best of the rounds;
python's are also given as ratios to the go loader and the go client (the median over the
rounds of each round's ratio: a busy machine slows neighbours alike), with the Python-side
copies per batch (every tensor's address checked against the received message).
Every side times the same minibatches: --batches of them, or one epoch's if the dataset's training
split has fewer (the report says so: batches_requested, batches_per_epoch), so that none runs into
a second epoch while another stops at the first's end.

With --pyg (the default) and torch_geometric importable, graphmill.NeighborLoader and PyG's
NeighborLoader are then timed on the same PyG Data and seeds, alternating after a warm-up of 10
batches each, with the go loader timed again at the start of each round (the Python side idle):
batches/s of each loader alone (vs_pyg_loader and neighbor_ratio_to_go_loader, the medians of
the rounds' ratios) and the time per training step of the same PyG GraphSAGE (2 x 256,
trim_to_layer) on each (vs_pyg_epoch: PyG's time over ours). PyG's loader runs with its default
num_workers=0 (batches made in the timed thread), ours with the service's --workers preparing
batches ahead: the ratios include that parallelism, as a user of either gets it by default.
The Data's x is a tensor in memory, as a PyG user loads it (graphmill's loader moves it into
shared memory, where its service gathers the rows).
Every Python process runs with glibc's allocator tuned as PyG's timings need to be fair
(GLIBC_TUNABLES=glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=68719476736: freed memory is
kept for reuse, where PyG's fresh tensors otherwise fault in every page anew; python_malloc in the
JSON), unless GLIBC_TUNABLES is set already or --python-malloc default runs them as shipped.
Each loader's training steps are timed after two untimed ones (the first steps of a process grow
its heap).

With --device cuda the comparison runs again with batches on the GPU: graphmill.NeighborLoader
without a feature cache and with a FeatureCache of each --caches budget (hit rate, MiB copied per
batch), PyG's loader followed by batch.to(device) where it can sample there, and the same training
step on one batch already on the GPU (the ceiling: compute_over_step is that step's time over the
time of a step fed by the loader; 1 means the loader costs the step nothing).

The Python client must be importable by --python: install it (pip install ./python) or give
--python-path python (the source tree).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			// --quick keeps the 1M-node graph the drop-in bar is defined
			// on (PyG's loader slows by 3x from a 200k-node graph to it,
			// ours hardly: a smaller graph would measure another ratio),
			// with fewer batches and rounds.
			nodes, edges := 1_000_000, int64(20_000_000)
			if quick {
				if batches == 0 {
					batches = 25
				}
				if !cmd.Flags().Changed("rounds") {
					rounds = 2
				}
				if !cmd.Flags().Changed("epoch-batches") {
					epochBatches = 4
				}
			}
			if batches == 0 {
				batches = 60
			}
			if malloc != "tuned" && malloc != "default" {
				return fmt.Errorf("--python-malloc %q: want tuned or default", malloc)
			}
			if dir == "" {
				dir = filepath.Join(builtin.CacheDir(), "bench", fmt.Sprintf("python-n%d-e%d-f100", nodes, edges))
				fmt.Fprintf(cmd.ErrOrStderr(), "dataset %s (generated once)\n", dir)
				if _, err := synth.Ensure(ctx, dir, synth.Config{Name: "bench-python", Nodes: nodes, Edges: edges, FeatureDim: 100, Classes: 16, Seed: 1}); err != nil {
					return err
				}
			}
			self, err := os.Executable()
			if err != nil {
				return err
			}
			cfg := Config{Dataset: dir, Graphmill: self, Python: py, PythonPath: pypath, Fanouts: fan,
				BatchSize: batchSize, Batches: batches, Rounds: rounds, Workers: workers, Seed: 1,
				Modes: strings.Split(modesS, ","), PyG: pyg, EpochBatches: epochBatches, Device: device,
				Caches: strings.Split(cachesS, ","), DefaultMalloc: malloc == "default",
				Progress: func(s string) { fmt.Fprintln(cmd.ErrOrStderr(), s) }}
			rep, err := Run(ctx, cfg)
			if err != nil {
				return err
			}
			rep.CPUs = runtime.NumCPU()
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(rep)
			}
			printPyBench(cmd.OutOrStdout(), rep)
			return nil
		},
	}
	fl := c.Flags()
	fl.BoolVar(&quick, "quick", false, "25 batches per measurement, 2 rounds, 4 timed training steps (about two minutes once the graph exists)")
	fl.BoolVar(&asJSON, "json", false, "print the report as JSON (go_loader_batches_per_s, python[].ratio_to_go_loader, ...)")
	fl.BoolVar(&pyg, "pyg", true, "also time PyG's NeighborLoader, and graphmill.NeighborLoader against it (vs_pyg_loader, vs_pyg_epoch), when torch_geometric is importable")
	fl.IntVar(&epochBatches, "epoch-batches", 8, "training steps of PyG's GraphSAGE timed on each loader (vs_pyg_epoch)")
	fl.StringVar(&dir, "dataset", "", "dataset directory to serve (default: the generated graph, in the cache directory)")
	fl.StringVar(&py, "python", "", "Python interpreter with the graphmill client importable (default: python3 on PATH or /usr/bin/python3, whichever imports graphmill and torch, preferring one with torch_geometric)")
	fl.StringVar(&pypath, "python-path", "", "directory prepended to PYTHONPATH (e.g. python, to run the client from source)")
	job.FanoutsFlag(fl, &fan, []int{25, 10}, "sampling")
	fl.StringVar(&modesS, "modes", "frame,shm,local", "Python feature modes: frame (rows in the gRPC message), shm (rows in the payload, through shared memory), local (rows gathered in Python), none")
	fl.IntVar(&batchSize, "batch-size", 1024, "seeds per minibatch")
	fl.IntVar(&batches, "batches", 0, "minibatches per measurement (default 60; --quick 25)")
	fl.IntVar(&rounds, "rounds", 3, "alternations of the consumers (best rates; ratios are medians of each round's ratios)")
	fl.StringVar(&device, "device", "cpu", "also run the drop-in comparison with batches on this device (cuda: GPU training, the loader with and without a FeatureCache)")
	fl.StringVar(&cachesS, "caches", "10%,30%", "with --device: FeatureCache budgets (of x's rows) timed besides no cache")
	cli.CountVar(fl, &workers, "workers", 2, "Go loader goroutines (the service prepares 2 batches at once)")
	fl.StringVar(&malloc, "python-malloc", "tuned", "glibc allocator of the Python processes: tuned (keeps freed memory, as PyG's timings need) or default (as shipped)")
	return c
}

func printPyBench(w io.Writer, r *Report) {
	fmt.Fprintf(w, "machine: %s\n", r.Machine)
	batches := fmt.Sprint(r.Batches)
	if r.BatchesRequested > 0 && r.BatchesRequested != r.Batches {
		batches = fmt.Sprintf("%d (one epoch's; %d asked)", r.Batches, r.BatchesRequested)
	}
	fmt.Fprintf(w, "%s: %s nodes, %s edges, %d features; fanouts %v, %d seeds per batch, %s batches x %d rounds (best rate; median ratio)\n",
		filepath.Base(r.Dataset), units.Count(float64(r.Nodes)), units.Count(float64(r.Edges)), r.FeatureDim, r.Fanouts, r.BatchSize, batches, r.Rounds)
	fmt.Fprintf(w, "  go loader (in process, %d workers)   %7.1f batches/s\n", r.Workers, r.GoLoader)
	fmt.Fprintf(w, "  go client of the service            %7.1f batches/s  (%.1f MiB frames)\n", r.GoClient, r.GoFrameMiB)
	for _, p := range r.Python {
		fmt.Fprintf(w, "  python, features %-6s             %7.1f batches/s  = %.2f x go loader, %.2f x go client; %.1f MiB frames, %.0f copies/batch\n",
			p.Features, p.BatchesPerS, p.RatioToGoLoader, p.RatioToGoClient, p.FrameMiB, p.CopiesPerBatch)
	}
	if r.PyG != nil {
		fmt.Fprintf(w, "  PyG NeighborLoader (a run alone)    %s\n", pygLine(r.PyG))
	}
	if r.NeighborLoader > 0 && r.VsPyGLoader == 0 {
		fmt.Fprintf(w, "  graphmill.NeighborLoader            %7.1f batches/s  = %.2f x go loader (PyG's loader cannot sample here)\n",
			r.NeighborLoader, r.NeighborRatioToGoLoader)
	}
	if r.VsPyGLoader > 0 {
		fmt.Fprintf(w, "  graphmill.NeighborLoader            %7.1f batches/s  = %.2f x PyG's NeighborLoader (%.1f batches/s in the same rounds; ours %d workers ahead, PyG's num_workers=0), %.2f x go loader; PyG GraphSAGE step %s on it\n",
			r.NeighborLoader, r.VsPyGLoader, r.PyGNeighborLoader, r.Workers, r.NeighborRatioToGoLoader, fasterOrSlower(r.VsPyGEpoch))
	}
	if len(r.DropInDevice) > 0 {
		var d deviceDropIn
		if json.Unmarshal(r.DropInDevice, &d) == nil {
			printDeviceDropIn(w, &d)
		}
	}
	malloc := "glibc's allocator as shipped"
	if r.PythonMalloc != "" {
		malloc = "GLIBC_TUNABLES=" + r.PythonMalloc
	}
	fmt.Fprintf(w, "  (python: %s, %s)\n", r.PythonInterpreter, malloc)
	if r.LoadAverage != "" {
		fmt.Fprintf(w, "  (%d CPUs, load average %s)\n", r.CPUs, r.LoadAverage)
	}
}

// pygLine is the report's line on PyG's NeighborLoader from python -m
// graphmill.bench's "pyg" object: its rate, or why it was skipped.
func pygLine(v any) string {
	m, _ := v.(map[string]any)
	if s, ok := m["skipped"].(string); ok && s != "" {
		return "skipped: " + s
	}
	if rate, ok := m["batches_per_s"].(float64); ok {
		return fmt.Sprintf("%7.1f batches/s", rate)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// fasterOrSlower words a ratio of step times (the other loader's over
// ours): "1.30 x faster" above 1, "1.39 x slower" (its inverse) below.
func fasterOrSlower(ratio float64) string {
	switch {
	case ratio >= 1:
		return fmt.Sprintf("%.2f x faster", ratio)
	case ratio > 0:
		return fmt.Sprintf("%.2f x slower", 1/ratio)
	}
	return "not measured"
}

func printDeviceDropIn(w io.Writer, d *deviceDropIn) {
	if d.Skipped != "" {
		fmt.Fprintf(w, "  on the device: skipped (%s)\n", d.Skipped)
		return
	}
	fmt.Fprintf(w, "  on %s (%s); a step on one resident batch %.1f ms:\n", d.Device, d.GPU, 1000*d.ComputeStepS)
	for _, l := range d.Loaders {
		hit := "no cache"
		if l.HitRate != nil {
			hit = fmt.Sprintf("%.0f %% hits, %.1f MiB copied/batch", 100**l.HitRate, l.MiBToDevice)
		}
		fmt.Fprintf(w, "    graphmill.NeighborLoader, cache %-5s %7.1f batches/s, step %6.1f ms (%.2f x resident; %s)",
			l.Cache, l.BatchesPerS, 1000*l.StepS, l.ComputeOverStep, hit)
		if l.VsPyGLoader > 0 {
			fmt.Fprintf(w, "; %.2f x PyG's loader, step %s", l.VsPyGLoader, fasterOrSlower(l.VsPyGEpoch))
		}
		fmt.Fprintln(w)
	}
	if d.PyG.Skipped != "" {
		fmt.Fprintf(w, "    PyG NeighborLoader: %s\n", d.PyG.Skipped)
	} else {
		fmt.Fprintf(w, "    PyG NeighborLoader + .to(device) %7.1f batches/s, step %6.1f ms\n", d.PyG.BatchesPerS, 1000*d.PyG.StepS)
	}
}

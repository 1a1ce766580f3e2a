// Package pybench is the harness behind "graphmill bench python": how fast
// minibatches reach PyTorch through the Python client, next to the Go
// loader's rate on the same machine in the same run.
//
// Three consumers of the same minibatches (the same dataset, split,
// fanouts, batch size and seed) are timed, alternating, Rounds times each
// (the best round gives each rate; the ratios are medians over the rounds
// of rates measured next to each other):
//
//   - the Go loader: Workers goroutines sampling (sample.Sampler) and
//     gathering feature rows (feature.Store) for the epoch's batches, in
//     process, with nothing else to do (the ceiling: what the sampler
//     service itself does per batch, less encoding and sending);
//   - the Go client of a "graphmill serve sampler" child process
//     (samplersvc.Client), decoding each frame in place (batch.Decode with
//     Alias): the same transport without Python;
//   - the Python client (python3 -m graphmill.bench) of the same service:
//     batches received, decoded as numpy views and converted to torch
//     tensors, in each feature mode ("frame": rows inside the gRPC
//     message; "shm": the same payloads through shared memory, the frames
//     carrying offset and length; "local": rows gathered in Python from the
//     memory map), counting the
//     Python-side copies by checking every tensor's address.
package pybench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/graphmill/graphmill/batch"
	"github.com/graphmill/graphmill/bench/membench"
	"github.com/graphmill/graphmill/dataset"
	"github.com/graphmill/graphmill/dist/samplersvc"
	"github.com/graphmill/graphmill/feature"
	"github.com/graphmill/graphmill/internal/isa"
	"github.com/graphmill/graphmill/sample"
)

// Config configures a run.
type Config struct {
	// Dataset is the dataset directory (see Ensure for the generated one).
	Dataset string
	// Graphmill is the graphmill program that serves the sampler.
	Graphmill string
	// Python is the interpreter that runs the client (with graphmill
	// importable: installed, or PYTHONPATH set).
	Python string
	// PythonPath, if set, is prepended to PYTHONPATH (the source tree).
	PythonPath string
	Fanouts    []int
	BatchSize  int
	// Batches is the number of minibatches per measurement.
	Batches int
	// Rounds is the number of alternations of the consumers.
	Rounds int
	// Workers is the Go loader's goroutines (the service's default, 2).
	Workers int
	Seed    uint64
	// Modes are the Python client's feature modes ("frame", "shm", "local").
	Modes []string
	// PyG also times PyG's NeighborLoader when torch_geometric imports,
	// and against it graphmill.NeighborLoader on the same PyG Data and
	// seeds, alone and under the same GraphSAGE training step (DropIn).
	PyG bool
	// EpochBatches is the number of training steps timed on each loader
	// in the drop-in comparison (default 8).
	EpochBatches int
	// Device, if set and not "cpu" (e.g. "cuda"), also runs the drop-in
	// comparison with batches on that device, without a feature cache and
	// with each budget of Caches (DropInDevice).
	Device string
	Caches []string
	// DefaultMalloc runs the Python processes with glibc's allocator as
	// shipped; otherwise they run with TunedMalloc (unless GLIBC_TUNABLES
	// is set already), the setting PyG's timings need to be fair.
	DefaultMalloc bool
	// Progress, if set, receives a line per measurement.
	Progress func(string)
}

// Python is one Python client measurement (the JSON of graphmill.bench).
type Python struct {
	Features       string          `json:"features"`
	Transport      string          `json:"transport"` // "grpc" or "shm": how the payloads came
	Batches        int             `json:"batches"`
	BatchesPerS    float64         `json:"batches_per_s"`
	FrameMiB       float64         `json:"frame_mib_per_batch"`
	InputNodes     float64         `json:"input_nodes_per_batch"`
	TorchConvertMs float64         `json:"torch_convert_ms_per_batch"`
	ArraysChecked  int             `json:"arrays_checked"`
	CopiesPerBatch float64         `json:"copies_per_batch"`
	PyG            json.RawMessage `json:"pyg,omitempty"`
	// RatioToGoLoader and RatioToGoClient are the medians over the rounds
	// of this mode's rate divided by the Go rates of the same round
	// (measured next to each other, so a busy machine affects both).
	RatioToGoLoader float64 `json:"ratio_to_go_loader"`
	RatioToGoClient float64 `json:"ratio_to_go_client"`
	// Rounds holds every round's rate and ratios.
	Rounds []Round `json:"rounds,omitempty"`
}

// Round is one round of one Python mode.
type Round struct {
	BatchesPerS     float64 `json:"batches_per_s"`
	GoLoader        float64 `json:"go_loader_batches_per_s"`
	GoClient        float64 `json:"go_client_batches_per_s"`
	RatioToGoLoader float64 `json:"ratio_to_go_loader"`
	RatioToGoClient float64 `json:"ratio_to_go_client"`
}

// Report is the result of Run.
type Report struct {
	// Machine is the CPU measured on (isa.Describe).
	Machine    isa.Machine `json:"machine"`
	Dataset    string      `json:"dataset"`
	Nodes      int         `json:"nodes"`
	Edges      int64       `json:"edges"`
	FeatureDim int         `json:"feature_dim"`
	Fanouts    []int       `json:"fanouts"`
	BatchSize  int         `json:"batch_size"`
	// Batches is the minibatches every side times per measurement: the
	// requested number (BatchesRequested when that differs) or one
	// epoch's (BatchesPerEpoch), whichever is smaller, so that no side
	// runs into a second epoch while another stops at the first's end.
	Batches          int      `json:"batches"`
	BatchesRequested int      `json:"batches_requested,omitempty"`
	BatchesPerEpoch  int      `json:"batches_per_epoch"`
	Rounds           int      `json:"rounds"`
	Workers          int      `json:"workers"`
	GoLoader         float64  `json:"go_loader_batches_per_s"`
	GoClient         float64  `json:"go_client_batches_per_s"`
	GoFrameMiB       float64  `json:"go_client_frame_mib_per_batch"`
	Python           []Python `json:"python"`
	PyG              any      `json:"pyg,omitempty"`
	// DropIn is graphmill.NeighborLoader against PyG's NeighborLoader
	// (python -m graphmill.bench --dropin), when PyG imports: the ratios
	// of batches/s (VsPyGLoader, the median of each round's) and of time
	// per training step of the same PyG GraphSAGE with trim_to_layer
	// (VsPyGEpoch: PyG's over ours), and NeighborLoader's batches/s over
	// the Go loader's (NeighborRatioToGoLoader: the median over the rounds
	// of each round's ratio, the Go loader timed at the round's start).
	DropIn         json.RawMessage `json:"dropin,omitempty"`
	VsPyGLoader    float64         `json:"vs_pyg_loader,omitempty"`
	VsPyGEpoch     float64         `json:"vs_pyg_epoch,omitempty"`
	NeighborLoader float64         `json:"neighbor_loader_batches_per_s,omitempty"`
	// PyGNeighborLoader is PyG's loader in the drop-in rounds, against
	// which VsPyGLoader is taken (PyG, above, is a run of its own).
	PyGNeighborLoader       float64 `json:"pyg_neighbor_loader_batches_per_s,omitempty"`
	NeighborRatioToGoLoader float64 `json:"neighbor_ratio_to_go_loader,omitempty"`
	// DropInDevice is the comparison on Config.Device (python -m
	// graphmill.bench --dropin --device): per loader (no cache, then each
	// FeatureCache budget) batches/s, the training step's time, the
	// cache's hit rate and MiB copied per batch, and the step on one batch
	// already on the device (compute_step_s); PyG's loader where it can
	// sample there.
	DropInDevice      json.RawMessage `json:"dropin_device,omitempty"`
	PythonInterpreter string          `json:"python_interpreter"`
	// PythonMalloc is the GLIBC_TUNABLES the Python processes ran with
	// ("" : glibc's allocator as shipped).
	PythonMalloc string `json:"python_malloc"`
	CPUs         int    `json:"cpus"`
	LoadAverage  string `json:"load_average,omitempty"`
}

// goLoader times cfg.Batches batches of the Go loader's work: sampling and
// feature gathering on cfg.Workers goroutines (frontier: PyG's draws, as
// graphmill.NeighborLoader asks for). It returns batches/s.
func goLoader(ctx context.Context, d *dataset.Dataset, st *feature.Store, cfg Config, epoch int, frontier bool) (float64, error) {
	smp, err := sample.New(d.Graph, sample.Config{Fanouts: cfg.Fanouts, Frontier: frontier})
	if err != nil {
		return 0, err
	}
	bs, err := samplersvc.Batches(d.Train, cfg.BatchSize, 0, 1, true, false, cfg.Seed, uint64(epoch))
	if err != nil {
		return 0, err
	}
	n := min(cfg.Batches, len(bs))
	next := make(chan int, n)
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	key := sample.EpochKey(cfg.Seed, epoch)
	errs := make([]error, cfg.Workers)
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < cfg.Workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			var mb batch.MiniBatch
			for i := range next {
				if err := smp.SampleInto(&mb, bs[i], key); err != nil {
					errs[w] = err
					return
				}
				ids, err := mb.Local()
				if err != nil {
					errs[w] = err
					return
				}
				if err := st.Gather(ctx, ids, mb.Features.SetF32(len(ids), st.Dim())); err != nil {
					errs[w] = err
					return
				}
			}
		}(w)
	}
	wg.Wait()
	el := time.Since(start)
	for _, e := range errs {
		if e != nil {
			return 0, e
		}
	}
	return float64(n) / el.Seconds(), nil
}

// goClient times cfg.Batches batches received from the service by the Go
// client, each decoded in place. It returns batches/s (from the first
// batch to the last, as the Python client measures) and MiB per frame.
func goClient(ctx context.Context, addr string, d *dataset.Dataset, cfg Config, epoch int) (float64, float64, error) {
	c, err := samplersvc.Dial(ctx, samplersvc.ClientConfig{Addrs: []string{addr}, ConnectTimeout: time.Minute})
	if err != nil {
		return 0, 0, err
	}
	defer c.Close()
	spec := samplersvc.EpochSpec{Split: "train", Fanouts: cfg.Fanouts, BatchSize: cfg.BatchSize, Seed: cfg.Seed,
		Shuffle: true, Features: true, Labels: true, Shards: 1}
	nb := spec.NumBatches(len(d.Train))
	e, err := c.Epoch(ctx, spec, uint64(epoch), nb)
	if err != nil {
		return 0, 0, err
	}
	defer e.Close()
	var mb batch.MiniBatch
	var first time.Time
	got := 0
	var bytes int64
	for got < cfg.Batches {
		_, p, ok := e.Next()
		if !ok {
			break
		}
		if err := batch.Decode(p, &mb, batch.DecodeOptions{Alias: true}); err != nil {
			return 0, 0, err
		}
		bytes += int64(len(p))
		if got == 0 {
			first = time.Now()
		}
		got++
	}
	if err := e.Err(); err != nil {
		return 0, 0, err
	}
	if got < 2 {
		return 0, 0, fmt.Errorf("go client: %d batches", got)
	}
	return float64(got-1) / time.Since(first).Seconds(), float64(bytes) / float64(got) / (1 << 20), nil
}

// python runs the Python client once.
func python(ctx context.Context, addr string, cfg Config, mode string, pyg bool) (Python, error) {
	args := []string{"--addr", addr, "--fanouts", sample.FormatFanouts(cfg.Fanouts),
		"--batch-size", fmt.Sprint(cfg.BatchSize), "--batches", fmt.Sprint(cfg.Batches), "--features", mode,
		"--dataset", cfg.Dataset, "--seed", fmt.Sprint(cfg.Seed)}
	if pyg {
		args = append(args, "--pyg")
	}
	var r Python
	return r, runBench(ctx, cfg, args, &r, nil)
}

// runBench runs python -m graphmill.bench with args and decodes its JSON
// report into v. With pace, the run is --paced: each time it prints the
// pace line (its process idle), pace runs and the rate it returns is
// written to the run's stdin.
func runBench(ctx context.Context, cfg Config, args []string, v any, pace func() (float64, error)) error {
	args = append([]string{"-m", "graphmill.bench"}, append(args, "--json")...)
	if pace != nil {
		args = append(args, "--paced")
	}
	cmd := exec.CommandContext(ctx, cfg.Python, args...)
	// A loader that starts its own service runs this graphmill.
	cmd.Env = append(pythonEnv(cfg.PythonPath), "GRAPHMILL_BIN="+cfg.Graphmill)
	if _, set := os.LookupEnv("GLIBC_TUNABLES"); !set && !cfg.DefaultMalloc {
		cmd.Env = append(cmd.Env, "GLIBC_TUNABLES="+TunedMalloc)
	}
	var out, errb bytes.Buffer
	cmd.Stderr = &errb
	fail := func(err error) error {
		return fmt.Errorf("python client (%s %v): %w: %s", cfg.Python, args, err, lastLine(errb.String()))
	}
	if pace == nil {
		cmd.Stdout = &out
		if err := cmd.Run(); err != nil {
			return fail(err)
		}
	} else if err := runPaced(cmd, &out, pace); err != nil {
		return fail(err)
	}
	if err := json.Unmarshal(out.Bytes(), v); err != nil {
		return fmt.Errorf("python client output %q: %w", lastLine(out.String()), err)
	}
	return nil
}

// paceLine is what python -m graphmill.bench --paced prints when it waits
// for the Go loader's rate.
const paceLine = "graphmill-bench pace"

// runPaced runs cmd, answering each pace line on its stdout with pace's
// rate on its stdin; the other lines go to out.
func runPaced(cmd *exec.Cmd, out *bytes.Buffer, pace func() (float64, error)) error {
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	var perr error
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		if sc.Text() != paceLine {
			out.Write(sc.Bytes())
			out.WriteByte('\n')
			continue
		}
		r, err := pace()
		if err != nil {
			perr = err
			break
		}
		if _, err := fmt.Fprintf(stdin, "%g\n", r); err != nil {
			perr = err
			break
		}
	}
	stdin.Close() // a run still waiting for a rate fails rather than hangs
	if perr != nil {
		cmd.Process.Kill()
	}
	if err := cmd.Wait(); perr == nil && err != nil {
		perr = err
	}
	return perr
}

// TunedMalloc is the glibc allocator setting PyG's timings need to be
// fair (../shared/wheels/README.md): freed memory is kept for reuse
// instead of unmapped, since PyG with torch 1.13 allocates every large
// tensor afresh and a fresh 4 KiB page costs about 11 µs to fault in on
// these VMs (PyG's loader ran at half speed without it, its training step
// at 0.5-0.6x).
const TunedMalloc = "glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=68719476736"

// pythonMalloc is the GLIBC_TUNABLES the Python processes run with: the
// caller's own, else TunedMalloc unless cfg asks for the default.
func pythonMalloc(cfg Config) string {
	if v, ok := os.LookupEnv("GLIBC_TUNABLES"); ok {
		return v
	}
	if cfg.DefaultMalloc {
		return ""
	}
	return TunedMalloc
}

func pythonEnv(path string) []string {
	env := os.Environ()
	if path != "" {
		pp := path
		if old := os.Getenv("PYTHONPATH"); old != "" {
			pp += string(os.PathListSeparator) + old
		}
		env = append(env, "PYTHONPATH="+pp)
	}
	return env
}

// PickPython returns the interpreter to run the client with: the first of
// python3 on PATH and /usr/bin/python3 that imports graphmill and torch,
// preferring one that also imports torch_geometric (the peer) when pyg.
func PickPython(pythonPath string, pyg bool) (string, error) {
	var cands []string
	if p, err := exec.LookPath("python3"); err == nil {
		cands = append(cands, p)
	}
	cands = append(cands, "/usr/bin/python3")
	imports := func(py, mods string) bool {
		cmd := exec.Command(py, "-c", "import "+mods)
		cmd.Env = pythonEnv(pythonPath)
		return cmd.Run() == nil
	}
	first := ""
	for _, py := range cands {
		if !imports(py, "graphmill, torch") {
			continue
		}
		if !pyg || imports(py, "torch_geometric") {
			return py, nil
		}
		if first == "" {
			first = py
		}
	}
	if first != "" {
		return first, nil
	}
	return "", fmt.Errorf("no Python interpreter imports graphmill and torch (tried %v): pip install ./python, or give --python-path python (the source tree), or --python", cands)
}

// Serve starts "graphmill serve sampler" on dataset and returns its
// address and a function that stops it.
func Serve(ctx context.Context, graphmill, dir string) (string, func(), error) {
	cmd := exec.CommandContext(ctx, graphmill, "serve", "sampler", "--dataset", dir, "--listen", "127.0.0.1:0")
	out, err := cmd.StdoutPipe()
	if err != nil {
		return "", nil, err
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	stop := func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}
	re := regexp.MustCompile(`listening on (\S+:\d+)`)
	buf := make([]byte, 0, 4096)
	tmp := make([]byte, 1024)
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		n, err := out.Read(tmp)
		buf = append(buf, tmp[:n]...)
		if m := re.FindSubmatch(buf); m != nil {
			go func() { // keep draining so the server never blocks on a full pipe
				for {
					if _, err := out.Read(tmp); err != nil {
						return
					}
				}
			}()
			return string(m[1]), stop, nil
		}
		if err != nil {
			stop()
			return "", nil, fmt.Errorf("graphmill serve sampler exited: %s", lastLine(string(buf)))
		}
	}
	stop()
	return "", nil, fmt.Errorf("graphmill serve sampler printed no address in 2 minutes: %s", lastLine(string(buf)))
}

// Run measures, alternating the consumers cfg.Rounds times.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if cfg.Workers < 1 {
		cfg.Workers = 2
	}
	if cfg.Rounds < 1 {
		cfg.Rounds = 1
	}
	if len(cfg.Modes) == 0 {
		cfg.Modes = []string{"frame", "shm", "local"}
	}
	if cfg.EpochBatches < 1 {
		cfg.EpochBatches = 8
	}
	if cfg.Python == "" {
		py, err := PickPython(cfg.PythonPath, cfg.PyG)
		if err != nil {
			return nil, err
		}
		cfg.Python = py
	}
	progress := cfg.Progress
	if progress == nil {
		progress = func(string) {}
	}
	d, err := dataset.Open(cfg.Dataset)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	if d.Train == nil || d.FeatureArray == nil {
		return nil, fmt.Errorf("%s: the benchmark needs a train split and features", cfg.Dataset)
	}
	st, err := feature.Open(d, feature.Options{Workers: 1})
	if err != nil {
		return nil, err
	}
	defer st.Close()
	// Every side times the same batches of one epoch: the Go loader and
	// client stop at the epoch's end, so the Python client (which would
	// go on into the next) is asked for no more.
	perEpoch := samplersvc.EpochSpec{BatchSize: cfg.BatchSize, Shards: 1}.NumBatches(len(d.Train))
	asked := cfg.Batches
	if cfg.Batches, err = timedBatches(asked, perEpoch); err != nil {
		return nil, fmt.Errorf("%s: %w", cfg.Dataset, err)
	}
	addr, stop, err := Serve(ctx, cfg.Graphmill, cfg.Dataset)
	if err != nil {
		return nil, err
	}
	defer stop()
	rep := &Report{Machine: isa.Describe(), Dataset: cfg.Dataset, Nodes: d.Meta.NumNodes, Edges: d.Meta.NumEdges, FeatureDim: d.Meta.FeatureDim,
		Fanouts: cfg.Fanouts, BatchSize: cfg.BatchSize, Batches: cfg.Batches, BatchesPerEpoch: perEpoch, Rounds: cfg.Rounds, Workers: cfg.Workers,
		PythonInterpreter: cfg.Python, PythonMalloc: pythonMalloc(cfg)}
	if asked != cfg.Batches {
		rep.BatchesRequested = asked
		progress(fmt.Sprintf("timing %d batches (one epoch), not the %d asked for", cfg.Batches, asked))
	}
	best := map[string]Python{}
	rounds := map[string][]Round{}
	// Warm-up, not counted: the first pass maps the graph and feature
	// pages in (the page cache may be cold after generating).
	if _, err := goLoader(ctx, d, st, cfg, 1000, false); err != nil {
		return nil, fmt.Errorf("go loader: %w", err)
	}
	// Each round: the Go loader, the Go client, then the Python client in
	// every mode, taking turns (membench.Alternate).
	var rate, crate float64
	runs := []func(int) error{func(r int) error {
		var err error
		if rate, err = goLoader(ctx, d, st, cfg, r, false); err != nil {
			return fmt.Errorf("go loader: %w", err)
		}
		rep.GoLoader = max(rep.GoLoader, rate)
		progress(fmt.Sprintf("round %d: go loader %.1f batches/s", r+1, rate))
		return nil
	}, func(r int) error {
		var mib float64
		var err error
		if crate, mib, err = goClient(ctx, addr, d, cfg, r); err != nil {
			return fmt.Errorf("go client: %w", err)
		}
		rep.GoClient = max(rep.GoClient, crate)
		rep.GoFrameMiB = mib
		progress(fmt.Sprintf("round %d: go client %.1f batches/s (%.1f MiB frames)", r+1, crate, mib))
		return nil
	}}
	for _, m := range cfg.Modes {
		runs = append(runs, func(r int) error {
			p, err := python(ctx, addr, cfg, m, cfg.PyG && r == 0 && m == cfg.Modes[0])
			if err != nil {
				return err
			}
			if p.Batches != cfg.Batches {
				return fmt.Errorf("python (%s): timed %d batches, not the %d the Go sides time", m, p.Batches, cfg.Batches)
			}
			if m == "shm" && p.Transport != "shm" {
				return fmt.Errorf("python (shm): the service sent the payloads over %q, not shared memory", p.Transport)
			}
			if len(p.PyG) > 0 {
				var v any
				if json.Unmarshal(p.PyG, &v) == nil {
					rep.PyG = v
				}
				p.PyG = nil
			}
			if p.BatchesPerS > best[m].BatchesPerS {
				best[m] = p
			}
			rounds[m] = append(rounds[m], Round{BatchesPerS: p.BatchesPerS, GoLoader: rate, GoClient: crate,
				RatioToGoLoader: p.BatchesPerS / rate, RatioToGoClient: p.BatchesPerS / crate})
			progress(fmt.Sprintf("round %d: python (%s) %.1f batches/s, %.2f copies/batch", r+1, m, p.BatchesPerS, p.CopiesPerBatch))
			return nil
		})
	}
	if err := membench.Alternate(cfg.Rounds, runs...); err != nil {
		return nil, err
	}
	for _, m := range cfg.Modes {
		p := best[m]
		p.Rounds = rounds[m]
		var rl, rc []float64
		for _, x := range p.Rounds {
			rl = append(rl, x.RatioToGoLoader)
			rc = append(rc, x.RatioToGoClient)
		}
		p.RatioToGoLoader, p.RatioToGoClient = median(rl), median(rc)
		rep.Python = append(rep.Python, p)
	}
	if cfg.PyG {
		// The drop-in's Go loader draws as PyG's loader does (frontier), as
		// graphmill.NeighborLoader's service does: the same work per batch.
		goRate := func(r int) (float64, error) { return goLoader(ctx, d, st, cfg, 2000+r, true) }
		if err := dropIn(ctx, cfg, rep, progress, goRate); err != nil {
			return nil, err
		}
	}
	if cfg.Device != "" && cfg.Device != "cpu" {
		if err := dropInDevice(ctx, cfg, rep, progress); err != nil {
			return nil, err
		}
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		rep.LoadAverage = string(bytes.TrimSpace(b))
	}
	return rep, nil
}

// timedBatches is the number of batches every side times: asked, or one
// epoch's perEpoch if fewer. The clients' rates span the intervals
// between batches, so at least two are needed.
func timedBatches(asked, perEpoch int) (int, error) {
	n := min(asked, perEpoch)
	if n < 2 {
		return 0, fmt.Errorf("%d batches per measurement (%d asked, %d in an epoch): the rates need at least 2", n, asked, perEpoch)
	}
	return n, nil
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func lastLine(s string) string {
	s = string(bytes.TrimSpace([]byte(s)))
	if i := bytes.LastIndexByte([]byte(s), '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// dropInArgs are python -m graphmill.bench's arguments for a drop-in
// comparison of cfg.
func dropInArgs(cfg Config) []string {
	return []string{"--dropin", "--dataset", cfg.Dataset, "--fanouts", sample.FormatFanouts(cfg.Fanouts), "--batch-size", fmt.Sprint(cfg.BatchSize),
		"--batches", fmt.Sprint(cfg.Batches), "--rounds", fmt.Sprint(cfg.Rounds), "--epoch-batches", fmt.Sprint(cfg.EpochBatches),
		"--workers", fmt.Sprint(cfg.Workers), "--seed", fmt.Sprint(cfg.Seed)}
}

// dropInDevice runs the drop-in comparison with batches on cfg.Device
// (python -m graphmill.bench --dropin --device) into rep.DropInDevice.
func dropInDevice(ctx context.Context, cfg Config, rep *Report, progress func(string)) error {
	args := append(dropInArgs(cfg), "--device", cfg.Device, "--caches", strings.Join(cfg.Caches, ","))
	if err := runBench(ctx, cfg, args, &rep.DropInDevice, nil); err != nil {
		return fmt.Errorf("drop-in comparison on %s: %w", cfg.Device, err)
	}
	var r deviceDropIn
	if err := json.Unmarshal(rep.DropInDevice, &r); err != nil {
		return fmt.Errorf("drop-in comparison on %s, output: %w", cfg.Device, err)
	}
	if r.Skipped != "" {
		progress(fmt.Sprintf("drop-in comparison on %s skipped: %s", cfg.Device, r.Skipped))
		return nil
	}
	for _, l := range r.Loaders {
		progress(fmt.Sprintf("graphmill.NeighborLoader on %s (%s), cache %s: %.1f batches/s, step %.1f ms (%.2f x the step on a resident batch)",
			r.Device, r.GPU, l.Cache, l.BatchesPerS, 1000*l.StepS, l.ComputeOverStep))
	}
	return nil
}

// deviceDropIn is the part of DropInDevice's JSON printed here.
type deviceDropIn struct {
	Skipped string `json:"skipped"`
	Device  string `json:"device"`
	GPU     string `json:"gpu"`
	Loaders []struct {
		Cache           string   `json:"feature_cache"`
		BatchesPerS     float64  `json:"batches_per_s"`
		StepS           float64  `json:"step_s"`
		HitRate         *float64 `json:"hit_rate"`
		MiBToDevice     float64  `json:"mib_to_device_per_batch"`
		ComputeOverStep float64  `json:"compute_over_step"`
		VsPyGLoader     float64  `json:"vs_pyg_loader"`
		VsPyGEpoch      float64  `json:"vs_pyg_epoch"`
	} `json:"loaders"`
	PyG struct {
		Skipped     string  `json:"skipped"`
		BatchesPerS float64 `json:"batches_per_s"`
		StepS       float64 `json:"step_s"`
	} `json:"pyg"`
	ComputeStepS float64 `json:"compute_step_s"`
}

// dropIn runs graphmill.NeighborLoader against PyG's NeighborLoader
// (python -m graphmill.bench --dropin) and fills the report's drop-in
// figures; a Python without PyG reports why it skipped. goRate times the
// Go loader at the start of each of its rounds (its r-th call), while the
// Python side waits: NeighborRatioToGoLoader is the median of the rounds'
// ratios.
func dropIn(ctx context.Context, cfg Config, rep *Report, progress func(string), goRate func(r int) (float64, error)) error {
	args := dropInArgs(cfg)
	var raw json.RawMessage
	round := 0
	pace := func() (float64, error) {
		rate, err := goRate(round)
		if err == nil {
			progress(fmt.Sprintf("drop-in round %d: go loader %.1f batches/s", round+1, rate))
		}
		round++
		return rate, err
	}
	if err := runBench(ctx, cfg, args, &raw, pace); err != nil {
		return fmt.Errorf("drop-in comparison: %w", err)
	}
	rep.DropIn = raw
	var r struct {
		Skipped     string  `json:"skipped"`
		Ours        float64 `json:"graphmill_batches_per_s"`
		PyG         float64 `json:"pyg_batches_per_s"`
		VsPyGLoader float64 `json:"vs_pyg_loader"`
		VsPyGEpoch  float64 `json:"vs_pyg_epoch"`
		VsGoLoader  float64 `json:"vs_go_loader"`
		PyGSkipped  struct {
			Skipped string `json:"skipped"`
		} `json:"pyg"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return fmt.Errorf("drop-in comparison output: %w", err)
	}
	if r.Skipped != "" {
		progress("drop-in comparison skipped: " + r.Skipped)
		return nil
	}
	rep.VsPyGLoader, rep.VsPyGEpoch, rep.NeighborLoader, rep.PyGNeighborLoader = r.VsPyGLoader, r.VsPyGEpoch, r.Ours, r.PyG
	rep.NeighborRatioToGoLoader = r.VsGoLoader
	if r.PyGSkipped.Skipped != "" { // ours alone: PyG cannot sample here
		progress(fmt.Sprintf("graphmill.NeighborLoader %.1f batches/s (%.2fx the go loader); %s",
			r.Ours, rep.NeighborRatioToGoLoader, r.PyGSkipped.Skipped))
		return nil
	}
	progress(fmt.Sprintf("graphmill.NeighborLoader %.1f batches/s, PyG's %.1f: %.2fx; a GraphSAGE step %.2fx PyG's speed",
		r.Ours, r.PyG, r.VsPyGLoader, r.VsPyGEpoch))
	return nil
}

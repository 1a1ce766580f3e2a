package main

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/graphmill/graphmill/feature"
	"github.com/graphmill/graphmill/internal/cli"
	"github.com/graphmill/graphmill/internal/memstat"
	"github.com/graphmill/graphmill/internal/units"
	"github.com/graphmill/graphmill/job"
	"github.com/graphmill/graphmill/nn"
	"github.com/graphmill/graphmill/sample"
	"github.com/graphmill/graphmill/sar"
	"github.com/graphmill/graphmill/tensor"
	"github.com/graphmill/graphmill/train"
)

// trainFlags are the flags of "graphmill train".
type trainFlags struct {
	dataset, model, mode              string
	epochs, hidden, layers, heads     int
	lr, wd, dropout, attnDropout, mom float64
	optimizer, schedule               string
	evalFanouts                       string
	fanouts                           sample.Fanouts
	batch, prefetch, workers, threads int
	evalEvery, patience, logEvery     int
	overlap, normalize, halfHistory   bool
	mfg                               bool
	parts, partsPerBatch              int
	seed                              uint64
	metricsOut, plotOut, save         string
	stateFile, resume                 string
	stateEvery                        int
	maxMemory                         string
	featureCache, featureDType        string
	cachePolicy, graphOnDisk          string
	graphInMemory                     string
	superbatch                        int
	featuresInMemory                  string
	noEval                            bool
	quiet                             bool
	dist                              job.DistFlags
	ds                                distSampleFlags
}

func init() {
	rootCmd.AddCommand(newTrainCmd(), newEvalCmd(), newPredictCmd())
}

func newTrainCmd() *cobra.Command {
	var f trainFlags
	c := &cobra.Command{
		Use:   "train",
		Short: "Train a GNN (GCN, GraphSAGE, GAT, APPNP, GIN, GCNII, PNA, ...) and report its test accuracy",
		Long: `Train a GNN node classifier and report validation and test accuracy.

With no flags it trains a 2-layer GCN on the built-in Cora with the published settings
(hidden 16, dropout 0.5, Adam lr 0.01, weight decay 5e-4, 200 epochs) in a few seconds.
Each model has its own good defaults, listed under --model below; any flag given
overrides them. Models written outside graphmill register with nn.Register and train
through the same command when linked in (see examples/custom-layer).

Output paths (--save, --metrics-out, --plot) are checked before training starts. Ctrl-C
stops at the end of the current step, writes the best model so far (--save) and the
metrics (--metrics-out) if they were asked for, and exits with status 130. --state-file
saves the whole training state every epoch; --resume continues from it exactly.

The model with the best validation accuracy is kept (and saved with --save); the test
accuracy reported is that model's.

Under a launcher (graphmill launch, torchrun, mpirun, srun, a Kubeflow PyTorchJob or a
Kubernetes Indexed Job) it trains data-parallel, in sampled mode only (--mode sampled, or a
model sampled by default such as sage; GIN's batch norm keeps per-rank statistics): rank 0's weights are
broadcast, each rank trains on its share of every batch (--batch seeds per rank), gradients
are all-reduced, and only rank 0 prints, writes metrics and saves checkpoints.

With --mode sar, sa or one-shot it trains full-graph over a partitioned dataset ('graphmill
partition --parts P', P a multiple of the ranks), alone or under any of those launchers: each
rank holds P/N parts and fetches the other ranks' boundary rows per layer (sar: one rank at a
time, freed after use, so memory per rank falls as 1/N; one-shot: all at once). The run equals
--mode full on the whole dataset up to float32 rounding (same dropout masks); --mfg computes
each layer on the training nodes' receptive field only.`,
		Example: `  graphmill train
  graphmill train --model gat --epochs 300 --plot curves.png
  graphmill train --model sage --mode sampled --fanouts 25,10 --batch 256 --save sage.safetensors
  graphmill train --dataset data/citeseer --metrics-out run.json
  graphmill launch -n 4 -- graphmill train --model sage
  graphmill partition --parts 4 data/citeseer --out data/citeseer-4
  graphmill launch -n 4 -- graphmill train --model gcn --mode sar --dataset data/citeseer-4`,
		Args: cli.NoArgs("give the dataset with --dataset DIR (default: the built-in cora)"),
		RunE: func(cmd *cobra.Command, _ []string) error { return runTrain(cmd, &f) },
	}
	fl := c.Flags()
	fl.StringVar(&f.dataset, "dataset", "cora", "dataset directory, or \"cora\" for the built-in Cora")
	fl.StringVar(&f.model, "model", "gcn", "model, one of:\n"+nn.KindsHelp())
	fl.StringVar(&f.mode, "mode", "", "training loop: full (whole graph per step), sampled (neighbour-sampled minibatches) or gas (GNNAutoScale: batches of graph parts with historical embeddings); default per model (see --model).\nOn a partitioned dataset ('graphmill partition'), under any number of ranks: sar (full-graph steps, other ranks' boundary rows fetched one rank at a time and freed: memory per rank falls as 1/N), sa (sar keeping GAT's fetched rows for backward) or one-shot (all boundary rows in one exchange per layer)")
	cli.PositiveVar(fl, &f.epochs, "epochs", 0, "maximum number of epochs (default per model, see --model)")
	cli.PositiveVar(fl, &f.hidden, "hidden", 0, "hidden width (GAT: per head) (default per model, see --model)")
	cli.PositiveVar(fl, &f.layers, "layers", 0, "number of message-passing layers (appnp: propagation steps K) (default per model, see --model)")
	cli.PositiveVar(fl, &f.heads, "heads", 0, "attention heads in hidden layers (gat; default per model)")
	fl.Float64Var(&f.lr, "lr", 0, "learning rate (default per model, see --model)")
	fl.Float64Var(&f.wd, "weight-decay", -1, "weight decay (default per model, on the layers its paper decays: 5e-4 for most, see --model)")
	fl.Float64Var(&f.dropout, "dropout", -1, "dropout on each layer's input (default per model, see --model)")
	fl.Float64Var(&f.attnDropout, "attn-dropout", -1, "dropout on attention coefficients (gat; default per model)")
	fl.StringVar(&f.optimizer, "optimizer", "adam", "optimizer: adam, adamw or sgd")
	fl.Float64Var(&f.mom, "momentum", 0, "SGD's momentum (with --optimizer sgd)")
	fl.StringVar(&f.schedule, "lr-schedule", "constant", "learning-rate schedule: constant, step (x0.5 every epochs/4) or cosine")
	job.FanoutsFlag(fl, &f.fanouts, []int{25, 10}, "sampled mode")
	fl.IntVar(&f.batch, "batch", 0, "sampled mode: seed nodes per minibatch (default 64)")
	fl.IntVar(&f.prefetch, "prefetch", 4, "sampled mode: minibatches prepared ahead of training")
	cli.CountVar(fl, &f.workers, "workers", 0, "sampled mode: sampling goroutines (0 = all cores)")
	fl.IntVar(&f.parts, "parts", 40, "gas mode: number of graph parts (multilevel partitioner)")
	fl.IntVar(&f.partsPerBatch, "parts-per-batch", 10, "gas mode: parts per batch (shuffled each epoch)")
	fl.BoolVar(&f.halfHistory, "half-history", false, "gas mode: store historical embeddings as float16 (half the memory)")
	fl.BoolVar(&f.mfg, "mfg", false, "sar, sa, one-shot modes: compute each layer only on the receptive field of the training nodes (message flow graphs; the same gradients, less work when few nodes are labelled)")
	fl.StringVar(&f.maxMemory, "max-memory", "", maxMemoryHelp)
	fl.StringVar(&f.cachePolicy, "cache-policy", "", "the rows the feature cache starts with: degree (highest out-degree) or presample (the nodes one presampled epoch reached most often, then by degree) (default: presample when reading from disk in sampled mode, else degree)")
	fl.StringVar(&f.graphOnDisk, "graph-on-disk", "auto", "a graph larger than memory: yes gives the graph's files random-access advice, so that a page fault reads its page and no readahead window (without it, sampling such a graph can read it from disk hundreds of times over), and reads the pages each hop is about to touch ahead with many reads in flight; advice gives the advice alone; no neither; auto is yes when the graph's arrays take more than half the available memory")
	fl.IntVar(&f.superbatch, "superbatch", 10, "reading features from disk in sampled mode: plan the cache over this many batches ahead (Ginex): a missed row replaces the cached row used farthest ahead; 0 keeps the cache static")
	fl.StringVar(&f.graphInMemory, "graph-in-memory", "auto", "sampled and GAS training: yes reads the graph from a copy in huge-page memory made at start (minibatches drawn in 0.87 of the time on a 10M-node graph: the file mapping's 4 KiB pages miss the TLB on every random read), no through its file mapping; auto copies it when it takes at most half the memory left after the features, and no --max-memory, graph or features on disk apply")
	fl.StringVar(&f.featureCache, "feature-cache", "", "keep the rows of the most sampled nodes (see --cache-policy) in memory, up to this size (e.g. 2GiB), in front of the feature file (read from disk, or mapped: see --features-in-memory); the hit rate is reported (default: from disk, what the available memory leaves after the graph and two batches; mapped, no cache)")
	fl.StringVar(&f.featureDType, "feature-dtype", "", "hold the features in memory as float16 or bfloat16 (half of float32's memory; converted once at start), or read them as stored (default: as stored; where from, see --features-in-memory)")
	fl.StringVar(&f.featuresInMemory, "features-in-memory", train.FeaturesAuto, "where sampled and GAS training read the features from: yes copies them into huge-page memory at start (gathers 1.25-1.3x faster than through the file's mapping); no reads them from disk with explicit batched reads (io_uring, O_DIRECT) behind a cache of the most sampled rows filled by one sequential pass (features larger than memory; the cache's size is --feature-cache, or chosen from the available memory); mapped reads them through the file's memory mapping (with --feature-cache's rows in memory); auto copies them when they take at most half the available memory and no --max-memory, --feature-cache or --feature-dtype is set, reads them from disk when they do not fit, and maps them otherwise")
	cli.CountVar(fl, &f.threads, "threads", 0, "kernel threads (0 = all cores)")
	fl.IntVar(&f.evalEvery, "eval-every", 1, "evaluate on validation and test every k epochs")
	fl.StringVar(&f.evalFanouts, "eval-fanouts", "", "evaluate on neighbourhoods sampled with these fanouts (-1 or all = every neighbour: the same scores) instead of layer-wise inference, which holds every node's hidden rows in memory (default: layer-wise; from disk, the training fanouts when those rows would not fit)")
	fl.BoolVar(&f.noEval, "no-eval", false, "train without any evaluation (throughput and memory benchmarks); the last epoch's weights are kept")
	fl.IntVar(&f.patience, "patience", -1, "stop after this many evaluations in a row that neither match the best validation accuracy nor the lowest validation loss so far (as the GAT authors' code; 0 = never; default per model, see --model)")
	cli.CountVar(fl, &f.logEvery, "log-every", 0, "print a line every k evaluations (default: 10 in full and GAS mode, 1 in sampled mode)")
	fl.BoolVar(&f.overlap, "overlap-eval", false, "evaluate epoch k on a snapshot of the weights while epoch k+1 trains")
	fl.BoolVar(&f.normalize, "normalize-features", false, "row-normalise the features (PyG's NormalizeFeatures), as the published Planetoid settings do (default per model: yes but for gin)")
	fl.Uint64Var(&f.seed, "seed", 0, "random seed (initialisation, dropout, shuffling, sampling)")
	fl.StringVar(&f.metricsOut, "metrics-out", "", "write the per-epoch history and the summary as JSON to this file")
	fl.StringVar(&f.plotOut, "plot", "", "draw loss and accuracy curves to this file (.png, .svg or .pdf)")
	fl.StringVar(&f.save, "save", "", "save the best model to this safetensors file (loadable by PyTorch)")
	fl.StringVar(&f.stateFile, "state-file", "", "write the training state (weights, optimiser, epoch, best model, history) to this file after every --state-every epochs, atomically, so that a run killed or crashed continues with --resume (see docs/cli.md); an existing file is refused unless resumed")
	fl.StringVar(&f.resume, "resume", "", "continue the run whose training state this file holds (written by --state-file) from its last epoch, with the same settings and dataset (others are refused); the state goes on being written to it unless --state-file names another file")
	cli.PositiveVar(fl, &f.stateEvery, "state-every", 0, "write the training state every k epochs, and after the last (default 1)")
	fl.BoolVar(&f.quiet, "quiet", false, "print only the final summary")
	f.dist.Add(fl)
	f.ds.add(fl)
	// These take -1 for "the model's default", which their help states;
	// without this, --help would add a meaningless "(default -1)".
	for _, name := range []string{"weight-decay", "dropout", "attn-dropout", "patience"} {
		fl.Lookup(name).DefValue = "0"
	}
	return c
}

// buildConfig turns flags into a train.Config on top of the model's defaults.
func buildConfig(cmd *cobra.Command, f *trainFlags) (train.Config, error) {
	kind, err := nn.ParseKind(f.model)
	if err != nil {
		return train.Config{}, err
	}
	cfg := train.Defaults(kind)
	cfg.FreeOSMemory = true // the summary's memory figures are the epochs'
	fl := cmd.Flags()
	set := func(name string) bool { return fl.Changed(name) }
	if set("mode") {
		cfg.Mode = train.Mode(strings.ToLower(f.mode))
	}
	if set("epochs") {
		cfg.Epochs = f.epochs
	}
	if set("hidden") {
		cfg.Model.Hidden = f.hidden
	}
	if set("layers") {
		cfg.Model.Layers = f.layers
	}
	if set("heads") {
		cfg.Model.Heads = f.heads
	}
	if set("lr") {
		cfg.Optimizer.LR = f.lr
	}
	if set("weight-decay") {
		cfg.Optimizer.WeightDecay = f.wd
	}
	if set("dropout") {
		cfg.Model.Dropout = f.dropout
	}
	if set("attn-dropout") {
		cfg.Model.AttnDropout = f.attnDropout
	}
	cfg.Optimizer.Name, cfg.Optimizer.Momentum = f.optimizer, f.mom
	if err := nn.ParseSchedule(f.schedule); err != nil {
		return cfg, err
	}
	cfg.Schedule = nn.Schedule{Kind: f.schedule, Base: cfg.Optimizer.LR, StepSize: max(1, cfg.Epochs/4), Gamma: 0.5, Epochs: cfg.Epochs}
	if set("fanouts") {
		cfg.Fanouts = slices.Clone(f.fanouts)
	} else if n := nn.NumLayers(cfg.Model); len(cfg.Fanouts) != n {
		cfg.Fanouts = train.DefaultFanouts(n)
	}
	if set("batch") {
		cfg.BatchSize = f.batch
	}
	cfg.Prefetch, cfg.Workers, cfg.Threads = f.prefetch, f.workers, f.threads
	cfg.Parts, cfg.PartsPerBatch, cfg.HalfHistory = f.parts, f.partsPerBatch, f.halfHistory
	cfg.EvalEvery, cfg.SkipEval = f.evalEvery, f.noEval
	if f.evalFanouts != "" {
		if cfg.EvalFanouts, err = sample.ParseFanouts(f.evalFanouts); err != nil {
			return cfg, fmt.Errorf("--eval-fanouts: %w", err)
		}
	}
	if set("patience") {
		cfg.Patience = f.patience
	}
	cfg.OverlapEval = f.overlap
	if set("normalize-features") {
		cfg.NormalizeFeatures = f.normalize
	}
	cfg.Seed, cfg.Model.Seed = f.seed, f.seed
	if cfg.MaxMemoryBytes, err = cli.ParseMaxMemory(f.maxMemory); err != nil {
		return cfg, err
	}
	cfg.CachePolicy, cfg.Superbatch, cfg.GraphOnDisk, cfg.GraphInMemory = f.cachePolicy, f.superbatch, f.graphOnDisk, f.graphInMemory
	if f.featureCache != "" {
		if cfg.FeatureCacheBytes, err = units.ParseBytes(f.featureCache); err != nil || cfg.FeatureCacheBytes < 0 {
			return cfg, fmt.Errorf("--feature-cache %q: want a size such as 2GiB", f.featureCache)
		}
	}
	cfg.FeaturesInMemory = f.featuresInMemory
	if f.featureDType != "" {
		if _, err := feature.ParseDType(f.featureDType); err != nil {
			return cfg, fmt.Errorf("--feature-dtype: %w", err)
		}
		cfg.FeatureDType = f.featureDType
	}
	return cfg, nil
}

// applyProcessSettings applies the run's process-wide settings, which the
// library never changes itself: the kernels' threads, and the Go
// runtime's soft memory limit, so the collector keeps the heap within it
// instead of letting it grow to twice the live heap: goLimit when set
// (train.Runner.GoMemoryLimit: under a memory bound, features read from
// disk). It returns a function that restores them.
func applyProcessSettings(cfg train.Config, goLimit int64) func() {
	prevThreads := tensor.Threads()
	if cfg.Threads > 0 {
		tensor.SetThreads(cfg.Threads)
	}
	prevLimit := debug.SetMemoryLimit(-1)
	if goLimit > 0 {
		debug.SetMemoryLimit(goLimit)
	}
	return func() {
		tensor.SetThreads(prevThreads)
		debug.SetMemoryLimit(prevLimit)
	}
}

// inferMemoryHelp is --max-memory's help for eval and predict.
const inferMemoryHelp = `bound on the memory of one layer-wise inference batch (activations and the rows it gathers), e.g. 2GiB or 512M; batches shrink until they fit (default: no bound)`

const maxMemoryHelp = `bound on the memory a training step adds on top of what training starts from (activations, gradients, the batch's gathered rows and index arrays), e.g. 2GiB or 512M; a batch over it is split into micro-batches whose gradients are accumulated (the same gradients), and layer-wise inference batches shrink to fit. Not counted: what the process holds before the first step (the dataset's memory-mapped files, the feature cache, the --feature-dtype or --features-in-memory copy, GAS histories), so the resident set is this bound plus those (see README, "--max-memory") (default: no bound)`

// prepareTrain builds the run from the flags and refuses, before any
// work, what cannot run: the route, then the output paths.
func prepareTrain(cmd *cobra.Command, f *trainFlags) (cfg train.Config, spec job.Spec, outs job.Outputs, isSAR bool, err error) {
	if cfg, err = buildConfig(cmd, f); err != nil {
		return
	}
	_, sarErr := sar.ParseMode(string(cfg.Mode))
	isSAR = sarErr == nil
	// The flags a mode does not read: refused rather than ignored.
	notFor, why := map[train.Mode][]string{
		train.Full:    {"fanouts", "batch", "prefetch", "parts", "parts-per-batch", "half-history", "superbatch"},
		train.Sampled: {"parts", "parts-per-batch", "half-history"},
		train.GAS:     {"fanouts", "superbatch"},
	}[cfg.Mode], ""
	if isSAR {
		notFor, why = []string{"fanouts", "batch", "prefetch", "workers", "parts", "parts-per-batch", "half-history", "max-memory", "feature-cache", "cache-policy", "superbatch", "graph-on-disk", "graph-in-memory", "feature-dtype", "overlap-eval", "sampler", "remote-cache", "eval-fanouts", "features-in-memory"}, " (full-graph steps over the ranks' parts)"
	}
	if !cmd.Flags().Changed("mode") {
		why = fmt.Sprintf(" (%s's default; --mode picks another)", cfg.Model.Kind)
	}
	if verr := cfg.Validate(); verr != nil && !isSAR { // before the dataset is opened
		return cfg, spec, outs, isSAR, verr
	}
	for _, name := range notFor {
		if cmd.Flags().Changed(name) {
			return cfg, spec, outs, isSAR, fmt.Errorf("--%s does not apply to --mode %s%s", name, cfg.Mode, why)
		}
	}
	spec = job.Spec{Dataset: f.dataset, Config: cfg, Backend: f.dist.Backend(), MFG: f.mfg, Setup: applyProcessSettings,
		StateFile: f.stateFile, StateEvery: f.stateEvery, Resume: f.resume}
	if spec.Samplers, spec.ConnectTimeout, spec.Security, spec.RemoteCacheBytes, err = f.ds.parse(&f.dist); err != nil {
		return
	}
	if err = spec.Check(); err != nil {
		return
	}
	outs = job.Outputs{Save: f.save, Metrics: f.metricsOut, Plot: f.plotOut, State: cmp.Or(f.stateFile, f.resume)}
	if f.stateFile == "" && f.resume != "" {
		outs.StateFlag = "--resume"
	}
	err = outs.Check()
	return
}

func runTrain(cmd *cobra.Command, f *trainFlags) (err error) {
	cfg, spec, outs, isSAR, verr := prepareTrain(cmd, f)
	// A rank whose flags fail still joins, so that the others fail with
	// it instead of waiting for it until the rendezvous timeout.
	comm, info, err := f.dist.Join(cmd.Context())
	if err != nil || comm == nil && verr != nil {
		return errors.Join(verr, err)
	}
	out := cmd.OutOrStdout()
	if comm != nil {
		defer comm.Close()
		if err := job.PeersReady(cmd.Context(), comm, verr); err != nil {
			return err
		}
		spec.Comm = comm
		if info.Rank != 0 { // rank 0 alone reports and writes
			f.quiet, outs, out = true, job.Outputs{}, io.Discard
		} else if !f.quiet && !isSAR && job.IsPartitioned(f.dataset) {
			fmt.Fprintf(out, "distributed sampling over %d ranks (%s): batch %d in all, each rank taking the seeds its part owns\n", info.Size, info.Launcher, cfg.BatchSize)
		} else if !f.quiet && !isSAR {
			fmt.Fprintf(out, "data-parallel over %d ranks (%s): batch %d per rank, %d in all\n", info.Size, info.Launcher, cfg.BatchSize, cfg.BatchSize*info.Size)
		}
	}
	if !f.quiet {
		spec.Log = out
	}
	var bar *cli.Bar
	spec.Hooks = progressHooks(f, cfg, out, &bar)
	res, err := job.Train(cmd.Context(), spec)
	if bar != nil {
		bar.Finish()
	}
	// Interrupted (Ctrl-C, SIGTERM) or diverged after an evaluation: report
	// and write what there is, then return the error (the process exits
	// with the signal's status, or 1).
	if err != nil && !(train.Stopped(err) && res != nil) {
		return err
	}
	if err != nil {
		why := "interrupted"
		if errors.Is(err, train.ErrDiverged) {
			why = "the loss diverged"
		} else if errors.Is(err, train.ErrStateWrite) {
			why = "the training state could not be written"
		}
		keep := "keeping the best model so far"
		if res.Summary.BestEpoch < 0 {
			keep = "no evaluation yet: keeping the current weights, not validated"
		}
		fmt.Fprintf(out, "%s after %d epochs: %s\n", why, res.Summary.Epochs, keep)
	}
	printSummary2(out, res.Summary)
	if t := res.Summary.Traffic; isSAR && t != nil {
		printTraffic(out, t, !f.mfg)
	}
	return errors.Join(outs.Write(out, res), err)
}

// progressHooks are the run's progress bars and epoch lines (none with
// --quiet): a bar over epochs, or over each epoch's batches in sampled
// mode, and the cache fill's bar. *bar is the bar to finish at the end.
func progressHooks(f *trainFlags, cfg train.Config, out io.Writer, bar **cli.Bar) train.Hooks {
	hooks := train.Hooks{}
	if f.quiet {
		return hooks
	}
	logEvery := f.logEvery
	if logEvery <= 0 {
		logEvery = 10
		if cfg.Mode == train.Sampled {
			logEvery = 1
		}
	}
	// Every logEvery-th evaluation, counted from the epoch (a resumed run
	// prints the same lines as the run left alone).
	logEpoch := func(s train.EpochStats) {
		if s.ValAcc != nil && ((s.Epoch+1)/max(cfg.EvalEvery, 1))%logEvery == 0 {
			printEpoch(out, s)
		}
	}
	if cfg.Mode != train.Sampled {
		*bar = cli.NewBar(int64(cfg.Epochs), "training", "epochs")
		hooks.Epoch = func(s train.EpochStats) {
			(*bar).Set(int64(s.Epoch + 1))
			(*bar).Describe(fmt.Sprintf("loss %.4f", s.Loss))
			logEpoch(s)
		}
	} else {
		hooks.EpochStart = func(epoch, batches int) {
			*bar = cli.NewBar(int64(batches), fmt.Sprintf("epoch %d", epoch), "batches")
		}
		hooks.Batch = func(epoch, batch int, loss float64) {
			(*bar).Set(int64(batch + 1))
			(*bar).Describe(fmt.Sprintf("epoch %d loss %.4f", epoch, loss))
		}
		hooks.Epoch = func(s train.EpochStats) {
			(*bar).Finish()
			logEpoch(s)
		}
	}
	var fill *cli.Bar
	hooks.Fill = func(done, total int64) {
		if fill == nil {
			fill = cli.NewBar(total>>20, "filling the feature cache from disk", "MiB")
		}
		fill.Set(done >> 20)
		if done >= total {
			fill.Finish()
		}
	}
	return hooks
}

func printEpoch(w io.Writer, s train.EpochStats) {
	val, test := s.Accuracies()
	fmt.Fprintf(w, "epoch %4d  loss %.4f  train %.2f%%  val %s  test %s  %s\n",
		s.Epoch, s.Loss, 100*s.TrainAcc, percent(val), percent(test), units.Duration(cli.Seconds(s.Seconds)))
}

func printSummary2(w io.Writer, s train.Summary) {
	stop := ""
	if s.StoppedEarly {
		stop = ", stopped early"
	}
	if s.BestEpoch < 0 {
		fmt.Fprintf(w, "%d epochs, not evaluated\n", s.Epochs)
	} else {
		if math.IsNaN(s.BestValAcc) {
			fmt.Fprintf(w, "no validation nodes: the model of the last evaluated epoch, %d, is kept (%d epochs)\n", s.BestEpoch, s.Epochs)
		} else {
			fmt.Fprintf(w, "best validation accuracy %s at epoch %d (%d epochs%s)\n", percent(s.BestValAcc), s.BestEpoch, s.Epochs, stop)
		}
		fmt.Fprintf(w, "test accuracy %s\n", percent(s.TestAcc))
	}
	if s.Epochs == 0 { // stopped in its first epoch: no epoch's time to give
		fmt.Fprintf(w, "no epoch finished; %s in all after setup\n", units.Duration(cli.Seconds(s.TotalSeconds)))
	} else {
		fmt.Fprintf(w, "epoch time %s: sample %s, gather %s, compute %s, waiting %s (and %s for the first batch); %s seeds/s; %s in all after setup\n",
			units.Duration(cli.Seconds(s.EpochSeconds)), units.Duration(cli.Seconds(s.SampleSeconds)), units.Duration(cli.Seconds(s.GatherSeconds)), units.Duration(cli.Seconds(s.ComputeSeconds)),
			units.Duration(cli.Seconds(s.WaitSeconds)), units.Duration(cli.Seconds(s.FirstWaitSeconds)), units.Count(s.SeedsPerSecond), units.Duration(cli.Seconds(s.TotalSeconds)))
	}
	hist := ""
	if s.HistoryBytes > 0 {
		hist = ", of which histories " + units.Bytes(s.HistoryBytes)
	}
	fmt.Fprintf(w, "peak memory: Go heap %s, resident %s in an epoch%s; the process's peak resident set (VmHWM, setup and evaluation included) %s\n",
		units.Bytes(s.PeakHeapBytes), units.Bytes(s.PeakRSSBytes), hist, units.Bytes(memstat.ProcessPeak()))
	if s.MicroBatches > s.Batches {
		fmt.Fprintf(w, "memory bound: %d batches ran as %d micro-batches\n", s.Batches, s.MicroBatches)
	}
	if s.FeaturesInMemoryBytes > 0 {
		fmt.Fprintf(w, "features: read from a %s copy in memory (--features-in-memory no reads them from disk, mapped through the file mapping)\n", units.Bytes(s.FeaturesInMemoryBytes))
	}
	if s.FeatureCacheRows > 0 {
		fmt.Fprintf(w, "feature cache: %s rows in %s, hit rate %.1f%%\n", units.Count(s.FeatureCacheRows), units.Bytes(s.FeatureCacheBytes), 100*s.FeatureCacheHitRate)
	}
	if s.GraphInMemoryBytes > 0 {
		fmt.Fprintf(w, "graph: read from a %s copy in memory (--graph-in-memory no reads it through the file mapping)\n", units.Bytes(s.GraphInMemoryBytes))
	}
	if s.GraphOnDisk {
		if s.GraphReads > 0 {
			fmt.Fprintf(w, "graph: read from disk with random-access advice, %s read ahead of sampling in %s requests in flight (--graph-on-disk)\n",
				units.Bytes(s.GraphReadBytes), units.Count(s.GraphReads))
		} else {
			fmt.Fprintln(w, "graph: read from disk with random-access advice (--graph-on-disk)")
		}
	}
	if d := s.Disk; d != nil {
		budget := "--feature-cache"
		if d.AutoCache {
			budget = "chosen from the available memory"
			if d.CacheBudget == 0 {
				budget = "none fits beside the graph, the batches and evaluation; --no-eval or smaller --eval-fanouts leave room"
			}
		}
		ranked := ""
		if d.Policy != "" {
			ranked = fmt.Sprintf("rows ranked (%s) in %s, ", d.Policy, units.Duration(cli.Seconds(d.OrderSeconds)))
		}
		fmt.Fprintf(w, "features from disk (%s): cache budget %s (%s), %sfilled by one pass of %s in %s, opened in %s; first batch after %s; gathers read %s in %s requests (%s pages, %s pages/s while waiting); the kernel counted %s read, read amplification %.2f (over the %s the readers asked for, the fill and graph included)\n",
			d.Backend, units.Bytes(d.CacheBudget), budget, ranked, units.Bytes(d.FillBytes), units.Duration(cli.Seconds(d.FillSeconds)), units.Duration(cli.Seconds(d.OpenSeconds)), units.Duration(cli.Seconds(s.FirstBatchSeconds)),
			units.Bytes(d.ReadBytes), units.Count(d.Reads), units.Count(d.Pages), units.Count(d.PagesPerSecond), units.Bytes(s.KernelReadBytes), s.ReadAmplification, units.Bytes(s.DiskReadBytes))
		if d.Superbatch > 0 {
			fmt.Fprintf(w, "superbatch cache (%d batches ahead, started from the %s order): %s rows admitted, %s evicted; %d of %d gathers planned\n",
				d.Superbatch, d.Policy, units.Count(d.Admitted), units.Count(d.Evicted), d.Planned, d.Planned+d.Unplanned)
		}
		fmt.Fprintf(w, "memory at the end: process %s, feature cache %s, mapped files' page cache %s\n",
			units.Bytes(d.ProcessBytes), units.Bytes(d.CacheBytes), units.Bytes(d.PageCacheBytes))
		if d.Hint != "" {
			fmt.Fprintln(w, d.Hint)
		}
		if d.EvalNote != "" {
			fmt.Fprintln(w, d.EvalNote)
		}
	}
}

// printTraffic prints what all ranks sent per epoch: the rows and
// gradients of the training steps beside their analytic minimum (when
// withMin: full-graph steps), evaluation's rows, the all-reduces, and the
// busiest rank.
func printTraffic(w io.Writer, t *train.Traffic, withMin bool) {
	lo := ""
	if withMin {
		lo = ", analytic minimum " + units.Bytes(t.MinStepExchange)
	}
	fmt.Fprintf(w, "sent per epoch: all %d ranks %s (rows and gradients %s: training steps %s%s, evaluation %s; all-reduce %s); busiest rank %d: %s\n",
		t.Ranks, units.Bytes(t.Sent), units.Bytes(t.Exchange), units.Bytes(t.StepExchange), lo, units.Bytes(t.Exchange-t.StepExchange),
		units.Bytes(t.Reduce), t.BusiestRank, units.Bytes(t.RankSent[t.BusiestRank]))
}

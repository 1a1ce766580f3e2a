package train

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"runtime/debug"
	"slices"
	"time"

	"github.com/graphmill/graphmill/batch"
	"github.com/graphmill/graphmill/dataset"
	"github.com/graphmill/graphmill/engine"
	"github.com/graphmill/graphmill/feature"
	"github.com/graphmill/graphmill/graph"
	"github.com/graphmill/graphmill/internal/memstat"
	"github.com/graphmill/graphmill/internal/rng"
	"github.com/graphmill/graphmill/nn"
	"github.com/graphmill/graphmill/safetensors"
	"github.com/graphmill/graphmill/tensor"
)

// EpochStats is one epoch's record in the metrics history.
type EpochStats struct {
	Epoch    int     `json:"epoch"`
	Loss     float64 `json:"loss"`
	TrainAcc float64 `json:"train_acc"`
	// ValAcc and TestAcc are set on evaluated epochs.
	ValAcc  *float64 `json:"val_acc,omitempty"`
	TestAcc *float64 `json:"test_acc,omitempty"`
	ValLoss *float64 `json:"val_loss,omitempty"`
	LR      float64  `json:"lr"`
	Batches int      `json:"batches"`
	// MicroBatches counts the steps actually run: more than Batches when
	// the memory bound split some batches.
	MicroBatches int     `json:"micro_batches"`
	Seconds      float64 `json:"seconds"`
	// The epoch's time split: sampling and gathering (done by the pipeline's
	// goroutines, so they overlap compute), compute (forward, backward,
	// optimiser) and waiting for the pipeline: for the epoch's first batch
	// (the pipeline filling; with sampler services, the streams starting)
	// in FirstWaitSeconds, for the others in WaitSeconds.
	SampleSeconds    float64 `json:"sample_seconds"`
	GatherSeconds    float64 `json:"gather_seconds"`
	ComputeSeconds   float64 `json:"compute_seconds"`
	WaitSeconds      float64 `json:"wait_seconds"`
	FirstWaitSeconds float64 `json:"first_wait_seconds,omitempty"`
	// GatheredRows is the number of feature rows the loader gathered
	// (sampled training), GatherCPUSeconds the gathering's CPU time (its
	// thread's: without the time it waited for a core).
	GatheredRows     int64   `json:"gathered_rows,omitempty"`
	GatherCPUSeconds float64 `json:"gather_cpu_seconds,omitempty"`
	// SampleCPUSeconds is the sampling's CPU time (its threads', as for
	// GatherCPUSeconds; sampled training).
	SampleCPUSeconds float64 `json:"sample_cpu_seconds,omitempty"`
	EvalSeconds      float64 `json:"eval_seconds,omitempty"`
	// SamplerFailovers counts the sampler services lost during the epoch
	// whose batches went to the others (training from sampler services).
	SamplerFailovers int64 `json:"sampler_failovers,omitempty"`
	// Buffers is the number of minibatches the sampled pipeline let be
	// alive at once by the epoch's end: from disk, it grows from two when
	// it measures slow reads that batches prepared further ahead would
	// hide (pipeline.Config.MaxBuffers).
	Buffers int `json:"buffers,omitempty"`
	// PeakHeapBytes is the largest Go heap in use seen after a training
	// step of the epoch; PeakRSSBytes the process's resident-set high-water
	// mark during the epoch (Linux), or, after epochs shorter than 50 ms,
	// during the last 50 ms or so of epochs (the mark is read through /proc,
	// about 80 µs, at most that often).
	PeakHeapBytes int64 `json:"peak_heap_bytes"`
	PeakRSSBytes  int64 `json:"peak_rss_bytes"`
}

// Accuracies returns the epoch's validation and test accuracies, NaN
// where the epoch was not evaluated.
func (s EpochStats) Accuracies() (val, test float64) {
	val, test = math.NaN(), math.NaN()
	if s.ValAcc != nil {
		val = *s.ValAcc
	}
	if s.TestAcc != nil {
		test = *s.TestAcc
	}
	return val, test
}

// Summary is the outcome of a run.
type Summary struct {
	Model        string  `json:"model"`
	Mode         string  `json:"mode"`
	Dataset      string  `json:"dataset"`
	BestValAcc   float64 `json:"best_val_acc"`
	BestValLoss  float64 `json:"best_val_loss"`
	TestAcc      float64 `json:"test_acc"`
	BestEpoch    int     `json:"best_epoch"`
	Epochs       int     `json:"epochs"`
	StoppedEarly bool    `json:"stopped_early"`
	// EpochSeconds is the mean wall time of a training epoch (without
	// evaluation), and its split as in EpochStats.
	EpochSeconds   float64 `json:"epoch_seconds"`
	SampleSeconds  float64 `json:"sample_seconds"`
	GatherSeconds  float64 `json:"gather_seconds"`
	ComputeSeconds float64 `json:"compute_seconds"`
	WaitSeconds    float64 `json:"wait_seconds"`
	// FirstWaitSeconds is the mean wait for an epoch's first batch.
	FirstWaitSeconds float64 `json:"first_wait_seconds,omitempty"`
	SeedsPerSecond   float64 `json:"seeds_per_second"`
	TotalSeconds     float64 `json:"total_seconds"`
	NumParams        int     `json:"num_params"`
	// PeakHeapBytes and PeakRSSBytes are the largest over the epochs;
	// BaseHeapBytes is the heap when training starts (features, model,
	// optimiser state; and the setup's garbage not yet collected unless
	// Config.FreeOSMemory); HistoryBytes is the size of GAS's history
	// tables (0 otherwise).
	BaseHeapBytes int64 `json:"base_heap_bytes"`
	PeakHeapBytes int64 `json:"peak_heap_bytes"`
	PeakRSSBytes  int64 `json:"peak_rss_bytes"`
	HistoryBytes  int64 `json:"history_bytes,omitempty"`
	// Batches and MicroBatches count the training steps of the run, and
	// the pieces the memory bound cut them into.
	Batches      int `json:"batches"`
	MicroBatches int `json:"micro_batches"`
	// FeatureDType is the dtype features were read as; the cache fields
	// describe the hot-row cache (--feature-cache) and its hit rate over
	// the run's gathers.
	FeatureDType string `json:"feature_dtype,omitempty"`
	// FeaturesInMemoryBytes is the size of the in-memory copy the
	// features were read from (Config.FeaturesInMemory); 0 when they
	// were read through the file mapping.
	FeaturesInMemoryBytes int64   `json:"features_in_memory_bytes,omitempty"`
	FeatureCacheRows      int     `json:"feature_cache_rows,omitempty"`
	FeatureCacheBytes     int64   `json:"feature_cache_bytes,omitempty"`
	FeatureCacheHitRate   float64 `json:"feature_cache_hit_rate,omitempty"`
	// Disk describes the reads of features from disk (Config.FeaturesInMemory
	// "no", or auto on features larger than memory); nil otherwise.
	Disk *DiskSummary `json:"disk,omitempty"`
	// DiskReadBytes is what the run read from disk for its features (the
	// cache's fill and the gathers) and, for a graph on disk, the pages
	// read ahead of sampling (GraphReadBytes); KernelReadBytes is what the kernel
	// counted for the whole process (/proc/self/io read_bytes: the
	// dataset's other files too), for comparison. Both 0 unless features
	// were read from disk.
	DiskReadBytes   int64 `json:"disk_read_bytes,omitempty"`
	KernelReadBytes int64 `json:"kernel_read_bytes,omitempty"`
	// ReadAmplification is KernelReadBytes over DiskReadBytes: what the
	// process read from storage over what graphmill's readers asked for
	// (each gather's distinct pages of missed rows, the cache fill, the
	// graph's reads). 1: nothing read beyond those pages; readahead,
	// pages read twice or other files' reads raise it.
	ReadAmplification float64 `json:"read_amplification,omitempty"`
	// FirstBatchSeconds is the time from the runner's creation (before
	// the features are opened) to the arrival of the first training batch.
	FirstBatchSeconds float64 `json:"time_to_first_batch_seconds,omitempty"`
	// GraphOnDisk says whether the graph was read as a graph on disk,
	// with random-access advice (Config.GraphOnDisk).
	GraphOnDisk bool `json:"graph_on_disk,omitempty"`
	// GraphInMemoryBytes is the size of the huge-page copy the graph was
	// read from (Config.GraphInMemory); 0 when it was read through its
	// file mappings.
	GraphInMemoryBytes int64 `json:"graph_in_memory_bytes,omitempty"`
	// GraphReads and GraphReadBytes count the reads in flight that read
	// a graph on disk's pages ahead of sampling (dataset.GraphReader).
	GraphReads     int64  `json:"graph_reads,omitempty"`
	GraphReadBytes int64  `json:"graph_read_bytes,omitempty"`
	Seed           uint64 `json:"seed"`
	Threads        int    `json:"threads"`
	// Traffic is what the ranks of a distributed full-graph run (package
	// sar) sent; nil in the other modes.
	Traffic *Traffic `json:"traffic,omitempty"`
	// ResumedFrom is the number of epochs a resumed run found done
	// (Loop.Resume; 0: started afresh). StateWrites, StateSeconds and
	// StateBytes are this process's writes of the training-state file
	// (Loop.StateFile), their time in all, and the file's size.
	ResumedFrom  int     `json:"resumed_from,omitempty"`
	StateWrites  int     `json:"state_writes,omitempty"`
	StateSeconds float64 `json:"state_seconds,omitempty"`
	StateBytes   int64   `json:"state_bytes,omitempty"`
}

// Traffic is what the ranks of a distributed full-graph run sent, in
// bytes per training epoch: Sent in all, over all ranks, of which
// Exchange is the rows and gradients of the aggregations (the training
// steps' and evaluation's) and Reduce the all-reduces (at the ring's
// cost). StepExchange is the training steps' part of Exchange and
// MinStepExchange its analytic minimum (boundary rows forward, fetched
// rows' gradients backward; 0, and left out, with message flow graphs).
// RankSent and RankExchange are each rank's Sent and Exchange;
// BusiestRank sent the most (RankSent[BusiestRank]).
type Traffic struct {
	Ranks           int     `json:"ranks"`
	Sent            int64   `json:"sent_bytes_per_epoch"`
	Exchange        int64   `json:"exchange_bytes_per_epoch"`
	StepExchange    int64   `json:"step_exchange_bytes_per_epoch"`
	MinStepExchange int64   `json:"min_step_exchange_bytes_per_epoch,omitempty"`
	Reduce          int64   `json:"reduce_bytes_per_epoch"`
	BusiestRank     int     `json:"busiest_rank"`
	RankSent        []int64 `json:"rank_sent_bytes_per_epoch"`
	RankExchange    []int64 `json:"rank_exchange_bytes_per_epoch"`
}

// Result is what Run returns: the history, the summary and the trained
// model (with the best weights restored). Save writes it as a checkpoint.
type Result struct {
	History []EpochStats `json:"history"`
	Summary Summary      `json:"summary"`
	Model   *nn.Model    `json:"-"`
	// Config is the configuration the run trained with (Runner.Config:
	// NormalizeFeatures as applied; Loop.Config), which Save records.
	Config Config `json:"-"`
}

// Hooks receive progress; any may be nil. EpochStart, Batch and Epoch
// are called on the goroutine that runs Run (Loop.Run), one at a time,
// overlapped evaluation or not; Fill while NewRunner opens the features.
type Hooks struct {
	// EpochStart is called before each epoch, in every mode, with its
	// number of batches (training steps): 1 in full-graph mode.
	EpochStart func(epoch, batches int)
	// Batch is called after each training step with the step's loss: the
	// mean cross-entropy over that step's labelled seeds, not a running
	// mean over the epoch (EpochStats.Loss is the epoch's mean). batch is
	// the step's index in the epoch. Steps without labelled seeds are not
	// reported.
	Batch func(epoch, batch int, loss float64)
	// Epoch is called after each epoch (after its evaluation, if any, is
	// known; with overlapped evaluation that is one epoch later).
	Epoch func(EpochStats)
	// Fill is called as the sequential pass that fills the feature cache
	// from disk advances, with the bytes read and the file's size.
	Fill func(done, total int64)
}

// Runner holds the state of a training run on one dataset.
type Runner struct {
	cfg      Config
	ds       *dataset.Dataset
	feat     feature.Source       // the features every mode reads (see features.go)
	owned    *feature.Store       // the store NewRunner opened, closed by Close
	inMemory int64                // the bytes of owned's in-memory copy of the features (Config.FeaturesInMemory), or 0
	disk     *feature.Disk        // the features read from disk (openDisk), closed by Close
	graphIO  *dataset.GraphReader // a graph on disk's reads in flight (graphOnDisk), closed by Close
	// g is the graph every mode reads: ds.Graph, or its copy in memory
	// (Config.GraphInMemory), freed by Close with freeGraph.
	g         *graph.CSC
	freeGraph func()
	// batchBytes is estimateBatchBytes' estimate, made once.
	batchBytes int64
	// cacheBudget is the disk cache's budget (given or chosen), setupCtx
	// the context of NewRunner's setup (WithContext).
	cacheBudget int64
	evalNote    string // chooseEval's
	cachePolicy string
	goLimit     int64         // GoMemoryLimit's value
	orderTime   time.Duration // openDisk's cacheOrder
	openTime    time.Duration // openDisk in all
	startAvail  int64         // the memory available when NewRunner started
	diskHint    string
	// created is when NewRunner started, firstBatch the time from then
	// to the first training batch's arrival (setup, cache fill and the
	// pipeline's first batch).
	created    time.Time
	firstBatch time.Duration
	setupCtx   context.Context
	dense      tensor.Matrix // all rows as one matrix, once a mode needed it
	deg        []float32     // in-degrees, for GCN
	labels     []int32
	hooks      Hooks
	dp         *gradSync // data-parallel training (Config.Parallel)

	partitioner Partitioner
	heapPeak    int64 // largest heap seen after a step in this epoch

	closed      bool        // Close was called: the features are gone
	inference   bool        // made by Load: no training
	batches     BatchSource // WithBatches
	evaluator   Evaluator   // WithEvaluator
	degOverride []float32   // WithDegrees
	// statePath and stateEvery are WithState's, resume WithResume's.
	statePath  string
	stateEvery int
	resume     *State
	cacheAll   bool // the disk cache holds every feature row (openDisk)
	// noVal and noTest say the run's own validation or test split has no
	// labelled node (its scores are NaN: peakStepper.Evaluate).
	noVal, noTest bool
	id            *DatasetID // the dataset's identity, once computed (datasetID)

	// ws holds every step's activations, gradients and scratch (reset at
	// the start of each forward-backward piece), so steady-state steps
	// allocate nothing large; nil under a memory bound, where each
	// matrix is allocated and dropped as before.
	ws *tensor.Workspace
}

// noteFirstBatch records the arrival of the run's first training batch.
func (r *Runner) noteFirstBatch() {
	if r.firstBatch == 0 {
		r.firstBatch = time.Since(r.created)
	}
}

// notePeak samples the Go heap after a training step, when the step's
// activations and gradients are still alive.
func (r *Runner) notePeak() { r.heapPeak = max(r.heapPeak, memstat.HeapInUse()) }

// NewRunner checks cfg against the dataset and opens its features (see
// Option for other feature sources and GAS's partitioner). Close releases
// what it opened.
func NewRunner(ds *dataset.Dataset, cfg Config, hooks Hooks, opts ...Option) (*Runner, error) {
	return newRunner(ds, cfg, hooks, false, opts...)
}

// newRunner is NewRunner; for inference alone (Load) the dataset needs no
// labels or training split, and without labels the model's class count
// is the config's.
func newRunner(ds *dataset.Dataset, cfg Config, hooks Hooks, inference bool, opts ...Option) (*Runner, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if ds == nil || ds.Graph == nil {
		return nil, errNoDataset
	}
	m := ds.Meta
	unlabelled := ds.Labels == nil || m.NumClasses < 2
	if unlabelled && !inference {
		return nil, fmt.Errorf("dataset %s has no labels to train on", m.Name)
	}
	if cfg.Model.In != 0 && cfg.Model.In != m.FeatureDim {
		return nil, fmt.Errorf("model input width %d does not match the dataset's %d features", cfg.Model.In, m.FeatureDim)
	}
	if cfg.Model.Out != 0 && cfg.Model.Out != m.NumClasses && !unlabelled {
		return nil, fmt.Errorf("model output width %d does not match the dataset's %d classes", cfg.Model.Out, m.NumClasses)
	}
	if spec, ok := nn.Lookup(cfg.Model.Kind); ok && spec.EdgeWeights && (ds.Graph == nil || ds.Graph.Weights == nil) {
		return nil, fmt.Errorf("model %s aggregates by edge weights, and dataset %s has none (import one with them: an edge list with a third column, or an npz adjacency with weights)", cfg.Model.Kind, m.Name)
	}
	// One rank's part may hold only unlabelled training nodes; the whole
	// run may not (checked where the data is whole).
	whole := cfg.Parallel == nil || cfg.Parallel.Size() <= 1
	if err := checkSplits(ds, unlabelled, !inference && whole); err != nil {
		return nil, err
	}
	cfg.Model.In = m.FeatureDim
	if !unlabelled {
		cfg.Model.Out = m.NumClasses
	}
	r := &Runner{cfg: cfg, ds: ds, labels: ds.Labels, hooks: hooks, created: time.Now(), startAvail: memstat.Available(), g: ds.Graph,
		inference: inference}
	if cfg.MaxMemoryBytes == 0 {
		r.ws = tensor.NewWorkspace(0)
	}
	for _, o := range opts {
		o(r)
	}
	// A batch source (WithBatches) brings its own seeds: a distributed
	// sampler's part may own none of the training nodes.
	if len(ds.Train) == 0 && !inference && r.batches == nil {
		return nil, fmt.Errorf("dataset %s has an empty training split", m.Name)
	}
	if r.batches == nil && r.evaluator == nil {
		// The run's own splits (not a distributed rank's part).
		r.noVal, r.noTest = !labelled(r.labels, ds.Val), !labelled(r.labels, ds.Test)
	}
	if !inference && !cfg.SkipEval && r.noVal && ds.Labels != nil {
		slog.Warn("graphmill: the dataset has no labelled validation node: the last evaluated epoch's model is kept (no model selection) and patience cannot stop the run", "dataset", m.Name)
	}
	ctx := r.setupCtx
	if ctx == nil {
		ctx = context.Background()
	}
	if r.graphOnDisk() {
		ds.AdviseGraphRandom()
		if r.cfg.GraphOnDisk != "advice" {
			// The pages sampling touches are read ahead, a chunk of each
			// hop's nodes at a time, with many reads in flight.
			gio, err := ds.OpenGraphReader()
			if err != nil {
				return nil, err
			}
			r.graphIO = gio
		}
	}
	if err := r.openFeatures(ctx); err != nil {
		r.Close()
		return nil, err
	}
	if r.graphInMemory() {
		r.g, r.freeGraph = ds.GraphInMemory()
	}
	if r.degOverride != nil {
		if r.batches == nil && len(r.degOverride) < r.g.NumNodes {
			r.Close()
			return nil, fmt.Errorf("train: %d degrees for the %d nodes of dataset %s", len(r.degOverride), r.g.NumNodes, m.Name)
		}
		r.deg = r.degOverride
		return r, nil
	}
	deg := r.g.InDegrees()
	r.deg = make([]float32, len(deg))
	for i, d := range deg {
		r.deg[i] = float32(d)
	}
	return r, nil
}

// checkSplits checks the dataset's splits (dataset.CheckSplits: ids in
// the graph, none repeated or shared) and, when the dataset is labelled,
// that the labels cover the graph, that no split node's label reaches the
// class count (negative: unlabelled) and, with needLabelled, that some
// training node is labelled (with none, training learnt nothing and
// reported accuracies all the same): a bad id or label in a dataset built
// in memory is an error naming it here, not an index out of range in a
// step or an evaluation.
func checkSplits(ds *dataset.Dataset, unlabelled, needLabelled bool) error {
	n, classes := ds.Graph.NumNodes, ds.Meta.NumClasses
	labels := ds.Labels
	if unlabelled {
		labels = nil
	} else if len(labels) < n {
		return fmt.Errorf("dataset %s: %d labels for %d nodes", ds.Meta.Name, len(labels), n)
	}
	if err := dataset.CheckSplits(n, labels, ds.Train, ds.Val, ds.Test, false); err != nil {
		return fmt.Errorf("dataset %s: %w", ds.Meta.Name, err)
	}
	if labels == nil {
		return nil
	}
	for _, sp := range []struct {
		name string
		ids  []int32
	}{{"training", ds.Train}, {"validation", ds.Val}, {"test", ds.Test}} {
		for _, v := range sp.ids {
			if int(labels[v]) >= classes {
				return fmt.Errorf("dataset %s: node %d of the %s split has label %d, but the dataset has %d classes (labels 0 to %d; negative: unlabelled)", ds.Meta.Name, v, sp.name, labels[v], classes, classes-1)
			}
		}
	}
	if needLabelled && len(ds.Train) > 0 && !slices.ContainsFunc(ds.Train, func(v int32) bool { return labels[v] >= 0 }) {
		return fmt.Errorf("dataset %s: none of the %d training nodes is labelled (every label is -1): there is nothing to learn", ds.Meta.Name, len(ds.Train))
	}
	return nil
}

// Config returns the effective configuration (with In and Out filled, and
// NormalizeFeatures false when the features could not be normalised).
func (r *Runner) Config() Config { return r.cfg }

// Features returns the feature source the run reads (normalised on the fly
// when Config().NormalizeFeatures).
func (r *Runner) Features() feature.Source { return r.feat }

// engine returns the step engine of a run's model and optimiser: the
// run's memory bound, its feature source for batches that carry no rows,
// data-parallel gradient all-reduce, and heap-peak sampling after every
// backward.
func (r *Runner) engine(m *nn.Model, opt nn.Optimizer) *engine.Engine {
	e := engine.New(m, opt, engine.Config{Bound: r.cfg.MaxMemoryBytes, Features: r.feat, Sampled: r.cfg.Mode == Sampled, NodeDropout: r.cfg.Mode == Sampled, KeyIDs: r.ds.OrigIDs})
	e.AfterBackward = r.notePeak
	if r.dp != nil {
		e.Sync = r.dp
	}
	return e
}

// trainStep runs one training step and reports it to the Batch hook.
func (r *Runner) trainStep(ctx context.Context, e *engine.Engine, mb *batch.MiniBatch, st engine.Step) (engine.Result, error) {
	out, err := e.Train(ctx, mb, st)
	if err == nil && out.Total > 0 && r.hooks.Batch != nil {
		r.hooks.Batch(st.Epoch, st.Index, out.Loss)
	}
	return out, err
}

// errNoDataset is NewRunner's and Load's error for a nil or closed dataset
// (Dataset.Close clears its Graph).
var errNoDataset = errors.New("train: no dataset, or a closed one")

// errClosed is the error of a Runner's methods after Close.
var errClosed = errors.New("train: the runner is closed (Close released its features and graph)")

// fits checks that the runner is open and that m takes the dataset's
// features and predicts its classes.
func (r *Runner) fits(m *nn.Model) error {
	if r.closed {
		return errClosed
	}
	if m == nil {
		return errors.New("train: no model")
	}
	if c := m.Config; c.In != r.ds.Meta.FeatureDim || c.Out != r.cfg.Model.Out {
		return fmt.Errorf("train: the model takes %d features and predicts %d classes, but dataset %s has %d features and %d classes",
			c.In, c.Out, r.ds.Meta.Name, r.ds.Meta.FeatureDim, r.ds.Meta.NumClasses)
	}
	return nil
}

// NewModel builds a freshly initialised model for the run.
func (r *Runner) NewModel() (*nn.Model, error) { return nn.NewModel(r.cfg.Model, r.deg) }

// Degrees returns the in-degree table the run's models normalise with
// (the graph's, or WithDegrees'), indexed by node id: what nn.NewModel
// and nn.Model.Clone take for a model of this run. Do not modify it.
func (r *Runner) Degrees() []float32 { return r.deg }

// Evaluation holds the metrics of one evaluation (engine.Evaluation, which
// evaluators outside train, such as distributed sampling's, return).
type Evaluation = engine.Evaluation

// Evaluate returns the validation and test accuracy and the validation
// loss of m.
func (r *Runner) Evaluate(ctx context.Context, m *nn.Model) (Evaluation, error) {
	if err := r.fits(m); err != nil {
		return Evaluation{}, err
	}
	if r.evaluator != nil {
		return r.evaluator(ctx, m)
	}
	if r.cfg.EvalFanouts != nil {
		return r.sampledEval(ctx, m)
	}
	logits, err := r.Predict(ctx, m)
	if err != nil {
		return Evaluation{}, err
	}
	return r.score(logits), nil
}

// score computes the evaluation metrics from every node's logits.
func (r *Runner) score(logits tensor.Matrix) Evaluation {
	return Evaluation{
		ValAcc:  accuracy(logits, r.labels, r.ds.Val),
		TestAcc: accuracy(logits, r.labels, r.ds.Test),
		ValLoss: nllLoss(logits, r.labels, r.ds.Val),
	}
}

// Predict returns the model's logits for every node.
func (r *Runner) Predict(ctx context.Context, m *nn.Model) (tensor.Matrix, error) {
	if err := r.fits(m); err != nil {
		return tensor.Matrix{}, err
	}
	return Infer(ctx, m, r.g, r.inferSource(), r.cfg.EvalBatchSize, r.cfg.MaxMemoryBytes)
}

// evalJob is an evaluation of one epoch's weights, possibly running in the
// background.
type evalJob struct {
	epoch    int
	snapshot *nn.Model
	ev       Evaluation
	secs     float64
	err      error
	done     chan struct{}
}

// Run trains a model and returns its history, summary and the model with
// the best validation weights restored. Cancelled, it returns an error
// wrapping ErrInterrupted: with the result so far once an epoch has
// started (Loop.Run), with none while the run is still being set up.
func (r *Runner) Run(ctx context.Context) (*Result, error) {
	if r.closed {
		return nil, errClosed
	}
	cfg := r.cfg
	var id DatasetID
	if r.statePath != "" || r.resume != nil {
		if cfg.Parallel != nil && cfg.Parallel.Size() > 1 {
			return nil, fmt.Errorf("training state (a state file, resuming) is not supported in data-parallel training over %d ranks", cfg.Parallel.Size())
		}
		var err error
		if id, err = r.datasetID(ctx); err != nil {
			return nil, err
		}
		// Refused before the setup's work (GAS's partitioning).
		if err := r.CheckResume(ctx); err != nil {
			return nil, err
		}
	}
	model, err := r.NewModel()
	if err != nil {
		return nil, err
	}
	opt, err := r.optimizer(model)
	if err != nil {
		return nil, err
	}
	if cfg.Parallel != nil && cfg.Parallel.Size() > 1 {
		r.dp = newGradSync(ctx, cfg.Parallel, model)
		defer func() { r.dp.close(); r.dp = nil }()
		if err := r.dp.broadcast(); err != nil {
			return nil, err
		}
	}
	step, err := r.stepper(ctx, model, opt)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%w while setting up: %w", ErrInterrupted, err)
		}
		return nil, err
	}
	defer step.Close()
	// Setup (partitioning, feature copies) is over: return its garbage to
	// the system so per-epoch peaks show training alone (Config.FreeOSMemory).
	if cfg.FreeOSMemory {
		freeOSMemory()
	}
	var historyBytes int64
	if h, ok := step.(interface{ historyBytes() int64 }); ok {
		historyBytes = h.historyBytes()
	}
	return Loop{
		Config: cfg, Model: model, Optimizer: opt, Stepper: &peakStepper{r: r, Stepper: step}, Hooks: r.hooks,
		Summary: Summary{
			Model: string(cfg.Model.Kind), Mode: string(cfg.Mode), Dataset: r.ds.Meta.Name,
			NumParams: model.NumParams(), Seed: cfg.Seed, Threads: tensor.Threads(), HistoryBytes: historyBytes, BaseHeapBytes: memstat.HeapInUse(),
		},
		Seeds:     r.epochSeeds(),
		Clone:     func(m *nn.Model) *nn.Model { return cloneModel(m, r) },
		Finalize:  r.finalizeSummary,
		StateFile: r.statePath, StateEvery: r.stateEvery, Resume: r.resume, Dataset: id,
	}.Run(ctx)
}

// freeOSMemory is debug.FreeOSMemory (tests count the calls).
var freeOSMemory = debug.FreeOSMemory

// epochSeeds is the number of training seeds an epoch visits: the
// dataset's split, or what a batch source says it visits (a distributed
// sampler's whole split, over every rank's part).
func (r *Runner) epochSeeds() int {
	if n, ok := r.batches.(interface{ NumSeeds() int }); ok {
		return n.NumSeeds()
	}
	return len(r.ds.Train)
}

// peakStepper notes the largest heap the Runner's steppers see after a
// step (notePeak) as the epoch's peak.
type peakStepper struct {
	r *Runner
	Stepper
}

// NumBatches is the wrapped stepper's (see Loop's Hooks).
func (p *peakStepper) NumBatches() int { return epochBatches(p.Stepper) }

// stateTensors and restoreState are the wrapped stepper's (stateStepper),
// or nothing.
func (p *peakStepper) stateTensors() []safetensors.Tensor {
	if s, ok := p.Stepper.(stateStepper); ok {
		return s.stateTensors()
	}
	return nil
}

func (p *peakStepper) restoreState(st *State) error {
	if s, ok := p.Stepper.(stateStepper); ok {
		return s.restoreState(st)
	}
	return nil
}

// Evaluate is the wrapped stepper's, with the scores of a split without a
// labelled node NaN (not 0): the run's own splits (not a distributed
// rank's part) without validation nodes keep the last evaluated model
// (Selection.Observe), and the summary says n/a where there is nothing
// to score.
func (p *peakStepper) Evaluate(ctx context.Context, m *nn.Model) (Evaluation, error) {
	ev, err := p.Stepper.Evaluate(ctx, m)
	if err == nil && p.r.noVal {
		ev.ValAcc, ev.ValLoss = math.NaN(), math.NaN()
	}
	if err == nil && p.r.noTest {
		ev.TestAcc = math.NaN()
	}
	return ev, err
}

// labelled says whether one of ids has a label.
func labelled(labels, ids []int32) bool {
	return labels != nil && slices.ContainsFunc(ids, func(v int32) bool { return labels[v] >= 0 })
}

func (p *peakStepper) Epoch(ctx context.Context, epoch int) (EpochStats, error) {
	p.r.heapPeak = memstat.HeapInUse()
	st, err := p.Stepper.Epoch(ctx, epoch)
	st.PeakHeapBytes = p.r.heapPeak
	return st, err
}

// finalizeSummary adds the features' figures to the summary.
func (r *Runner) finalizeSummary(s *Summary) {
	s.FirstBatchSeconds = r.firstBatch.Seconds()
	s.GraphOnDisk = r.graphOnDisk()
	if r.freeGraph != nil {
		s.GraphInMemoryBytes = r.g.Bytes()
	}
	if r.graphIO != nil {
		st := r.graphIO.Stats()
		s.GraphReads, s.GraphReadBytes = st.Reads, st.Bytes
	}
	if st := r.owned; st != nil {
		s.FeatureDType, s.FeaturesInMemoryBytes = st.DType().String(), r.inMemory
		if cs := st.CacheStats(); cs.Rows > 0 {
			s.FeatureCacheRows, s.FeatureCacheBytes, s.FeatureCacheHitRate = cs.Rows, cs.Bytes, cs.HitRate()
		}
	}
	if d := r.disk; d != nil {
		s.FeatureDType = d.DType().String()
		if cs := d.CacheStats(); cs.Rows > 0 {
			s.FeatureCacheRows, s.FeatureCacheBytes, s.FeatureCacheHitRate = cs.Rows, cs.Bytes, cs.HitRate()
		}
		s.Disk = r.diskSummary()
		s.DiskReadBytes, s.KernelReadBytes = s.Disk.ReadBytes+s.Disk.FillBytes+s.GraphReadBytes, memstat.ReadBytes()
		s.ReadAmplification = amplification(s.KernelReadBytes, s.DiskReadBytes)
	}
}

// amplification is kernel bytes over the bytes asked for, or 0 (not
// measured) without either count (/proc/self/io unreadable, nothing read).
func amplification(kernel, asked int64) float64 {
	if kernel <= 0 || asked <= 0 {
		return 0
	}
	return float64(kernel) / float64(asked)
}

// ErrInterrupted wraps the context's error when Run stops early because
// its context was cancelled (Ctrl-C): Run then also returns the result so
// far, with the best model evaluated until then (or the current weights if
// none was evaluated), so that the caller can still save it.
var ErrInterrupted = errors.New("training interrupted")

// ErrDiverged is wrapped by Run's error when a step's loss is not finite
// (NaN or infinite). Once an evaluation has run, Run also returns the
// result so far with the best model evaluated until then, as when
// interrupted.
var ErrDiverged = engine.ErrDiverged

// ErrStateWrite is returned, wrapped with the cause, when writing the
// training state (Loop.StateFile) fails (a full disk): Run stops and
// returns the result so far with it, so that the model is not lost with
// the state.
var ErrStateWrite = errors.New("writing the training state failed")

// Stopped reports whether err is a run's early stop that comes with the
// result so far (ErrInterrupted, ErrDiverged, ErrStateWrite): the caller can still save
// its model.
func Stopped(err error) bool {
	return errors.Is(err, ErrInterrupted) || errors.Is(err, ErrDiverged) || errors.Is(err, ErrStateWrite)
}

// cloneModel returns a copy of m's weights in a new model (the snapshot an
// evaluation uses while training goes on).
func cloneModel(m *nn.Model, r *Runner) *nn.Model {
	c, err := m.Clone(r.deg)
	if err != nil {
		panic(err) // m was built from the same config
	}
	return c
}

func (r *Runner) optimizer(m *nn.Model) (nn.Optimizer, error) { return r.cfg.NewOptimizer(m) }

func (r *Runner) stepper(ctx context.Context, m *nn.Model, opt nn.Optimizer) (Stepper, error) {
	switch r.cfg.Mode {
	case Full:
		return r.fullStepper(ctx, m, opt)
	case GAS:
		return r.gasStepper(ctx, m, opt)
	}
	return r.sampledStepper(m, opt)
}

// fullStepper takes one step per epoch on the whole graph: a batch built
// once (every node a seed, labelled where it is a training node, one block
// shared by every layer) that the pipeline hands out every epoch.
type fullStepper struct {
	r      *Runner
	e      *engine.Engine
	whole  *batch.MiniBatch // the graph, every step's batch
	mb     batch.MiniBatch  // the step's view of it (Borrow)
	sparse bool             // the input carries its nonzeros (sparseInputDensity)
}

func (r *Runner) fullStepper(ctx context.Context, m *nn.Model, opt nn.Optimizer) (Stepper, error) {
	g := r.g
	whole := &batch.MiniBatch{}
	ids := make([]int32, g.NumNodes)
	for i := range ids {
		ids[i] = int32(i)
	}
	whole.SetInputs(ids, g.NumNodes)
	whole.Blocks = make([]graph.Block, len(m.Layers))
	for l := range whole.Blocks {
		whole.Blocks[l] = graph.Block{NumSrc: g.NumNodes, NumDst: g.NumNodes, Indptr: g.Indptr, Indices: g.Indices, Weights: g.Weights}
	}
	whole.Labels = r.trainLabels()
	e := r.engine(m, opt)
	var sparse *engine.SparseRows
	carry := r.cfg.MaxMemoryBytes <= 0
	if !carry {
		// Under a bound the micro-batches gather the input rows they need
		// from the source, so that the bound holds for the features too.
		// Where the step fits unsplit with every row gathered (and their
		// sparse twin, at most a fifth more), the rows are gathered once
		// and kept: the step's peak is the same, and it does not gather
		// and normalise them again (GCN on Cora under --max-memory 64GiB:
		// 20 ms an epoch gathering them every step, 2.4 ms keeping them).
		need, err := e.StepBytes(whole)
		if err != nil {
			return nil, err
		}
		rows := 4 * int64(g.NumNodes) * int64(r.ds.Meta.FeatureDim)
		carry = need+rows/5+8*int64(g.NumNodes+1) <= r.cfg.MaxMemoryBytes
	}
	if carry {
		// The batch carries every row.
		x, err := r.denseFeatures(ctx)
		if err != nil {
			return nil, err
		}
		whole.Features = batch.Rows{DType: batch.Float32, Rows: x.Rows, Dim: x.Cols, F32: x.Data}
		// Mostly-zero features (bag of words): the model's input carries
		// their nonzeros, so input dropout and the first product skip the
		// zeros (Cora's are 98.7 % zeros).
		if nz := tensor.NonZeros(x); nz.Density() <= sparseInputDensity {
			sparse = &engine.SparseRows{Data: x.Data, CSR: nz}
		}
	}
	// The block is the whole graph every step: what the layers derive from
	// it (self-loops, GCN weights, transposes) is built once.
	m.ReuseBlocks(g.Indptr, g.Indices)
	e.SetSparseInput(sparse)
	return &fullStepper{r: r, e: e, whole: whole, sparse: sparse != nil}, nil
}

// sparseInputDensity is the largest fraction of nonzero features at which
// full-graph steps use their sparse twin: the sparse product's work and
// its index array's bytes grow with the nonzeros, the dense GEMM's do not.
var sparseInputDensity = 0.1

func (s *fullStepper) Epoch(ctx context.Context, epoch int) (EpochStats, error) {
	r := s.r
	t := time.Now()
	if err := ctx.Err(); err != nil {
		return EpochStats{}, err
	}
	// The step runs on the calling goroutine, on a fresh view of the
	// whole-graph batch: a pipeline stage handing it over started
	// goroutines every epoch and waited on their wake-ups (3 % of the
	// CPU of GCN on Cora, whose epochs take 2 ms).
	s.mb.Borrow(s.whole)
	out, err := r.trainStep(ctx, s.e, &s.mb, engine.Step{Seed: rng.Derive(r.cfg.Seed, uint64(epoch)), LabelledOnly: true, Epoch: epoch})
	if err != nil {
		return EpochStats{}, err
	}
	st := EpochStats{Loss: out.Loss, TrainAcc: float64(out.Correct) / float64(max(out.Total, 1)), Batches: 1, MicroBatches: out.Micro}
	st.ComputeSeconds = time.Since(t).Seconds()
	return st, nil
}

// trainLabels returns every node's label where the node is in the training
// split, -1 elsewhere: the loss targets of a step over many nodes.
func (r *Runner) trainLabels() []int32 {
	masked := make([]int32, len(r.labels))
	for i := range masked {
		masked[i] = -1
	}
	for _, v := range r.ds.Train {
		masked[v] = r.labels[v]
	}
	return masked
}

func (s *fullStepper) Close() {}

// NumBatches is 1: one step on the whole graph an epoch.
func (s *fullStepper) NumBatches() int { return 1 }

func (s *fullStepper) Evaluate(ctx context.Context, m *nn.Model) (Evaluation, error) {
	return s.r.Evaluate(ctx, m)
}

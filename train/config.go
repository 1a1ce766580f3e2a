// Package train runs GNN training and evaluation: full-graph and sampled
// minibatch loops, evaluation every k epochs (optionally overlapped with the
// next epoch's training), early stopping with the best weights restored,
// layer-wise full-neighbour inference, and per-epoch metrics.
package train

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"sync"

	"github.com/graphmill/graphmill/internal/memstat"
	"github.com/graphmill/graphmill/internal/units"
	"github.com/graphmill/graphmill/nn"
	"github.com/graphmill/graphmill/sample"
	"github.com/graphmill/graphmill/tensor/autograd"
)

// Mode selects the training loop.
type Mode string

// The training loops.
const (
	Full    Mode = "full"    // one step per epoch on the whole graph
	Sampled Mode = "sampled" // minibatches of seed nodes with sampled neighbourhoods
	GAS     Mode = "gas"     // GNNAutoScale: batches of graph parts, halo rows from histories
)

// Config holds everything that determines a training run.
type Config struct {
	Model nn.Config `json:"model"`
	Mode  Mode      `json:"mode"`
	// Epochs is the maximum number of epochs.
	Epochs int `json:"epochs"`
	// Optimizer configures the optimiser (adam, adamw, sgd).
	Optimizer nn.OptimConfig `json:"optimizer"`
	// DecayFirstLayerOnly applies weight decay to the first layer only, as
	// Kipf & Welling's GCN does.
	DecayFirstLayerOnly bool `json:"decay_first_layer_only"`
	// Schedule is the learning-rate schedule ("constant", "step", "cosine").
	Schedule nn.Schedule `json:"schedule"`
	// SkipEval trains without any evaluation (for throughput benchmarks).
	SkipEval bool `json:"skip_eval,omitempty"`
	// EvalEvery evaluates on validation and test every k epochs (>= 1).
	EvalEvery int `json:"eval_every"`
	// Patience stops training after this many evaluations in a row that
	// neither match the best validation accuracy nor the lowest validation
	// loss so far (Selection; 0: never stop early). The best weights are
	// restored at the end either way.
	Patience int `json:"patience"`
	// OverlapEval evaluates epoch k on a snapshot of the weights while
	// epoch k+1 trains.
	OverlapEval bool `json:"overlap_eval"`
	// NormalizeFeatures row-normalises the features (PyG's
	// NormalizeFeatures), as the published Planetoid settings do. It is
	// skipped (and reported false by Runner.Config) when some feature is
	// negative.
	NormalizeFeatures bool `json:"normalize_features"`
	// Fanouts, BatchSize, Prefetch and Workers configure sampled training.
	Fanouts   []int `json:"fanouts,omitempty"`
	BatchSize int   `json:"batch_size,omitempty"`
	Prefetch  int   `json:"prefetch,omitempty"`
	Workers   int   `json:"workers,omitempty"`
	// EvalFanouts, when set, evaluates by sampled neighbourhoods with these
	// fanouts (-1 takes every in-neighbour; one per layer) instead of
	// layer-wise inference over every node, which holds every node's
	// hidden rows in memory: memory per batch, not per node. With every
	// fanout -1 the scores are layer-wise inference's. Training from disk
	// picks the training fanouts by itself when those rows would not fit
	// (Summary.EvalFanouts says so).
	EvalFanouts []int `json:"eval_fanouts,omitempty"`
	// FeatureCacheBytes is the hot-row cache budget of the feature store
	// (0: no cache): the rows of the most sampled nodes (highest
	// out-degree) kept in memory in front of the memory-mapped file.
	FeatureCacheBytes int64 `json:"feature_cache_bytes,omitempty"`
	// CachePolicy picks the rows the feature cache starts with:
	// "degree" (the highest out-degree), "presample" (the nodes one
	// presampled epoch of sampled training reached most often, GNNLab's
	// policy, then by degree), or "" for presample when reading from
	// disk in sampled mode and degree otherwise.
	CachePolicy string `json:"cache_policy,omitempty"`
	// Superbatch, when reading features from disk in sampled mode, plans
	// the cache over that many batches ahead (Ginex): a missed row takes
	// the place of the cached row used farthest ahead (0: a static
	// cache).
	Superbatch int `json:"superbatch,omitempty"`
	// GraphOnDisk reads the graph as a graph larger than memory: its
	// mappings get random-access advice, so that a page fault reads its
	// page and no readahead window (dataset.AdviseGraphRandom), and the
	// pages sampling is about to touch are read ahead with many reads in
	// flight (dataset.GraphReader). "yes", "no", "advice" (the advice
	// alone, for comparison), or "auto" ("" too): when the graph's arrays
	// take more than half the available memory.
	GraphOnDisk string `json:"graph_on_disk,omitempty"`
	// GraphInMemory says whether sampled and GAS training read the graph
	// from a copy in huge-page memory ("yes", made at start) or through
	// its file mappings' 4 KiB pages ("no"): minibatches are drawn from
	// the copy in 0.87 of the time on a 10M-node graph. "auto" ("" too)
	// copies it when the graph is not on disk, no memory bound is set,
	// the features are not read from disk, and the graph takes at most
	// half the memory available after the features (a copy per rank
	// under data parallelism).
	GraphInMemory string `json:"graph_in_memory,omitempty"`
	// FeatureDType, when it differs from the stored dtype, holds the
	// features in memory converted to it ("float16" or "bfloat16": half
	// the memory of float32); "" reads them as stored, through the mapping.
	FeatureDType string `json:"feature_dtype,omitempty"`
	// FeaturesInMemory says where sampled and GAS training read the
	// dataset's features from: FeaturesMemory copies them into huge-page
	// memory at start (gathers 1.25–1.3× faster than through the file
	// mapping's 4 KiB pages); FeaturesDisk reads them from disk with
	// explicit batched reads (feature.Disk) behind a cache of
	// FeatureCacheBytes (0: chosen from the available memory) filled by
	// one sequential pass, for features larger than memory;
	// FeaturesMapped reads them through the file mapping (with
	// FeatureCacheBytes' rows in memory); FeaturesAuto ("" too) copies
	// them when they take at most half the memory available (a copy per
	// rank under data parallelism), no memory bound, feature cache or
	// dtype conversion is set, and the mode gathers rows (full-graph
	// training reads them once, whole), reads them from disk when they
	// do not fit, and maps them otherwise.
	FeaturesInMemory string `json:"features_in_memory,omitempty"`
	// Parts and PartsPerBatch configure GAS training: the graph is split
	// into Parts parts by the multilevel partitioner and every batch holds
	// PartsPerBatch of them (shuffled each epoch).
	Parts         int `json:"parts,omitempty"`
	PartsPerBatch int `json:"parts_per_batch,omitempty"`
	// HalfHistory stores GAS histories as float16.
	HalfHistory bool `json:"half_history,omitempty"`
	// MaxMemoryBytes bounds the memory of one training or inference step
	// (activations, gradients and the batch's derived copies; 0: no
	// bound). A batch that would exceed it is split into micro-batches
	// whose gradients add up to the batch's.
	MaxMemoryBytes int64 `json:"max_memory_bytes,omitempty"`
	// EvalBatchSize is the batch of nodes in layer-wise inference.
	EvalBatchSize int `json:"eval_batch_size"`
	// Seed determines initialisation, dropout, shuffling and sampling.
	Seed uint64 `json:"seed"`
	// Threads records the kernels' goroutines (0: all cores). It is a
	// process-wide setting: the caller applies it (tensor.SetThreads), as
	// graphmill train does; Run never changes process-wide settings.
	Threads int `json:"threads"`
	// FreeOSMemory has Run return the setup's garbage (partitioning,
	// feature copies) to the operating system before the first epoch
	// (runtime/debug.FreeOSMemory), so that the epochs' resident-set
	// peaks show training alone. It forces a full collection and is felt
	// process-wide, so it is off by default: a program that runs nothing
	// else, such as graphmill train, may set it.
	FreeOSMemory bool `json:"free_os_memory,omitempty"`
	// Parallel, when set with more than one rank, trains data-parallel
	// (sampled mode): BatchSize is the batch of each rank.
	Parallel Parallel `json:"-"`
}

// Defaults returns good defaults for a model kind: its Spec's Defaults
// (the published settings where a paper gives them) over the general ones.
func Defaults(kind nn.Kind) Config {
	spec, _ := nn.Lookup(kind)
	d := spec.Defaults
	c := Config{
		Model: nn.Config{Kind: kind, Hidden: or(d.Hidden, 16), Layers: or(d.Layers, 2), Dropout: or(d.Dropout, 0.5),
			Heads: d.Heads, OutHeads: d.OutHeads, AttnDropout: d.AttnDropout, Alpha: d.Alpha, Theta: d.Theta},
		Mode:      Full,
		Epochs:    or(d.Epochs, 200),
		Optimizer: nn.OptimConfig{Name: "adam", LR: or(d.LR, 0.01), WeightDecay: or(d.WeightDecay, 5e-4)},
		Schedule:  nn.Schedule{Kind: "constant"},
		EvalEvery: 1, Patience: d.Patience, NormalizeFeatures: !d.RawFeatures,
		DecayFirstLayerOnly: d.DecayFirstLayerOnly,
		Fanouts:             d.Fanouts, BatchSize: or(d.Batch, 64), Prefetch: 4, EvalBatchSize: 4096, Superbatch: 10,
		Parts: 40, PartsPerBatch: 10,
	}
	if d.Sampled {
		c.Mode = Sampled
	}
	if c.Fanouts == nil {
		c.Fanouts = DefaultFanouts(nn.NumLayers(c.Model))
	}
	return c
}

// DefaultFanouts returns the default fanouts of a sampled model with n
// blocks: PyG's GraphSAGE example's 25,10 for two, 10 per block otherwise.
func DefaultFanouts(n int) []int {
	if n == 2 {
		return []int{25, 10}
	}
	return slices.Repeat([]int{10}, max(n, 0))
}

// or returns v, or def when v is zero.
func or[T int | float64](v, def T) T {
	if v == 0 {
		return def
	}
	return v
}

// numLayers is the number of blocks a sampled minibatch needs (APPNP's
// MLP counts as a layer).
func (c *Config) numLayers() int { return nn.NumLayers(c.Model) }

// Validate checks the configuration (NewRunner does; a program may call
// it before opening the dataset).
func (c *Config) Validate() error {
	if _, err := nn.NewOptimizer(c.Optimizer); err != nil {
		return err
	}
	switch {
	case c.Mode != Full && c.Mode != Sampled && c.Mode != GAS:
		return fmt.Errorf("unknown mode %q: want full, sampled or gas", c.Mode)
	case c.Mode == GAS && (c.Parts < 1 || c.PartsPerBatch < 1 || c.PartsPerBatch > c.Parts):
		return fmt.Errorf("gas mode needs parts >= 1 and 1 <= parts per batch <= parts, got %d and %d", c.Parts, c.PartsPerBatch)
	case c.Mode == GAS && c.OverlapEval:
		return fmt.Errorf("gas mode evaluates with the training histories, so it cannot overlap evaluation with training")
	case c.MaxMemoryBytes < 0:
		return fmt.Errorf("max memory must be >= 0, got %d", c.MaxMemoryBytes)
	case c.EvalBatchSize < 0:
		return fmt.Errorf("evaluation batch size must be >= 0 (0: the whole graph at once), got %d", c.EvalBatchSize)
	case c.Schedule.Kind != "" && nn.ParseSchedule(c.Schedule.Kind) != nil:
		return nn.ParseSchedule(c.Schedule.Kind)
	case c.Schedule.Kind == "step" && !(c.Schedule.Base > 0 && c.Schedule.StepSize > 0 && c.Schedule.Gamma > 0),
		c.Schedule.Kind == "cosine" && !(c.Schedule.Base > 0 && c.Schedule.Epochs > 0):
		return fmt.Errorf("a %s schedule needs its base learning rate, and a step size and gamma (step) or epochs (cosine) > 0: got %+v", c.Schedule.Kind, c.Schedule)
	case !slices.Contains([]string{"", FeaturesAuto, FeaturesMemory, FeaturesDisk, FeaturesMapped}, c.FeaturesInMemory):
		return fmt.Errorf("features in memory %q: want %s, %s, %s or %s", c.FeaturesInMemory, FeaturesAuto, FeaturesMemory, FeaturesDisk, FeaturesMapped)
	case c.FeaturesInMemory == FeaturesMemory && c.FeatureCacheBytes > 0:
		return fmt.Errorf("a feature cache sits in front of the mapped feature file; with the features in memory it has nothing to do (drop one of them)")
	case c.CachePolicy != "" && c.CachePolicy != "degree" && c.CachePolicy != "presample":
		return fmt.Errorf("cache policy %q: want degree or presample", c.CachePolicy)
	case c.GraphOnDisk != "" && c.GraphOnDisk != "auto" && c.GraphOnDisk != "yes" && c.GraphOnDisk != "no" && c.GraphOnDisk != "advice":
		return fmt.Errorf("graph on disk %q: want auto, yes, no or advice", c.GraphOnDisk)
	case !slices.Contains([]string{"", "auto", "yes", "no"}, c.GraphInMemory):
		return fmt.Errorf("graph in memory %q: want auto, yes or no", c.GraphInMemory)
	case c.GraphInMemory == "yes" && (c.GraphOnDisk == "yes" || c.GraphOnDisk == "advice"):
		return fmt.Errorf("the graph is either read from disk (graph on disk %s) or copied into memory (graph in memory yes), not both", c.GraphOnDisk)
	case c.Superbatch < 0:
		return fmt.Errorf("superbatch must be >= 0, got %d", c.Superbatch)
	case c.Epochs < 1:
		return fmt.Errorf("epochs must be >= 1, got %d", c.Epochs)
	case c.EvalEvery < 1:
		return fmt.Errorf("eval-every must be >= 1, got %d", c.EvalEvery)
	case c.Patience < 0:
		return fmt.Errorf("patience must be >= 0, got %d", c.Patience)
	case c.Parallel != nil && c.Parallel.Size() > 1 && c.Mode != Sampled:
		return fmt.Errorf("data-parallel training under %d ranks runs in sampled mode (--mode sampled); %s mode would repeat the same steps on every rank", c.Parallel.Size(), c.Mode)
	case c.Mode == Sampled && c.BatchSize < 1:
		return fmt.Errorf("batch size must be >= 1, got %d", c.BatchSize)
	case c.Mode == Sampled && len(c.Fanouts) != c.numLayers():
		return fmt.Errorf("%d fanout(s) for a model of %d sampled layers: give one fanout per layer", len(c.Fanouts), c.numLayers())
	case c.Mode == Sampled && sample.CheckFanouts(c.Fanouts) != nil:
		return sample.CheckFanouts(c.Fanouts)
	case c.EvalFanouts != nil && len(c.EvalFanouts) != c.numLayers():
		return fmt.Errorf("%d evaluation fanouts for %d layers: give one per layer (-1 takes every neighbour)", len(c.EvalFanouts), c.numLayers())
	}
	return nil
}

// LR returns the learning rate of epoch: the schedule's, or the
// optimiser's when no schedule is set.
func (c Config) LR(epoch int) float64 {
	if c.Schedule.Base == 0 {
		return c.Optimizer.LR
	}
	return c.Schedule.LR(epoch)
}

// memoryLimit is the memory the process may use, read once (tests
// replace it).
var memoryLimit = sync.OnceValue(memstat.Limit)

// NewOptimizer returns the optimiser for m's parameters, with weight decay
// on the first layer only when DecayFirstLayerOnly is set. It refuses a
// model whose parameters alone, with their gradients, the optimiser's
// state and the copy an evaluation reads, take more memory than the
// process may use (memstat.Limit), rather than let training die of the Go
// runtime's fatal "out of memory" in its first steps.
func (c Config) NewOptimizer(m *nn.Model) (nn.Optimizer, error) {
	oc := c.Optimizer
	copies, what := int64(2+oc.States()), "their gradients and the optimiser's state"
	if !c.SkipEval {
		copies, what = copies+1, "their gradients, the optimiser's state and the copy an evaluation reads"
	}
	if limit, n := memoryLimit(), int64(m.NumParams()); limit > 0 && 4*copies*n > limit {
		return nil, fmt.Errorf("training the %s model (hidden %d) needs %s for its %s parameters, %s: more than the %s of memory this process may use",
			m.Config.Kind, m.Config.Hidden, units.Bytes(4*copies*n), units.Count(n), what, units.Bytes(limit))
	}
	if c.DecayFirstLayerOnly && len(m.Layers) > 1 {
		oc.Decay = map[*autograd.Var]float64{}
		for _, l := range m.Layers[1:] {
			for _, p := range l.Params() {
				oc.Decay[p] = 0
			}
		}
	} else if spec, _ := nn.Lookup(m.Config.Kind); spec.Decay != nil {
		oc.Decay = map[*autograd.Var]float64{}
		for i, l := range m.Layers {
			for _, p := range l.Params() {
				oc.Decay[p] = spec.Decay(i, p.Name, oc.WeightDecay)
			}
		}
	}
	return nn.NewOptimizer(oc)
}

// Selection chooses the model to keep and when to stop, as the original
// GAT code does: an evaluation resets the patience counter if it matches
// the best validation accuracy or the lowest validation loss so far; the
// kept model is the one with the best accuracy, ties broken by the lower
// loss.
type Selection struct {
	best, bestLoss, lowestLoss float64
	sinceBest                  int
}

// NewSelection returns a selection that has seen no evaluation.
func NewSelection() *Selection {
	return &Selection{best: math.Inf(-1), bestLoss: math.Inf(1), lowestLoss: math.Inf(1)}
}

// Observe counts one evaluation and reports whether its model is the best
// so far (the one to keep). An evaluation without a validation accuracy
// (NaN: no validation nodes) always is.
func (s *Selection) Observe(ev Evaluation) bool {
	if math.IsNaN(ev.ValAcc) {
		// No validation nodes: the latest evaluated model is kept, and
		// patience never runs out.
		s.sinceBest = 0
		return true
	}
	if ev.ValAcc >= s.best || ev.ValLoss <= s.lowestLoss {
		s.sinceBest = 0
	} else {
		s.sinceBest++
	}
	s.lowestLoss = min(s.lowestLoss, ev.ValLoss)
	if ev.ValAcc > s.best || ev.ValAcc == s.best && ev.ValLoss < s.bestLoss {
		s.best, s.bestLoss = ev.ValAcc, ev.ValLoss
		return true
	}
	return false
}

// Exhausted reports whether patience (> 0) evaluations in a row have
// brought no improvement.
func (s *Selection) Exhausted(patience int) bool {
	return patience > 0 && s.sinceBest >= patience
}

// SharedHash is a hash of the settings every rank of a distributed run
// must share: those that change the model, its numbers or the order of
// the collectives (model, mode, epochs, optimiser, schedule, evaluation,
// fanouts, batch, feature handling, GAS parts, seed). Threads, workers,
// caches, prefetching, memory bounds and where the graph and features are
// read from may differ per process, and are left out.
func (c Config) SharedHash() uint64 {
	// A map marshals with its keys in sorted order. An error is a NaN
	// setting, which validate refuses before any run.
	b, err := json.Marshal(c.sharedFields())
	if err != nil {
		return 0
	}
	h := fnv.New64a()
	h.Write(b)
	return h.Sum64()
}

// sharedFields are the settings SharedHash covers, by name (the names a
// resumed run's refusal gives for what differs: configDifferences).
func (c Config) sharedFields() map[string]any {
	return map[string]any{
		"model": c.Model, "mode": c.Mode, "epochs": c.Epochs, "eval_every": c.EvalEvery, "patience": c.Patience,
		"optimizer": c.Optimizer, "decay_first_layer_only": c.DecayFirstLayerOnly, "no_eval": c.SkipEval,
		"overlap_eval": c.OverlapEval, "schedule": c.Schedule, "normalize_features": c.NormalizeFeatures,
		"half_history": c.HalfHistory, "fanouts": c.Fanouts, "eval_fanouts": c.EvalFanouts, "batch": c.BatchSize,
		"parts": c.Parts, "parts_per_batch": c.PartsPerBatch, "feature_dtype": c.FeatureDType, "seed": c.Seed,
	}
}

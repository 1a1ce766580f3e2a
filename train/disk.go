package train

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"slices"
	"time"

	"github.com/graphmill/graphmill/batch"
	"github.com/graphmill/graphmill/feature"
	"github.com/graphmill/graphmill/internal/memstat"
	"github.com/graphmill/graphmill/internal/rng"
	"github.com/graphmill/graphmill/internal/units"
	"github.com/graphmill/graphmill/nn"
	"github.com/graphmill/graphmill/sample"
)

// WithContext gives NewRunner's setup (the feature cache's sequential
// fill from disk, the normalisation pass) a context that cancels it.
func WithContext(ctx context.Context) Option { return func(r *Runner) { r.setupCtx = ctx } }

// diskBuffers is the number of minibatches alive at once when features
// are read from disk: one in the step while the next is sampled and its
// rows read. When reads take longer than steps, as they do from disk,
// the reads run back to back with two; every batch held beyond that
// would take memory the cache makes better use of.
const diskBuffers = 2

// maxDiskBuffers bounds the minibatches alive at once from disk when the
// pipeline measures reads that a deeper queue would hide (diskMaxBuffers).
const maxDiskBuffers = 8

// diskMaxBuffers is pipeline.Config.MaxBuffers from disk: diskBuffers,
// and up to maxDiskBuffers where the memory still available once the cache
// is filled holds more batches (estimateBatchBytes each) beside the two
// and evaluation's room (evalReserve).
// The pipeline adds them only when it measures a batch's reads taking
// several steps' time while they take less than a step on average; an
// auto-sized cache leaves no room for them, having taken it.
func (r *Runner) diskMaxBuffers() int {
	bb := r.estimateBatchBytes()
	if bb <= 0 {
		return diskBuffers
	}
	free := memstat.Available() - memoryMargin - diskBuffers*bb - r.evalReserve()
	return diskBuffers + int(min(maxDiskBuffers-diskBuffers, max(0, free/bb)))
}

// memoryMargin is what the auto cache budget leaves aside for the Go
// runtime, the model and the optimiser, beyond what it counts.
const memoryMargin = 64 << 20

// perNodeBytes is what a run keeps per node beside the cache (the
// node-to-slot map, the cache's order, the float32 degrees), with room for
// what ranking the rows holds while the cache is allocated (counts and
// degrees).
const perNodeBytes = 24

// openDisk opens the features for explicit, batched reads from disk
// (feature.Disk), behind a cache of the most sampled rows: of
// Config.FeatureCacheBytes, or, when that is 0, of what the available
// memory (cgroup-aware) leaves after the graph, two minibatches and a
// margin (autoCacheBytes). The cache and the normalisation factors are
// filled by one sequential pass over the file.
func (r *Runner) openDisk(ctx context.Context) error {
	start := time.Now()
	// The cgroup's clean page cache is room the cache may take (the
	// kernel reclaims it first): a container that had read its dataset
	// got a 0 B cache.
	avail := memstat.Available() + memstat.CgroupReclaimable()
	budget := r.cfg.FeatureCacheBytes
	if budget == 0 {
		budget = r.autoCacheBytes()
	} else {
		var err error
		if budget, err = cacheBudget(budget, int64(len(r.ds.FeatureArray.Data)), avail, r.autoCacheBytes()); err != nil {
			return fmt.Errorf("%w: the automatic budget (no --feature-cache) would be %s here", err, units.Bytes(r.autoCacheBytes()))
		}
	}
	var order []int32
	t := time.Now()
	if budget > 0 {
		var err error
		if order, err = r.cacheOrder(ctx, true); err != nil {
			return err
		}
	}
	r.orderTime = time.Since(t)
	r.cacheAll = budget >= int64(len(r.ds.FeatureArray.Data))
	// Presampling's garbage goes back to the system before the cache
	// fills.
	debug.FreeOSMemory()
	d, err := feature.OpenDisk(ctx, r.ds, feature.DiskOptions{
		CacheBytes: budget, CacheOrder: order, Normalize: r.cfg.NormalizeFeatures, Progress: r.hooks.Fill,
		Superbatch: r.superbatch() > 0,
	})
	if err != nil {
		return err
	}
	r.cfg.NormalizeFeatures = d.Normalized()
	r.feat, r.disk = d, d
	// What the Go runtime may add from here: what was available less
	// the cache and the graph's pages (GoMemoryLimit).
	if p := r.cfg.Parallel; p != nil && p.Size() > 1 {
		avail /= int64(p.Size()) // a share per rank, as autoCacheBytes
	}
	if avail > 0 {
		r.goLimit = max(memstat.GoRuntime()+avail-d.CacheStats().Bytes-r.g.Bytes(), 64<<20)
	}
	r.cacheBudget = budget
	r.openTime = time.Since(start)
	r.diskHint = halfHint(d.DType(), int64(len(r.ds.FeatureArray.Data)), memstat.Available()+d.CacheStats().Bytes)
	r.evalNote = r.chooseEval(memstat.Available())
	return nil
}

// cacheBudget is a cache budget given by the user for a file of size
// bytes: no more than the file, and refused where it is more than the
// memory available (avail; 0: unknown), which the kernel answered by
// killing the process during the fill, with no word, or more than room,
// what the automatic budget leaves beside the graph, the batches and
// evaluation: under a 600 MiB cgroup, 550 MiB of cache was killed
// during the epoch and 420 MiB thrashed the page cache (86 GB read in a
// minute).
func cacheBudget(given, size, avail, room int64) (int64, error) {
	budget := min(given, size)
	switch {
	case avail > 0 && budget > avail:
		return 0, fmt.Errorf("--feature-cache %s (%s of features) is more than the %s of memory available (the memory cgroup's limit, or the machine's)",
			units.Bytes(given), units.Bytes(size), units.Bytes(avail))
	case avail > 0 && budget > room:
		return 0, fmt.Errorf("--feature-cache %s leaves too little of the %s available for the graph, the batches and evaluation (--no-eval or smaller --eval-fanouts leave more)",
			units.Bytes(given), units.Bytes(avail))
	}
	return budget, nil
}

// chooseEval switches evaluation to sampled neighbourhoods (the training
// fanouts) when layer-wise inference's rows of every node (two hidden
// layers' and the logits) would take more than half of avail, unless the
// evaluation fanouts were given or there is no evaluation. It returns
// what it did, for the summary ("" when nothing).
func (r *Runner) chooseEval(avail int64) string {
	c := &r.cfg
	if c.SkipEval || c.EvalFanouts != nil || avail <= 0 {
		return ""
	}
	need := inferBytes(c.Model, r.ds.Meta.NumNodes)
	if need <= avail/2 {
		return ""
	}
	c.EvalFanouts = c.Fanouts
	if len(c.EvalFanouts) != c.numLayers() {
		c.EvalFanouts = DefaultFanouts(c.numLayers())
	}
	return fmt.Sprintf("evaluating on sampled neighbourhoods (fanouts %v): layer-wise inference would hold %s of every node's hidden rows, more than half of the %s available (--eval-fanouts sets them; -1 takes every neighbour)",
		c.EvalFanouts, units.Bytes(need), units.Bytes(avail))
}

// inferBytes is what layer-wise inference of model c holds for n nodes:
// two hidden layers' rows and the logits of every node.
func inferBytes(c nn.Config, n int) int64 {
	w := int64(max(c.Hidden*max(1, c.Heads), c.Out))
	return int64(n) * 4 * (2*w + int64(c.Out))
}

// halfHint says, when features of dtype and size bytes do not fit in
// half of avail bytes but would as float16 or bfloat16, how to hold them
// in memory that way ("" otherwise).
func halfHint(dt feature.DType, size, avail int64) string {
	if dt != feature.Float32 || avail <= 0 || size <= avail/2 || size/2 > avail/2 {
		return ""
	}
	return fmt.Sprintf("the features take %s as float32, more than half of the %s available; as float16 or bfloat16 they would take %s and fit in memory: --feature-dtype float16 (or bfloat16) converts them once at start (or store them so: graphmill data convert, or data generate, --feature-dtype)",
		units.Bytes(size), units.Bytes(avail), units.Bytes(size/2))
}

// graphOnDisk says whether the graph is read as a graph on disk
// (Config.GraphOnDisk), where auto means when its arrays take more than
// half the memory available when the run started (before the features
// took theirs: the disk cache's budget leaves the graph room).
func (r *Runner) graphOnDisk() bool {
	switch r.cfg.GraphOnDisk {
	case "yes", "advice":
		return true
	case "no":
		return false
	}
	return r.startAvail > 0 && r.g.Bytes() > r.startAvail/2
}

// graphInMemory says whether the graph is read from a copy in huge-page
// memory (Config.GraphInMemory); auto copies it in sampled and GAS modes
// (full-graph training reads the lists in order, where 4 KiB pages cost
// little) when it is not on disk, no memory bound is set, the features
// are not read from disk (memory is scarce there, and the mapping's
// pages can be reclaimed under pressure where a copy's cannot) and one
// copy per rank takes at most half the memory available now, after the
// features took theirs.
func (r *Runner) graphInMemory() bool {
	switch r.cfg.GraphInMemory {
	case "yes":
		return true
	case "no":
		return false
	}
	if r.cfg.Mode == Full || r.graphOnDisk() || r.cfg.MaxMemoryBytes > 0 || r.disk != nil {
		return false
	}
	ranks := 1
	if r.cfg.Parallel != nil {
		ranks = r.cfg.Parallel.Size()
	}
	return r.ds.GraphFitsInMemory(ranks)
}

// superbatch is the number of batches the disk cache plans ahead (0:
// none): Config.Superbatch in sampled mode.
func (r *Runner) superbatch() int {
	if r.cfg.Mode != Sampled || r.cacheAll {
		return 0 // a cache of every row never misses
	}
	return r.cfg.Superbatch
}

// cacheOrder ranks the nodes for the feature cache, hottest first
// (Config.CachePolicy; fromDisk picks the default).
func (r *Runner) cacheOrder(ctx context.Context, fromDisk bool) ([]int32, error) {
	degree := feature.DegreeOrder(r.g)
	policy := r.cfg.CachePolicy
	if policy == "" && fromDisk {
		policy = "presample"
	}
	if policy != "presample" || r.cfg.Mode != Sampled {
		r.cachePolicy = "degree"
		return degree, nil
	}
	r.cachePolicy = "presample"
	// One epoch's batches, sampled with a key no training epoch uses.
	key := rng.Derive(LoaderSeed(r.cfg), 0x9e5)
	s, err := sample.New(r.g, r.sampleConfig(r.cfg.Fanouts))
	if err != nil {
		return nil, err
	}
	batches, err := sample.Batches(r.ds.Train, r.cfg.BatchSize, true, key, false)
	if err != nil {
		return nil, err
	}
	counts, err := s.CountInputs(ctx, batches, key, r.cfg.Workers)
	if err != nil {
		return nil, err
	}
	order := feature.HotOrder(counts)
	// The nodes presampling never reached follow by degree.
	for _, v := range degree {
		if counts[v] == 0 {
			order = append(order, v)
		}
	}
	return order, nil
}

// autoCacheBytes is the cache budget when none is given: the available
// memory less the graph's arrays, the node-to-slot map, the minibatches
// alive at once (estimateBatchBytes), evaluation's (sampled evaluation's
// batches beside the training's, which the Go heap may not have handed
// back yet; without that room, evaluation was killed by the cgroup) and
// memoryMargin.
func (r *Runner) autoCacheBytes() int64 {
	avail, cgroup := memstat.AvailableFrom()
	if avail <= 0 {
		return 0
	}
	// The graph's pages: a cgroup's usage already counts those read so
	// far, unless they are inactive, and its inactive file pages are
	// room (CgroupReclaimable), so then the whole graph is reserved;
	// MemAvailable counts them as free to take. Without a cgroup, a
	// thirty-second more is left to the kernel.
	graph := r.g.Bytes()
	if cgroup {
		if in := memstat.CgroupReclaimable(); in > 0 {
			avail += in
		} else {
			graph = max(0, graph-memstat.File())
		}
	} else {
		graph += avail / 32
	}
	// A sixteenth more is slack for what no estimate counts (the
	// runtime's freed pages, I/O buffers, page tables): at a 700 MiB
	// limit the process peaked within 2 MiB of it without evaluation.
	reserve := graph + int64(r.ds.Meta.NumNodes)*perNodeBytes + diskBuffers*r.estimateBatchBytes() + r.evalReserve() + memoryMargin + avail/16
	budget := max(0, avail-reserve)
	if p := r.cfg.Parallel; p != nil && p.Size() > 1 {
		// Ranks on one machine start at once, each seeing the same
		// available memory (as featurePlace counts them).
		budget /= int64(p.Size())
	}
	if size := int64(len(r.ds.FeatureArray.Data)); budget >= size {
		return size // every row: nothing to plan (superbatch)
	}
	if r.superbatch() > 0 {
		// Its rank and next use, and about one heap entry, per cached row.
		rowB := int64(r.ds.Meta.FeatureDim) * int64(r.ds.FeatureArray.DType.Size())
		budget = budget / (rowB + 16) * rowB
	}
	return budget
}

// estimateBatchBytes estimates the memory one minibatch takes while it
// is alive: its gathered float32 rows and blocks, with a quarter more for
// what the step derives from them, measured on one sampled batch of
// training seeds (sampled mode; GAS and full mode gather in pieces of
// about the same size).
// The estimate is made once a run (the cache's budget and the pipeline's
// depth both use it).
func (r *Runner) estimateBatchBytes() int64 {
	if r.batchBytes == 0 {
		r.batchBytes = r.sampleBatchBytes(r.cfg.Fanouts)
	}
	return r.batchBytes
}

// evalReserve is the memory the cache budget leaves to evaluation: the
// batches sampled evaluation holds at once (evalBuffers, beside the
// training pipeline's, which stay allocated for the next epoch); none
// without evaluation, or for inference alone, whose batches are the ones
// counted already.
func (r *Runner) evalReserve() int64 {
	if r.cfg.SkipEval || r.inference {
		return 0
	}
	return evalBuffers * r.evalBatchBytes()
}

// evalBuffers is the batches sampled evaluation holds at once: its
// pipeline's two buffers and the one it prefetches (sampledEval).
const evalBuffers = 3

// evalBatchBytes estimates a sampled evaluation's batch (a training
// batch of seeds, drawn with the evaluation fanouts, or the training
// ones, which evaluation from disk falls back to: chooseEval).
func (r *Runner) evalBatchBytes() int64 {
	if r.cfg.EvalFanouts == nil || slices.Equal(r.cfg.EvalFanouts, r.cfg.Fanouts) {
		return r.estimateBatchBytes()
	}
	return r.sampleBatchBytes(r.cfg.EvalFanouts)
}

func (r *Runner) sampleBatchBytes(fanouts []int) int64 {
	cfg := r.cfg
	dim := int64(r.ds.Meta.FeatureDim)
	if cfg.Mode != Sampled || len(fanouts) == 0 {
		return int64(cfg.EvalBatchSize) * dim * 4 * 4
	}
	s, err := sample.New(r.g, r.sampleConfig(fanouts))
	if err != nil {
		return 0
	}
	mb := &batch.MiniBatch{}
	seeds := r.ds.Train[:min(len(r.ds.Train), cfg.BatchSize)]
	if err := s.SampleInto(mb, seeds, LoaderSeed(cfg)); err != nil {
		return 0
	}
	rows, edges := int64(len(mb.InputNodes)), int64(mb.NumEdges())
	return (rows*dim*4+rows*8+edges*12)*5/4 + 1<<20
}

// GoMemoryLimit is the soft memory limit the Go runtime should keep to
// (debug.SetMemoryLimit): when the features are read from disk, what the
// runtime held when the features were opened plus what was available
// then (cgroup-aware) less the cache, which lives outside the Go heap,
// and the graph's pages, which sampling needs in the page cache; under a
// memory bound (Config.MaxMemoryBytes), at least what the runtime holds
// now plus the bound and the batches the pipeline holds ready, which
// the bound does not count (without them the heap sat above the limit
// and the collector ran without pause: 2,704 collections an epoch
// against 14, twice the epoch's time). 0 when neither applies or the
// available memory is unknown. Setting it is the caller's: it is a
// process-wide setting.
func (r *Runner) GoMemoryLimit() int64 {
	var limit int64
	if r.disk != nil {
		limit = r.goLimit
	}
	if b := r.cfg.MaxMemoryBytes; b > 0 {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		var ready int64
		if r.cfg.Mode == Sampled {
			ready = int64(r.cfg.Prefetch+2) * r.estimateBatchBytes()
		}
		limit = max(limit, int64(ms.Sys-ms.HeapReleased)+b+ready)
	}
	return limit
}

// DiskSummary describes a run's reads of features from disk.
type DiskSummary struct {
	// Backend is how rows were read ("io_uring+O_DIRECT", ...).
	Backend string `json:"backend"`
	// CacheBudget is the cache's budget, given (--feature-cache) or
	// chosen from the available memory (AutoCache).
	CacheBudget int64 `json:"cache_budget_bytes"`
	AutoCache   bool  `json:"auto_cache"`
	// Policy is the order the cache started from (degree or presample);
	// Superbatch the batches it planned ahead (0: static), Admitted and
	// Evicted the rows it took in and let go, Planned and Unplanned the
	// gathers of planned batches and the others (evaluation's).
	Policy string `json:"cache_policy"`
	// OrderSeconds is the time ranking the nodes for the cache took
	// (presampling), OpenSeconds all of opening the features (ranking,
	// the cache's allocation and its fill).
	OrderSeconds float64 `json:"order_seconds"`
	OpenSeconds  float64 `json:"open_seconds"`
	Superbatch   int     `json:"superbatch"`
	Admitted     int64   `json:"admitted_rows,omitempty"`
	Evicted      int64   `json:"evicted_rows,omitempty"`
	Planned      int64   `json:"planned_gathers,omitempty"`
	Unplanned    int64   `json:"unplanned_gathers,omitempty"`
	// FillBytes and FillSeconds are the sequential pass that filled the
	// cache (and computed the normalisation).
	FillBytes   int64   `json:"fill_bytes"`
	FillSeconds float64 `json:"fill_seconds"`
	// Reads, Pages and ReadBytes count the gathers' requests, pages and
	// bytes; ReadSeconds is the time they waited for them, and
	// PagesPerSecond the rate while they did.
	Reads          int64   `json:"reads"`
	Pages          int64   `json:"pages"`
	ReadBytes      int64   `json:"read_bytes"`
	ReadSeconds    float64 `json:"read_seconds"`
	PagesPerSecond float64 `json:"pages_per_second"`
	// ProcessBytes is the process's resident anonymous memory less the
	// cache, CacheBytes the cache, and PageCacheBytes the resident pages
	// of the files it maps (the graph), at the end of training.
	ProcessBytes   int64 `json:"process_bytes"`
	CacheBytes     int64 `json:"cache_bytes"`
	PageCacheBytes int64 `json:"page_cache_bytes"`
	// Hint says how the features would fit in memory at half precision,
	// when they would.
	Hint string `json:"hint,omitempty"`
	// EvalNote says when evaluation went to sampled neighbourhoods because
	// every node's hidden rows would not fit.
	EvalNote string `json:"eval_note,omitempty"`
}

// diskSummary reports the reads from disk so far.
func (r *Runner) diskSummary() *DiskSummary {
	d := r.disk
	io, cs := d.IOStats(), d.CacheStats()
	s := &DiskSummary{
		Backend: d.Backend(), CacheBudget: r.cacheBudget, AutoCache: r.cfg.FeatureCacheBytes == 0,
		FillBytes: io.FillBytes, FillSeconds: io.FillSeconds,
		Reads: io.Reads, Pages: io.Pages, ReadBytes: io.Bytes, ReadSeconds: io.Seconds, PagesPerSecond: io.PagesPerSecond(),
		CacheBytes: cs.Bytes, PageCacheBytes: memstat.File(), Hint: r.diskHint, EvalNote: r.evalNote,
		Policy: r.cachePolicy, OrderSeconds: r.orderTime.Seconds(), OpenSeconds: r.openTime.Seconds(), Admitted: io.Admitted, Evicted: io.Evicted, Planned: io.Planned, Unplanned: io.Unplanned,
	}
	if io.Planned+io.Unplanned > 0 {
		s.Superbatch = r.superbatch()
	}
	s.ProcessBytes = max(0, memstat.Anon()-cs.Bytes)
	return s
}

// sampleConfig is the sampler's configuration for fanouts: with a graph on
// disk, its reads in flight (dataset.GraphReader) ahead of each chunk of
// nodes; on a packed dataset (graphmill data pack), draws keyed by the
// original ids, so that it samples exactly what the original dataset
// would (its in-neighbour lists keep their order).
func (r *Runner) sampleConfig(fanouts []int) sample.Config {
	c := sample.Config{Fanouts: fanouts, KeyIDs: r.ds.OrigIDs}
	if r.graphIO != nil {
		c.Prefetch = r.graphIO.Prefetch
	}
	return c
}

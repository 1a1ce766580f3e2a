package sample

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/graphmill/graphmill/batch"
	"github.com/graphmill/graphmill/graph"
	"github.com/graphmill/graphmill/internal/hugemem"
	"github.com/graphmill/graphmill/internal/isa"
	"github.com/graphmill/graphmill/internal/prefetch"
	"github.com/graphmill/graphmill/internal/rng"
	"github.com/graphmill/graphmill/internal/stream"
)

// Relabel selects the structure that maps global node ids to positions in
// a minibatch.
type Relabel int

const (
	// RelabelAuto (the default) is RelabelDense on graphs of at most
	// DenseRelabelNodes nodes (DenseRelabelNodesVector with the vector
	// kernel: see AutoDense) and RelabelHash on larger ones.
	RelabelAuto Relabel = iota
	// RelabelHash uses a radix-partitioned hash map sized to the
	// minibatch: memory per concurrent call grows with the minibatch, not
	// with the graph. New nodes are numbered by hash partition (by
	// bucket of ids first at every hop but the last: order.go).
	RelabelHash
	// RelabelDense uses a generation-stamped array with one 4-byte entry
	// per graph node, allocated once per concurrent call, with its
	// entries prefetched ahead: faster than the hash map while the array
	// is within a few times the last-level cache, slower beyond. New nodes
	// are numbered in first-seen order (by bucket of ids first at every
	// hop but the last: order.go). A minibatch that could reach
	// 1<<24 nodes takes the hash map from the hop that could.
	RelabelDense
)

// DenseRelabelNodes is the largest graph (in nodes) that RelabelAuto
// relabels with the dense array where its entries are relabelled by the
// Go loop: 16 MiB per concurrent sampling call.
const DenseRelabelNodes = 1 << 22

// DenseRelabelNodesVector is that bound where an assembly kernel runs
// (AVX-512 F and CD, AVX2, or relabel1's plain x86-64): 64 MiB per
// concurrent sampling call.
// Measured (AMD EPYC Zen 5, one core, ids shaped like a [15,10,5] last
// hop, paired against the hash map): the array took 0.53x the hash map's
// time on a 4M id space, 0.77x on 10M, 1.27x on 32M with sixteen lanes
// (on the 10M-node synthetic graph's real last hops, 4.7 against 7.7-8.1
// ns an edge); with eight, 0.58x on 10M and 0.71x on 16M.
const DenseRelabelNodesVector = 1 << 24

// AutoDense reports whether RelabelAuto relabels the minibatches of a
// graph of numNodes nodes with the dense array on this machine.
func AutoDense(numNodes int) bool {
	bound := DenseRelabelNodes
	if relabelWidth > 0 {
		bound = DenseRelabelNodesVector
	}
	return numNodes > 0 && numNodes <= bound
}

// String returns "auto", "hash" or "dense".
func (r Relabel) String() string {
	switch r {
	case RelabelAuto:
		return "auto"
	case RelabelHash:
		return "hash"
	case RelabelDense:
		return "dense"
	}
	return fmt.Sprintf("Relabel(%d)", int(r))
}

// useDense reports whether relabel mode r takes the dense array over an
// id space of numNodes nodes.
func useDense(r Relabel, numNodes int) bool {
	return r == RelabelDense || r == RelabelAuto && AutoDense(numNodes)
}

// beginRelabel starts a minibatch's relabelling with mode r over an id
// space of numNodes nodes: it numbers the seeds 0, 1, ... and fails on a
// repeated seed (or, with the dense array, on one outside the id space).
// It returns whether the dense array is in use (see relabel).
func beginRelabel(r Relabel, numNodes int, dm *denseMap, hm *idMap, seeds []int32) (bool, error) {
	if !useDense(r, numNodes) || len(seeds) >= denseSwitch {
		if v, dup := hm.hasDuplicate(seeds); dup {
			return false, fmt.Errorf("sample: seed %d appears more than once", v)
		}
		return false, nil
	}
	for i, v := range seeds {
		if v < 0 || int(v) >= numNodes {
			return true, fmt.Errorf("sample: seed %d (index %d) is not a node id in [0, %d)", v, i, numNodes)
		}
	}
	dm.begin(numNodes)
	if v, dup := dm.insertSeeds(seeds); dup {
		return true, fmt.Errorf("sample: seed %d appears more than once", v)
	}
	return true, nil
}

// relabel relabels a hop's sampled sources idx with the dense array while
// *dense holds and the minibatch stays under its bound, else with the
// hash map (which takes over for the rest of the minibatch: it reads the
// nodes so far, the array does not need to), appending the new nodes to
// nodes (grown as needed). With ordered (a later hop draws for the new
// nodes) they are numbered bucket by bucket (order.go; buckets of their
// key ids where key is not nil). It fails on an id outside the dense
// array's id space.
func relabel(dense *bool, dm *denseMap, hm *idMap, bs *bucketScratch, idx, nodes []int32, ordered bool, key []int32) ([]int32, error) {
	if *dense && len(nodes)+len(idx) >= denseSwitch {
		*dense = false
	}
	if !*dense {
		first := len(nodes)
		nodes = hm.relabel(idx, nodes)
		if ordered {
			bs.renumber(nodes, first, idx, key)
		}
		return nodes, nil
	}
	nodes = room(nodes, len(idx))
	var bad int32
	ok := true
	if ordered {
		nodes, bad, ok = dm.relabelBuckets(bs, idx, nodes, key)
	} else {
		nodes, bad, ok = dm.relabel(idx, nodes)
	}
	if !ok {
		return nodes, fmt.Errorf("sample: neighbour id %d is not a node id in [0, %d)", bad, len(dm.tab))
	}
	return nodes, nil
}

// Config describes how a Sampler draws neighbours.
type Config struct {
	// Fanouts holds the number of in-neighbours to draw per node at each
	// hop, starting at the seeds; -1 takes all of them. Fanouts{25, 10}
	// gives a two-layer minibatch.
	Fanouts []int
	// Replace draws with replacement: exactly fanout draws per node that
	// has any in-neighbour (a neighbour may repeat). By default draws are
	// without replacement, and a node with at most fanout in-neighbours
	// keeps all of them.
	Replace bool
	// Weighted draws each in-edge with probability proportional to its
	// weight (graph.CSC.Weights, which must be present, finite and
	// non-negative). Edges of weight 0 are never drawn. Without
	// replacement it is Efraimidis-Spirakis weighted sampling (successive
	// draws proportional to weight among the edges not yet drawn).
	Weighted bool
	// Frontier draws each hop only for the nodes first reached at the
	// hop before (the seeds at hop 0), as PyG's NeighborLoader does: a
	// block's other destinations keep no in-edges, so every node's
	// neighbours are drawn once, at the hop that reached it. Concatenated,
	// the blocks are PyG's edge_index ordered by hop, which trim_to_layer
	// cuts layer by layer. Without it every hop draws for every node
	// reached so far: the message-flow graphs of DGL and of PyG's older
	// NeighborSampler, which graphmill's own models train on.
	Frontier bool
	// Relabel selects the global-to-local id map; the zero value is
	// RelabelAuto.
	Relabel Relabel
	// KeyIDs, when set, holds for every node of the graph the id that keys
	// its random draws (see Sampler.SampleInto): a part of a partitioned
	// graph sets it to its nodes' global ids, so that it draws exactly the
	// neighbours the whole graph would (its in-neighbour lists must then be
	// in the whole graph's order). Nil keys node v by v.
	KeyIDs []int32
	// Prefetch, when set, is handed the nodes whose offsets and in-
	// neighbour lists a hop is about to read, in order, PrefetchChunk of
	// them at a time, just before it reads them: for a graph larger than
	// memory, dataset.GraphReader reads their pages then with many reads
	// in flight instead of one page fault at a time. It does not change
	// what is drawn.
	Prefetch func(nodes []int32)
	// Timing measures each hop's time drawing and relabelling, summed over
	// the minibatches and callers (Sampler.Timing): two more clock reads
	// a hop.
	Timing bool
}

// HopTiming is one hop's totals since the sampler was made or last
// reset (Config.Timing): the sampled edges, the time spent drawing them
// (reading neighbour ranges and lists, the draws, loading the sources and
// any weights) and the time spent relabelling their sources to local ids.
// Times are each calling goroutine's wall time, added up.
type HopTiming struct {
	Edges         int64
	Draw, Relabel time.Duration
}

// hopTiming is HopTiming kept with atomics, for concurrent callers.
type hopTiming struct{ edges, draw, relabel atomic.Int64 }

// PrefetchChunk is the number of nodes Config.Prefetch is handed at a
// time: a queue of about 100-200 page reads per sampling thread, few
// enough pages that they stay in a small memory cgroup's page cache until
// the draws read them. Measured ('bench disk --graph', 4M nodes and 80M
// edges in 160 MB, two sampling threads): epochs of 12.4, 12.0, 9.5-10.5,
// 10.9, 11.7, 15.3 and 29.1 s at 16, 32, 64, 128, 256, 1024 and 4096 nodes
// (24.9 s with random-access advice alone).
const PrefetchChunk = 64

// Sampler draws neighbour-sampled minibatches from one graph. It is safe
// for concurrent use; each call uses pooled scratch space.
type Sampler struct {
	g    *graph.CSC
	cfg  Config
	pool scratchPool

	eidOnce sync.Once
	eidPos  []int64 // inverse of g.EdgeIDs: id -> CSC position, -1 if absent

	generic bool // tests: never take the fused loop (drawFused)
	// prefetch: the graph's offsets and neighbour lists are larger than
	// cachedGraphBytes, so drawFused prefetches their lines ahead, and
	// drawCached those of its draws.
	prefetch bool
	// passOK: they take at most midCacheBytes and the graph is valid
	// (takeAll's assembly reads offsets and lists without bounds checks),
	// so hops may be drawn in passes (Sampler.passes).
	passOK bool
	// streamPos: they take more than streamGraphBytes and nothing reads
	// the sampled edges' positions right after a hop (no edge weights or
	// ids to look up by them), so drawAhead streams them (posStream).
	streamPos bool
	// aheadAsm: drawAhead runs its group loops in assembly (aheadKernels).
	aheadAsm bool
	// halfWidth: the CPU runs 256-bit vectors in two halves
	// (isa.HalfWidth256), so drawAhead takes hops of up to aheadMaxDraws
	// draws and draws the groups of those of at most fewDraws in halves.
	halfWidth bool
	// floydVector: drawAhead draws Floyd masks eight at a time
	// (rng.FloydMasks8), where it has a kernel; cachedVector:
	// drawCached does (drawCachedVector), where takeMasks has one too.
	floydVector, cachedVector bool

	timing []hopTiming // per hop, with Config.Timing
}

// New returns a sampler for g. It checks the configuration (at least one
// fanout, each -1 or positive; weights present and valid when Weighted) and
// the graph's shape; it does not read every edge of the graph except to
// validate weights.
func New(g *graph.CSC, cfg Config) (*Sampler, error) {
	if g == nil {
		return nil, errors.New("sample: nil graph")
	}
	if len(g.Indptr) != g.NumNodes+1 || g.Indptr[g.NumNodes] != int64(len(g.Indices)) {
		return nil, fmt.Errorf("sample: graph indptr has %d entries for %d nodes and %d edges", len(g.Indptr), g.NumNodes, len(g.Indices))
	}
	if err := CheckFanouts(cfg.Fanouts); err != nil {
		return nil, err
	}
	for i, k := range cfg.Fanouts {
		if cfg.Replace && k > maxReplaceFanout {
			return nil, fmt.Errorf("sample: fanout %d of hop %d with replacement: it draws exactly that many per node, more than %d", k, i, maxReplaceFanout)
		}
	}
	if cfg.Relabel != RelabelAuto && cfg.Relabel != RelabelHash && cfg.Relabel != RelabelDense {
		return nil, fmt.Errorf("sample: unknown relabel mode %d", int(cfg.Relabel))
	}
	if cfg.Weighted {
		if g.Weights == nil {
			return nil, errors.New("sample: weighted sampling needs edge weights, but the graph has none")
		}
		if len(g.Weights) != len(g.Indices) {
			return nil, fmt.Errorf("sample: graph has %d weights for %d edges", len(g.Weights), len(g.Indices))
		}
		for i, w := range g.Weights {
			if !(w >= 0) || math.IsInf(float64(w), 1) {
				return nil, fmt.Errorf("sample: edge weight %d is %v; weighted sampling needs finite weights >= 0", i, w)
			}
		}
	}
	if g.EdgeIDs != nil && len(g.EdgeIDs) != len(g.Indices) {
		return nil, fmt.Errorf("sample: graph has %d edge ids for %d edges", len(g.EdgeIDs), len(g.Indices))
	}
	if cfg.KeyIDs != nil && len(cfg.KeyIDs) != g.NumNodes {
		return nil, fmt.Errorf("sample: %d key ids for %d nodes", len(cfg.KeyIDs), g.NumNodes)
	}
	cfg.Fanouts = slices.Clone(cfg.Fanouts)
	bytes := int64(len(g.Indptr))*8 + int64(len(g.Indices))*4
	s := &Sampler{g: g, cfg: cfg, prefetch: bytes > cachedGraphBytes}
	s.passOK = bytes <= midCacheBytes && g.Validate() == nil
	s.streamPos = bytes > streamGraphBytes && g.Weights == nil && g.EdgeIDs == nil
	s.floydVector = rng.FloydMasksVector()
	s.aheadAsm = aheadKernels
	s.halfWidth = isa.HalfWidth256
	s.cachedVector = s.floydVector && takeMasksVector
	if cfg.Timing {
		s.timing = make([]hopTiming, len(cfg.Fanouts))
	}
	return s, nil
}

// Timing returns each hop's totals (Config.Timing; nil without it), from
// the seeds' hop on.
func (s *Sampler) Timing() []HopTiming {
	if s.timing == nil {
		return nil
	}
	out := make([]HopTiming, len(s.timing))
	for h := range s.timing {
		t := &s.timing[h]
		out[h] = HopTiming{Edges: t.edges.Load(), Draw: time.Duration(t.draw.Load()), Relabel: time.Duration(t.relabel.Load())}
	}
	return out
}

// ResetTiming sets every hop's totals back to zero.
func (s *Sampler) ResetTiming() {
	for h := range s.timing {
		t := &s.timing[h]
		t.edges.Store(0)
		t.draw.Store(0)
		t.relabel.Store(0)
	}
}

// maxReplaceFanout is the largest fanout drawn with replacement, which
// makes exactly that many entries per node (a larger one was the Go
// runtime's fatal "out of memory").
const maxReplaceFanout = 1 << 20

// CheckFanouts reports whether fanouts is a valid list: at least one hop,
// each fanout -1 (all neighbours) or positive.
func CheckFanouts(fanouts []int) error {
	if len(fanouts) == 0 {
		return errors.New("sample: no fanouts (give one per layer, e.g. 25,10)")
	}
	for i, k := range fanouts {
		if k == 0 || k < -1 {
			return fmt.Errorf("sample: fanout %d of hop %d; use a positive count or -1 for all neighbours", k, i)
		}
	}
	return nil
}

// Graph returns the sampled graph.
func (s *Sampler) Graph() *graph.CSC { return s.g }

// Config returns the sampler's configuration.
func (s *Sampler) Config() Config {
	c := s.cfg
	c.Fanouts = slices.Clone(c.Fanouts)
	return c
}

// EpochKey returns the random key of one epoch of a run seeded with seed:
// the value to pass to Sample and SampleInto for every minibatch of that
// epoch. Every process that samples the same node in the same epoch of the
// same run then draws the same neighbours.
func EpochKey(seed uint64, epoch int) uint64 { return rng.Derive(seed, uint64(epoch)) }

// hopKey returns the key of hop h's draws under key.
func hopKey(key uint64, h int) uint64 { return rng.Derive(key, uint64(h)+0x5ee0) }

// Sample draws a minibatch for seeds with the given random key (see
// SampleInto).
func (s *Sampler) Sample(seeds []int32, seed uint64) (*batch.MiniBatch, error) {
	mb := &batch.MiniBatch{}
	if err := s.SampleInto(mb, seeds, seed); err != nil {
		return nil, err
	}
	return mb, nil
}

// SampleInto draws a minibatch for seeds into mb, reusing its arrays (mb
// is Reset first). Seeds must be distinct node ids; there must be at least
// one. It fills mb's seeds, input nodes and blocks (one per fanout, input
// layer first, with edge ids: graph.CSC.EdgeIDs of every sampled edge when
// the graph has them, else its CSC position); features, labels and stream
// metadata are left to later stages.
//
// The random draws are keyed, not streamed: the neighbours drawn for node
// v at hop h depend only on (key, h, v) (v's Config.KeyIDs entry when
// set), never on the other seeds of the batch, their order, the batch's
// position in the epoch or the number of workers. Pass EpochKey(seed,
// epoch) as key for every batch of an epoch, and any split of the epoch's
// seeds into batches, workers, processes or partitions draws the same
// neighbours for every node.
func (s *Sampler) SampleInto(mb *batch.MiniBatch, seeds []int32, seed uint64) error {
	return s.sample(mb, seeds, seed, nil)
}

// SampleExcluding is SampleInto with the edges whose ids are in exclude
// left out of the sampling population (as if they were not in the graph).
// Ids are graph.CSC.EdgeIDs values when the graph has edge ids (the first
// such call builds an inverse index of 8 bytes per edge; ids no edge
// carries are ignored), else CSC positions, which must be in range.
func (s *Sampler) SampleExcluding(mb *batch.MiniBatch, seeds []int32, seed uint64, exclude []int64) error {
	return s.sample(mb, seeds, seed, exclude)
}

// scratchPool keeps the scratch of finished calls for the next ones: as
// many as calls have run at once. It is not a sync.Pool, which drops its
// items at garbage collections: a dropped scratch takes its dense
// relabelling array (4 bytes a node, 38 MiB on a 10M-node graph) with it,
// and the next call allocates and faults in a new one. Measured (Xeon
// with AMX, 'bench sample' on the 10M-node graph, one worker): the
// seeds' hop relabelled in 52.8-76.3 ns an edge, against 16.5 with two
// workers, which kept their scratch longer.
type scratchPool struct {
	mu   sync.Mutex
	free []*scratch
}

func (p *scratchPool) get() *scratch {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n := len(p.free); n > 0 {
		sc := p.free[n-1]
		p.free = p.free[:n-1]
		return sc
	}
	return &scratch{}
}

func (p *scratchPool) put(sc *scratch) {
	p.mu.Lock()
	p.free = append(p.free, sc)
	p.mu.Unlock()
}

// scratch is the per-call working memory, pooled by the Sampler.
type scratch struct {
	hash  idMap
	dense denseMap
	spans []int64   // lo, hi per destination node
	bits  []uint64  // Floyd membership bitset (all zero between uses)
	cum   []float64 // weighted: prefix sums
	keys  []wkey    // weighted without replacement
	wtmp  []float32 // weights of a non-contiguous candidate list
	excl  []int64   // sorted excluded CSC positions
	cand  []int64   // candidate positions of a node with exclusions
	todo  []int32   // drawCached: destinations with more neighbours than draws
	masks [8]uint64 // drawCachedVector: a group's Floyd masks (here, not on the stack: the kernel's pointer escapes)

	buckets bucketScratch // relabelling in id-bucket order
}

// noCandidates is the non-nil empty candidate list of a node whose every
// in-edge is excluded.
var noCandidates = []int64{}

type wkey struct {
	key float64
	off int64
}

func (s *Sampler) sample(mb *batch.MiniBatch, seeds []int32, seed uint64, exclude []int64) error {
	g := s.g
	if len(seeds) == 0 {
		return errors.New("sample: empty seed set")
	}
	n := int32(g.NumNodes)
	for i, v := range seeds {
		if v < 0 || v >= n {
			return fmt.Errorf("sample: seed %d (index %d) is not a node id in [0, %d)", v, i, n)
		}
	}
	sc := s.pool.get()
	defer s.pool.put(sc)
	if err := s.setExclusions(sc, exclude); err != nil {
		return err
	}
	dense, err := beginRelabel(s.cfg.Relabel, g.NumNodes, &sc.dense, &sc.hash, seeds)
	if err != nil {
		return err
	}
	mb.Reset()
	nodes := append(mb.LocalBuffer(), seeds...)
	L := len(s.cfg.Fanouts)
	blocks := mb.SetBlocks(L)
	numDst := make([]int, 0, 8)
	spanned := 0 // destinations whose neighbour ranges are in sc.spans
	// Uniform draws without replacement or exclusions take the fused
	// loop (drawFused); the others read every range first (spans) and
	// then draw.
	fused := !s.generic && !s.cfg.Weighted && !s.cfg.Replace && len(sc.excl) == 0
	ahead := fewDraws // the most draws of a hop drawAhead takes
	if s.halfWidth {
		ahead = aheadMaxDraws
	}
	for h, k := range s.cfg.Fanouts {
		fused := fused && k > 0
		nd := len(nodes)
		numDst = append(numDst, nd)
		hb := &blocks[L-1-h]
		hb.Indptr = grow(hb.Indptr, nd+1)
		// Frontier mode draws for nodes[first:nd] only, into the tail of
		// the block's offsets (the others get none).
		first := 0
		if s.cfg.Frontier && h > 0 {
			first = numDst[h-1]
			clear(hb.Indptr[:first])
			spanned = 0
		}
		sub := graph.Block{Indptr: hb.Indptr[first:], Indices: hb.Indices, EdgeIDs: hb.EdgeIDs}
		var e int
		var t0 time.Time
		if s.timing != nil {
			t0 = time.Now()
		}
		switch {
		case fused && s.passes(k):
			e = s.drawCached(sc, nodes[first:nd], hopKey(seed, h), k, &sub)
		case fused && s.prefetch && k <= ahead && s.cfg.Prefetch == nil:
			e = s.drawAhead(sc, nodes[first:nd], spanned, hopKey(seed, h), k, &sub, h+1 < L)
		case fused:
			// The ranges are read while drawing: drawFused grows the
			// edge arrays as it goes.
			e = s.drawFused(sc, nodes[first:nd], spanned, hopKey(seed, h), k, &sub)
		default:
			bound := s.spans(sc, nodes[first:nd], spanned, k)
			sub.Indices = grow(sub.Indices, bound)
			sub.EdgeIDs = grow(sub.EdgeIDs, bound)
			e = s.draw(sc, nodes[first:nd], hopKey(seed, h), k, &sub)
		}
		hb.Indices, hb.EdgeIDs = sub.Indices, sub.EdgeIDs
		spanned = nd
		hb.Indices = hb.Indices[:e]
		hb.EdgeIDs = hb.EdgeIDs[:e]
		// The block carries the sampled edges' weights when the graph has
		// them (nn.AggWeighted aggregates by them); EdgeIDs still hold
		// CSC positions here.
		w := hb.Weights
		hb.Weights = nil
		if g.Weights != nil {
			hb.Weights = grow(w, e)
			for q, p := range hb.EdgeIDs {
				hb.Weights[q] = g.Weights[p]
			}
		}
		// Relabel in place: global source ids become local positions, new
		// nodes are appended.
		var t1 time.Time
		if s.timing != nil {
			t1 = time.Now()
		}
		if nodes, err = relabel(&dense, &sc.dense, &sc.hash, &sc.buckets, hb.Indices, nodes, h+1 < L, s.cfg.KeyIDs); err != nil {
			mb.Reset()
			return err
		}
		if s.timing != nil {
			t := &s.timing[h]
			t.edges.Add(int64(e))
			t.draw.Add(int64(t1.Sub(t0)))
			t.relabel.Add(int64(time.Since(t1)))
		}
		if g.EdgeIDs != nil {
			for q, p := range hb.EdgeIDs {
				hb.EdgeIDs[q] = g.EdgeIDs[p]
			}
		}
	}
	for h := 0; h < L; h++ {
		b := &blocks[L-1-h]
		b.NumDst, b.NumSrc = numDst[h], len(nodes)
		if h+1 < L {
			b.NumSrc = numDst[h+1]
		}
	}
	mb.SetInputs(nodes, len(seeds))
	return nil
}

// room returns s, its length kept, with room for n more elements: where
// it lacks it, a copy with a quarter more than that (hugemem.Make). The
// buffers it grows (a minibatch's node list, a hop's edge arrays) are
// reused by minibatches of varying size, and each of a pipeline's
// minibatches now and then sees a larger one than before: with capacity
// to spare they stop growing within a few epochs, instead of each
// reallocating, and faulting in fresh pages (1-2 MB each), epoch after
// epoch (slices.Grow's append policy did for the node lists).
func room[T any](s []T, n int) []T {
	if cap(s)-len(s) >= n {
		return s
	}
	need := len(s) + n
	t := hugemem.Make[T](len(s), need+need/4)
	copy(t, s)
	return t
}

// grow returns s resliced to length n, reallocating if needed.
func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return hugemem.Make[T](n, n+n/4)
	}
	return s[:n]
}

// spans reads the neighbour range of every destination node (a tight loop
// of independent loads, so that the memory system serves many at once) and
// returns an upper bound on the number of edges the hop draws. The ranges
// of dst[:done] are already in sc.spans from the previous hop (every hop's
// destinations extend the previous one's).
func (s *Sampler) spans(sc *scratch, dst []int32, done, k int) int {
	sp := sc.spansFor(len(dst), done)
	indptr := s.g.Indptr
	if s.cfg.Prefetch != nil {
		for i := 0; i < len(dst); i += PrefetchChunk {
			s.cfg.Prefetch(dst[i:min(i+PrefetchChunk, len(dst))])
		}
	}
	// The load loop does nothing else, so that as many loads as possible
	// are in flight; reading hi before lo (usually the same cache line) is
	// measurably faster.
	for i := done; i < len(dst); i++ {
		v := dst[i]
		hi := indptr[v+1]
		lo := indptr[v]
		sp[2*i+1] = hi
		sp[2*i] = lo
	}
	bound := 0
	switch {
	case k < 0:
		for i := 0; i < len(sp); i += 2 {
			bound += int(sp[i+1] - sp[i])
		}
	case s.cfg.Replace:
		for i := 0; i < len(sp); i += 2 {
			if sp[i+1] > sp[i] {
				bound += k
			}
		}
	default:
		for i := 0; i < len(sp); i += 2 {
			bound += min(int(sp[i+1]-sp[i]), k)
		}
	}
	return bound
}

// draw samples the in-edges of every destination dst[i] of the hop into
// hb (global source ids in indices, CSC positions in eids) and returns the
// number of edges drawn. Each destination's draws come from a generator
// seeded with its key under the hop key hk.
func (s *Sampler) draw(sc *scratch, dst []int32, hk uint64, k int, hb *graph.Block) int {
	g := s.g
	var rr rng.Rand
	r := &rr
	ind := g.Indices
	out, pos, ip := hb.Indices, hb.EdgeIDs, hb.Indptr
	sp := sc.spans
	nd := len(sp) / 2
	ip[0] = 0
	e := 0
	exclusions := len(sc.excl) > 0
	simple := !s.cfg.Weighted && !s.cfg.Replace
	for i := 0; i < nd; i++ {
		lo, hi := sp[2*i], sp[2*i+1]
		d := int(hi - lo)
		var cand []int64
		if exclusions {
			cand = sc.candidates(lo, hi)
			if cand != nil {
				d = len(cand)
			}
		}
		if cand == nil && (k < 0 || (simple && d <= k)) {
			// All neighbours.
			for p := lo; p < hi; p++ {
				pos[e] = p
				e++
			}
			ip[i+1] = int64(e)
			continue
		}
		r.Seed(s.nodeKey(hk, dst[i]))
		var w []float32
		if s.cfg.Weighted {
			if cand == nil {
				w = g.Weights[lo:hi]
			} else {
				sc.wtmp = grow(sc.wtmp, len(cand))
				for j, p := range cand {
					sc.wtmp[j] = g.Weights[p]
				}
				w = sc.wtmp
			}
		}
		c := s.pick(sc, r, d, k, w, pos[e:])
		if cand == nil {
			for q := e; q < e+c; q++ {
				pos[q] += lo
			}
		} else {
			for q := e; q < e+c; q++ {
				pos[q] = cand[pos[q]]
			}
		}
		e += c
		ip[i+1] = int64(e)
	}
	// Read the sources in a separate tight loop of independent loads, so
	// that the memory system serves many cache misses at once. Doing any
	// work on the loaded ids in this loop (counting them per relabelling
	// partition), or reading them while sampling without prefetching
	// them (drawFused does), was measured 20-45% slower on the whole
	// minibatch: fewer loads are in flight.
	for q, p := range pos[:e] {
		out[q] = ind[p]
	}
	return e
}

// drawFused draws a hop's uniform samples without replacement (k > 0, no
// exclusions) in one loop that also reads the neighbour ranges of the new
// destinations (dst[done:]; the others' are in sc.spans from the previous
// hop) and loads the sampled sources: a software pipeline in which the
// ranges of the destinations 2*prefetchAhead ahead and the neighbour lists
// of those prefetchAhead ahead are prefetched while the draws compute, so
// that the loads find them in cache and the misses overlap the
// arithmetic. Separate passes (every range, then the draws, then every
// source) left the core idle in the load passes and the memory idle in
// the draws: this loop samples 12-26 % more edges per CPU-second. It
// writes the same edges as spans and draw, and every destination's range
// to sc.spans; it grows hb's edge arrays as needed (hb.Indptr must have
// room for len(dst)+1 offsets).
func (s *Sampler) drawFused(sc *scratch, dst []int32, done int, hk uint64, k int, hb *graph.Block) int {
	nd := len(dst)
	sp := sc.spansFor(nd, done)
	indptr, ind := s.g.Indptr, s.g.Indices
	// The edge arrays start at their capacity or at 16 edges a
	// destination, and double when a destination's k edges do not fit (an
	// upper bound of len(dst)*k would be far too much for a large fanout).
	growEdges(hb, 0, nd*min(k, 16))
	out, pos, ip := hb.Indices, hb.EdgeIDs, hb.Indptr
	// ranges reads the ranges of dst[a:b] (those not known from the
	// previous hop) and prefetches their index lines.
	ranges := func(a, b int) {
		for i := max(a, done); i < b; i++ {
			v := dst[i]
			hi := indptr[v+1]
			lo := indptr[v]
			sp[2*i+1] = hi
			sp[2*i] = lo
		}
		if s.prefetch {
			prefetch.Spans32(ind, sp[2*a:2*b])
		}
	}
	const G = prefetchGroup
	D := prefetchAhead
	if k <= fewDraws {
		D = 2 * prefetchAhead
	}
	// Config.Prefetch: the chunk starting at i, and the look-ahead below
	// (ranges 2D+G nodes ahead), before they are read.
	fetched := 0
	fetch := func(i int) {
		if end := min(nd, i+PrefetchChunk+2*D+G); end > fetched {
			s.cfg.Prefetch(dst[fetched:end])
			fetched = end
		}
	}
	pf := s.cfg.Prefetch != nil
	if pf {
		fetch(0)
	}
	if b := min(2*D, nd); done < b && s.prefetch {
		prefetch.Rows64(indptr, dst[done:b])
	}
	ranges(0, min(D, nd))
	var rr rng.Rand
	r := &rr
	ip[0] = 0
	e := 0
	for i := 0; i < nd; i++ {
		if pf && i%PrefetchChunk == 0 && i > 0 {
			fetch(i)
		}
		if i%G == 0 {
			// Ranges of the nodes D ahead (prefetched D nodes ago) and
			// their index lines, ranges of the nodes 2D ahead.
			if a, b := max(i+2*D, done), min(i+2*D+G, nd); a < b && s.prefetch {
				prefetch.Rows64(indptr, dst[a:b])
			}
			if i+D < nd {
				ranges(i+D, min(i+D+G, nd))
			}
		}
		lo, hi := sp[2*i], sp[2*i+1]
		d := int(hi - lo)
		if c := min(d, k); e+c > len(out) {
			growEdges(hb, e, max(2*len(out), e+c))
			out, pos = hb.Indices, hb.EdgeIDs
		}
		if d <= k {
			takeList(out[e:e+d], pos[e:e+d], ind[lo:hi], lo)
			e += d
			ip[i+1] = int64(e)
			continue
		}
		r.Seed(s.nodeKey(hk, dst[i]))
		if d <= 64 {
			takeMask(r.FloydMask(d, k), ind[lo:hi], lo, out[e:e+k], pos[e:e+k])
			e += k
		} else {
			e += s.drawSome(sc, r, lo, d, k, out[e:], pos[e:])
		}
		ip[i+1] = int64(e)
	}
	return e
}

// spansFor returns sc.spans sized for the ranges of nd destinations,
// keeping those of the first done (the previous hop's destinations).
func (sc *scratch) spansFor(nd, done int) []int64 {
	if cap(sc.spans) < 2*nd {
		sc.spans = slices.Grow(sc.spans[:2*done], 2*(nd-done)+nd/2)
	}
	sc.spans = sc.spans[:2*nd]
	return sc.spans
}

// drawAhead draws what drawFused does, for a hop of at most fewDraws
// draws a destination (aheadMaxDraws on some CPUs, below) on a graph
// larger than the cache (the last hop of fanouts like [15,10,5]): in a pipeline of three stages, the ranges of
// the destinations 2D ahead are prefetched; those of the destinations D
// ahead are read and their draws made, and only the lines of the drawn
// entries prefetched (the draws are kept as masks of list offsets, or,
// from a list of over 64, as positions already in pos); the current
// destination's sources are then loaded. drawFused prefetches the first
// eight lines of every list before drawing: 2.0 lines a destination
// where the draws take 1.7 on the 10M-node synthetic graph's last hop,
// and none of the entries past them that a long list's draws take.
// Measured (Xeon with AMX, one core, 10M nodes and 200M edges in huge
// pages, [15,10,5], rounds alternated in one process, seven runs 8 or
// 12 ahead): the last hop drew at 0.93-0.98 of drawFused's time and the
// minibatch took 0.95-0.98; on the 1M-node graph (mostly in the host's
// cache) 0.99-1.00. A first form, which kept every draw's position, took
// 1.07-1.10 times drawFused's time on the middle hop (10 draws, lists
// mostly taken whole): hops of more draws stay in drawFused.
//
// The ranges wait for their loads in a ring too, and go to sc.spans only
// where a later hop (keep) reads them: the last hop's 16 bytes a
// destination written to a 2 MB array cost line fills that the list
// reads were waiting for. Measured (same machine and graph, alternated
// in one process): the last hop of [15,10,5] drew at 14.4 against 14.9
// ns an edge, the minibatch 0.98 of the time.
//
// The draws are made drawGroup destinations at a time: their ranges
// first, then their Floyd masks (side by side, rng.FloydMasks8, where it
// has a vector kernel), then the prefetches of their drawn entries.
// In groups of 4, each range read and drawn in turn, the draws'
// arithmetic added to the waits for memory instead of overlapping them
// (one more FloydMask call a destination added its own 7 ns). Measured
// (AMD EPYC Zen 5, [15,10,5], rounds of 20 minibatches alternated in one
// process with groups of 4, 12 ahead): on
// the 10M-node graph the last hop drew in 0.73-0.79 of the time with the
// AVX-512 kernel (the minibatch 0.77-0.90) and 0.75-0.80 with the masks
// drawn one at a time (GRAPHMILL_KERNEL=avx2); on the 1M-node graph
// 0.86-0.89 and 1.00. Groups of 8 or 32, and 8, 24 or 32 ahead, did
// about as well as 16 and 16 (0.70-0.84); with groups of 4 the kernel
// made no difference. Lanes drawn by FloydMasks8 without a kernel (one
// at a time, after the ranges) cost more than drawing them in the range
// loop: 1.09 of the time on the 1M-node graph, so that is what a CPU
// without one does. With AVX2's kernel (GRAPHMILL_KERNEL=avx2, rounds of
// 20 minibatches alternated in one process, medians) the minibatch took
// 0.950-0.952 of the range loop's time on the 1M-node graph and 0.90-1.04
// on the 10M-node one.
// On AMD EPYC Zen 1, whose 256-bit vectors run in two halves, rng's
// scalar kernel draws the lanes instead (four side by side): the
// minibatch took 0.971 of the time with AVX2's kernel (one core, the
// 1M-node graph, 40 paired rounds of 20 minibatches, median; quartiles
// 0.959-0.981).
//
// The drawn neighbours are taken a group at a time too (takeRing, a
// scalar kernel), after the draws of the group D ahead. Measured on AMD
// EPYC Zen 1 (family 23, one core, the 1M-node graph, [15,10,5], 39
// paired rounds of 20 minibatches in one process): the minibatch took
// 0.873 of the time (median; quartiles 0.822-0.918) of taking them one
// destination at a time in Go (takeMask: a BSF, slow on Zen 1, and three
// slices' bounds checks a neighbour).
//
// The group's two loops over its destinations (the ranges and Floyd's
// lanes; the masks, edge counts and offsets) run in assembly where they
// can (aheadRanges, aheadMasks, which also prefetch the drawn entries'
// lines as prefetch.Masks32 did), handing the destinations they do not
// take (lists over 64, bad ids) to the Go loops. Measured on AMD EPYC Zen
// 1 (one core, the 1M-node graph, [15,10,5], 40 paired rounds of 20
// minibatches in one process, medians): the last hop drew in 0.839 of
// the Go loops' time and the minibatch took 0.913 (quartiles
// 0.905-0.919); the prefetches in aheadMasks instead of Masks32 alone
// were worth 0.950 of the last hop's draws.
//
// On CPUs that run 256-bit vectors in two halves (Sampler.halfWidth),
// where the Floyd lanes and the loops run in scalar kernels, two things
// differ. A hop of at most fewDraws draws a group in two halves of eight
// destinations, each's Floyd lanes and then its entries' prefetches: the
// first half's prefetches are in flight while the second's lanes are
// drawn, where a group's prefetches at once filled the miss buffers and
// stalled the core. Measured on AMD EPYC Zen 1 (one core, the 1M-node
// graph, [15,10,5], paired rounds of 40 minibatches, medians): the last
// hop drew in 0.929-0.931 of the time, the minibatch took 0.962-0.967;
// a hop of 10 draws ([25,10]'s last) 1.01, so it keeps whole groups;
// halves taken as well as drawn (groups of eight) 0.999. And hops of up
// to aheadMaxDraws draws take drawAhead (same machine and graph, 40
// paired rounds of 40 minibatches, medians): [25,10] took 0.949 and
// 0.956 of drawFused's time (its last hop drew in 0.941 and 0.960),
// [15,10,5] 0.996 (its middle hop 0.994).
// Other CPUs keep whole groups (not measured there), and hops of more
// than fewDraws stay in drawFused: an earlier form of drawAhead took
// 1.07-1.10 times its time on the middle hop on the Xeon with AMX.
func (s *Sampler) drawAhead(sc *scratch, dst []int32, done int, hk uint64, k int, hb *graph.Block, keep bool) int {
	nd := len(dst)
	sp := sc.spans[:2*done]
	if keep {
		sp = sc.spansFor(nd, done)
	}
	indptr, ind := s.g.Indptr, s.g.Indices
	growEdges(hb, 0, nd*k) // k <= aheadMaxDraws: no growing while drawing
	out, pos, ip := hb.Indices, hb.EdgeIDs, hb.Indptr
	const (
		G = drawGroup
		D = drawAheadBy // a multiple of G: draw's groups start at multiples of G
		R = aheadRing   // the rings: at least D+G, a multiple of G
	)
	// The conditions at compile time (a negative constant is no uint),
	// G a multiple of 8 of at most 16 (draw's lanes), and rings of 64
	// (the kernels' slots are j&63).
	const _, _, _, _, _ uint = -(D%G + R%G + G%8), R - D - G, 16 - G, R - 64, 64 - R
	var ring [R]uint64    // masks
	var span [2 * R]int64 // ranges
	// A group's Floyd draws: the seeds and degrees FloydMasks8 reads, and
	// the masks (draw reads only the lanes it set, so nothing is cleared
	// between groups).
	var seeds, ds, ms [G]uint64
	var rr rng.Rand
	r := &rr
	ip[0] = 0
	e := 0
	vector := s.floydVector
	var ag aheadGroup
	kernels := s.aheadAsm && nd > 0
	if kernels {
		ag = aheadGroup{dst: &dst[0], sp: unsafe.SliceData(sp), indptr: &indptr[0], span: &span[0],
			seeds: &seeds[0], ds: &ds[0], ms: &ms[0], ring: &ring[0], ip: &ip[0],
			keyIDs: unsafe.SliceData(s.cfg.KeyIDs), hk: hk, done: done, nodes: s.g.NumNodes, k: k, ind: unsafe.SliceData(ind)}
		if keep {
			ag.keep = 1
		}
	}
	// draw reads the ranges of dst[a:b] (a%8 == 0, b-a <= G) where the
	// previous hop did not (keeping them for the next hop, if any), draws
	// them and prefetches the drawn entries.
	draw := func(a, b int) {
		var floyd uint16 // lanes drawn by FloydMasks8
		j := a
		if kernels && vector {
			var f uint64
			f, j = aheadRanges(&ag, a, b)
			floyd = uint16(f)
		}
		for ; j < b; j++ {
			var lo, hi int64
			if j < done {
				lo, hi = sp[2*j], sp[2*j+1]
			} else {
				v := dst[j]
				hi = indptr[v+1]
				lo = indptr[v]
				if keep {
					sp[2*j+1] = hi
					sp[2*j] = lo
				}
			}
			span[2*(j%R)], span[2*(j%R)+1] = lo, hi
			if d := hi - lo; d > int64(k) && d <= 64 {
				if vector {
					seeds[j-a], ds[j-a] = s.nodeKey(hk, dst[j]), uint64(d)
					floyd |= 1 << (j - a)
				} else {
					r.Seed(s.nodeKey(hk, dst[j]))
					ms[j-a] = r.FloydMask(int(d), k)
				}
			}
		}
		for c := 0; c < b-a; c += 8 {
			if f := uint8(floyd >> c); f != 0 {
				rng.FloydMasks8((*[8]uint64)(seeds[c:c+8]), (*[8]uint64)(ds[c:c+8]), k, f, (*[8]uint64)(ms[c:c+8]))
			}
		}
		for j := a; j < b; j++ {
			if kernels {
				var e64 int64
				e64, j = aheadMasks(&ag, a, j, b, int64(e))
				if e = int(e64); j == b {
					break
				}
			}
			lo, hi := span[2*(j%R)], span[2*(j%R)+1]
			d := int(hi - lo)
			c := min(d, k)
			var m uint64
			switch {
			case d <= k:
				m = 1<<d - 1 // every neighbour (d <= k <= aheadMaxDraws)
			case d <= 64:
				m = ms[j-a]
			default:
				r.Seed(s.nodeKey(hk, dst[j]))
				c = s.pick(sc, r, d, k, nil, pos[e:])
				for q := e; q < e+c; q++ {
					pos[q] += lo
				}
				prefetch.At32(ind, pos[e:e+c])
			}
			ring[j%R] = m
			e += c
			ip[j+1] = int64(e)
		}
		if !kernels { // aheadMasks prefetched them
			prefetch.Masks32(ind, span[2*(a%R):2*(a%R+b-a)], ring[a%R:a%R+b-a])
		}
	}
	// A hop of at most fewDraws draws a group in halves (see above).
	half := G
	if k <= fewDraws && s.halfWidth {
		half = G / 2
	}
	if b := min(2*D, nd); done < b {
		prefetch.Rows64(indptr, dst[done:b])
	}
	for a := 0; a < min(D, nd); a += half {
		draw(a, min(a+half, nd))
	}
	var ps posStream
	ps.begin(pos, s.streamPos)
	for i := 0; i < nd; i += G {
		if a, b := max(i+2*D, done), min(i+2*D+G, nd); a < b {
			prefetch.Rows64(indptr, dst[a:b])
		}
		for a := i + D; a < min(i+D+G, nd); a += half {
			draw(a, min(a+half, nd))
		}
		b, r := min(i+G, nd), i%R
		p, q := ip[i], ip[b]
		takeRing(ind, span[2*r:2*(r+b-i)], ring[r:r+b-i], ip[i:b+1], out, pos, ps.stage(p, q))
		ps.wrote(q)
	}
	ps.finish(int64(e))
	return e
}

// posStream stages a hop's edge positions (the block's EdgeIDs) in a
// small buffer and writes them to their array a chunk of whole cache
// lines at a time with streaming stores (internal/stream), on a graph far
// larger than the cache (Sampler.streamPos). With ordinary stores, each
// new line of the array (every 1.6 destinations of a hop of 5 draws) was
// first read for ownership, holding a line-fill buffer that the list
// reads were waiting for, for a memory round trip. Measured (Xeon with
// AMX, one core, synthetic graphs in huge pages, [15,10,5], alternated in
// one process with ordinary stores): on the 10M-node graph (880 MB) the
// last hop drew at 13.1 and 12.7 ns an edge against 13.5 and 13.1, and
// the minibatch took 0.972-0.984 of the time; but on the 1M-node graph
// (88 MB, mostly in the host's cache, where the array's lines were still
// in cache from the previous minibatch) 6.9 against 6.0 ns, the minibatch
// 1.07 times as long: hence streamGraphBytes.
type posStream struct {
	on         bool
	dst        []int64
	done, next int64 // dst[:done] written; the next chunk boundary
	buf        [posChunk + stream.Line + drawGroup*aheadMaxDraws]int64
}

// posChunk is the number of positions posStream writes at a time: 32
// lines, so that one call's cost is shared.
const posChunk = 256

// begin starts a hop's positions dst, staged if on.
func (ps *posStream) begin(dst []int64, on bool) {
	ps.on, ps.dst, ps.done = on && stream.Enabled(), dst, 0
	// The first chunk ends where a line of dst starts: so do the others.
	ps.next = int64(stream.Head(dst)) + posChunk
}

// stage returns where the positions dst[p:q] are written (q-p <=
// drawGroup*aheadMaxDraws, a group of drawAhead's destinations; p is where the
// previous call's q was).
func (ps *posStream) stage(p, q int64) []int64 {
	if !ps.on {
		return ps.dst[p:q]
	}
	return ps.buf[p-ps.done : q-ps.done]
}

// wrote reports that the positions before q are written: a chunk
// complete, it goes to dst.
func (ps *posStream) wrote(q int64) {
	if !ps.on || q < ps.next {
		return
	}
	n := ps.next - ps.done
	stream.Copy(ps.dst[ps.done:ps.next], ps.buf[:n])
	copy(ps.buf[:], ps.buf[n:q-ps.done])
	ps.done = ps.next
	ps.next += posChunk
}

// finish writes the positions staged before e, and fences the streaming
// stores.
func (ps *posStream) finish(e int64) {
	if !ps.on {
		return
	}
	copy(ps.dst[ps.done:e], ps.buf[:e-ps.done])
	stream.Fence()
}

// drawCached draws what drawFused does, in passes (see Sampler.passes
// for when): every destination's range and offset and the lists of those
// that take all their neighbours (takeAll, without a branch on a short
// list's length), then the draws of the others, prefetching their lists
// where the graph is larger than the cache. With its lines in cache, a
// destination's cost is its branches, not its loads, and drawFused's one
// loop mispredicted on every short list's length. The destinations are
// distinct nodes, so a hop draws at most as many edges as the graph has.
func (s *Sampler) drawCached(sc *scratch, dst []int32, hk uint64, k int, hb *graph.Block) int {
	nd := len(dst)
	ind := s.g.Indices
	bound := len(ind)
	if k <= bound && nd*k < bound { // k <= bound < 2^31: no overflow
		bound = nd * k
	}
	growEdges(hb, 0, bound+takeAllSlack)
	out, pos, ip := hb.Indices, hb.EdgeIDs, hb.Indptr
	sc.todo = grow(sc.todo, nd)
	sc.spans = grow(sc.spans, 2*nd)
	sp := sc.spans
	nt := takeAll(ind, s.g.Indptr, dst, k, sp, out, pos, ip, sc.todo)
	var rr rng.Rand
	r := &rr
	todo := sc.todo[:nt]
	if s.cachedVector {
		s.drawCachedVector(sc, dst, hk, k, hb, todo)
		return int(ip[nd])
	}
	for j, i := range todo {
		if s.prefetch && j+passAhead < len(todo) {
			t := todo[j+passAhead]
			prefetch.Spans32(ind, sp[2*t:2*t+2])
		}
		lo, hi := sp[2*i], sp[2*i+1]
		e := ip[i]
		r.Seed(s.nodeKey(hk, dst[i]))
		s.drawSome(sc, r, lo, int(hi-lo), k, out[e:], pos[e:])
	}
	return int(ip[nd])
}

// drawCachedVector is drawCached's draws where rng.FloydMasks8 and
// takeMasks have kernels (it runs without them too: tests): the
// destinations of todo (each with more than k neighbours) in groups of
// eight, the masks of those with at most 64 drawn side by side (the same
// masks, so the same edges, as drawn one at a time) and their neighbours
// taken sixteen at a time. Measured before takeMasks had its kernel (AMD
// EPYC Zen 5, one core, paired rounds of 200 minibatches, medians): a
// minibatch took 0.958 of the time on Cora with fanouts 15,10,5 (0.978
// with 25,10), 0.94-0.95 on a 40k-node graph of 10 edges a node and
// 0.98-0.99 on a 200k-node one of 5. With AVX2's FloydMasks8 kernel and
// takeMask in Go (GRAPHMILL_KERNEL=avx2): 1.006-1.012 on Cora and
// 1.005-1.008 on the 40k-node graph; with takeMasks's scalar kernel
// 0.94-0.97 on Cora and 0.87-0.93 on the 40k-node graph (see
// takeMasksKernel).
func (s *Sampler) drawCachedVector(sc *scratch, dst []int32, hk uint64, k int, hb *graph.Block, todo []int32) {
	ind, sp := s.g.Indices, sc.spans
	out, pos, ip := hb.Indices, hb.EdgeIDs, hb.Indptr
	var seeds, ds [8]uint64
	ms := &sc.masks
	var rr rng.Rand
	r := &rr
	for c := 0; c < len(todo); c += 8 {
		g := todo[c:min(c+8, len(todo))]
		if s.prefetch {
			for _, t := range todo[min(c+passAhead, len(todo)):min(c+passAhead+8, len(todo))] {
				prefetch.Spans32(ind, sp[2*t:2*t+2])
			}
		}
		var lanes uint8
		for j, i := range g {
			if d := sp[2*i+1] - sp[2*i]; d <= 64 {
				seeds[j], ds[j] = s.nodeKey(hk, dst[i]), uint64(d)
				lanes |= 1 << j
			}
		}
		if lanes != 0 {
			rng.FloydMasks8(&seeds, &ds, k, lanes, ms)
		}
		takeMasks(ind, sp, g, lanes, ms, k, out, pos, ip)
		for j, i := range g {
			if lanes>>j&1 == 0 { // more than 64 neighbours
				lo, hi, e := sp[2*i], sp[2*i+1], ip[i]
				r.Seed(s.nodeKey(hk, dst[i]))
				s.drawSome(sc, r, lo, int(hi-lo), k, out[e:], pos[e:])
			}
		}
	}
}

// takeMasksGo is takeMasks one neighbour at a time (takeMask).
func takeMasksGo(ind []int32, sp []int64, todo []int32, lanes uint8, ms *[8]uint64, k int, out []int32, pos, ip []int64) {
	for j, i := range todo {
		if lanes>>j&1 != 0 {
			lo, hi, e := sp[2*i], sp[2*i+1], ip[i]
			takeMask(ms[j], ind[lo:hi], lo, out[e:e+int64(k)], pos[e:e+int64(k)])
		}
	}
}

// passes reports whether a hop of fanout k > 0 (uniform, without
// replacement or exclusions, no Config.Prefetch) is drawn in passes
// (drawCached): on a graph held in cache, and on one of at most
// midCacheBytes whose mean degree is at most twice the fanout, where most
// destinations take all their neighbours. Passes over a graph of 4.4-14 MB (AMD EPYC Zen 5, paired,
// minibatches of [25,10] and [15,10,5]) took 0.51-0.55 of the fused
// loop's time at 5 edges a node (200k nodes), 0.78-0.86 at 5 (500k nodes)
// and 0.88-0.93 for [25,10] at 20; 1.10-1.20 for [15,10,5] at 20, whose
// last hop (5 draws) now stays fused.
func (s *Sampler) passes(k int) bool {
	if s.cfg.Prefetch != nil || !s.passOK {
		return false
	}
	return !s.prefetch || 2*int64(k)*int64(s.g.NumNodes) >= int64(len(s.g.Indices))
}

// takeAllWidth is the kernel takeAll uses (takeAllWidths; tests change it).
var takeAllWidth = takeAllWidths[0]

// takeAllGo is takeAll in Go.
func takeAllGo(ind []int32, indptr []int64, dst []int32, k int, sp []int64, out []int32, pos, ip []int64, todo []int32) int {
	e, nt := int64(0), 0
	ip[0] = 0
	for i, v := range dst {
		lo, hi := indptr[v], indptr[v+1]
		sp[2*i], sp[2*i+1] = lo, hi
		if d := hi - lo; d <= int64(k) {
			takeList(out[e:e+d], pos[e:e+d], ind[lo:hi], lo)
			e += d
		} else {
			todo[nt] = int32(i)
			nt++
			e += int64(k)
		}
		ip[i+1] = e
	}
	return nt
}

// takeList writes a whole list, src, starting at CSC position lo, to out
// and its positions to pos.
func takeList(out []int32, pos []int64, src []int32, lo int64) {
	pos, src = pos[:len(out)], src[:len(out)]
	for j := range out {
		out[j] = src[j]
		pos[j] = lo + int64(j)
	}
}

// takeMask writes the len(out) neighbours of src (a list starting at CSC
// position lo) whose offsets are mask's set bits, in order, to out and
// their positions to pos.
func takeMask(mask uint64, src []int32, lo int64, out []int32, pos []int64) {
	pos = pos[:len(out)]
	for c := range out {
		t := bits.TrailingZeros64(mask)
		mask &= mask - 1
		out[c] = src[t]
		pos[c] = lo + int64(t)
	}
}

// takeRingGo takes the drawn neighbours of a group of drawAhead's
// destinations, the j-th's list at span[2j:2j+2], its edges at ip[j] up
// to ip[j+1]: a list of at most 64 those of the mask ring[j] (takeMask),
// a longer one those whose positions pick wrote to pos. It writes the
// sources to out and the positions to w, which holds the group's from
// ip[0] on (posStream.stage).
func takeRingGo(ind []int32, span []int64, ring []uint64, ip []int64, out []int32, pos, w []int64) {
	for j := range len(ip) - 1 {
		lo, hi := span[2*j], span[2*j+1]
		p, q := ip[j], ip[j+1]
		ws := w[p-ip[0] : q-ip[0]]
		if hi-lo <= 64 {
			takeMask(ring[j], ind[lo:hi], lo, out[p:q], ws)
			continue
		}
		for x := p; x < q; x++ {
			out[x] = ind[pos[x]]
			ws[x-p] = pos[x]
		}
	}
}

// drawSome draws k of the d > k neighbours of a destination whose list
// starts at lo, uniformly without replacement with r, and writes their
// sources to out and CSC positions to pos (sorted by position where d <=
// 64); it returns how many it drew.
func (s *Sampler) drawSome(sc *scratch, r *rng.Rand, lo int64, d, k int, out []int32, pos []int64) int {
	src := s.g.Indices[lo : lo+int64(d)]
	if d <= 64 {
		takeMask(r.FloydMask(d, k), src, lo, out[:k], pos[:k])
		return k
	}
	c := s.pick(sc, r, d, k, nil, pos)
	for q, t := range pos[:c] {
		out[q] = src[t]
		pos[q] = lo + t
	}
	return c
}

// The sampler prefetches the neighbour lists of the destinations
// prefetchAhead ahead of the draws, and their ranges twice as far ahead,
// in groups of prefetchGroup destinations. Prefetched a few at a time,
// the lines arrive while the draws compute; prefetched in long bursts, the
// bursts stall the core as soon as its miss buffers are full (measured:
// 3 lines per item and 30 ns of arithmetic, 58 ns per item a few at a
// time, 128 ns in bursts of 32, 225 ns with no prefetch). In drawFused
// a hop of at most fewDraws draws a destination prefetches twice as far
// ahead: its destinations take too little time each for 8 of them to
// cover a load on AMD EPYC Zen 5, whose loads from an 839 MiB graph take
// 359 ns. 10M nodes, [15,10,5] (its last hop draws 5): 0.58-0.61 of the
// read ceiling with every hop 8 ahead (four runs), 0.63-0.64 12 ahead,
// 0.64-0.72 16 ahead; --quick 0.65-0.74 and 0.76-0.86. [25,10] lost up
// to a third in some --quick runs with its hops 16 ahead, so its hops (10
// and 25 draws) stay at 8. Such a hop now takes drawAhead (but with
// Config.Prefetch), whose draws are made drawAheadBy destinations ahead
// of the loads and whose ranges twice as far: on the Xeon with AMX its
// last hop drew as fast 8 ahead as 12 (paired, the minibatch 0.94-0.98
// and 0.95-0.98 of drawFused's time), and 3-5 % slower 16 ahead, in
// groups of 4; in groups of 16 (drawGroup) 8, 16, 24 and 32 ahead did
// about as well on Zen 5, and 16 leaves room for its longer loads.
//
// A graph whose offsets and neighbour lists take at most cachedGraphBytes
// stays in the caches, and drawFused skips the prefetches, which then only
// cost instructions. On AMD EPYC Zen 5 (1 MiB of L2 a core) a minibatch
// took 0.80-0.87 of the time without them on synthetic graphs of 0.5-1.9
// MB and on Cora (64 KB), 0.88-0.94 at 2.9 and 3.8 MB, and 1.6-2.1 times
// as long at 7.7 MB (paired rounds, [25,10] and [15,10,5]). The bound
// leaves room for machines with less cache a core. Such a graph is now
// drawn in passes (drawCached), which no longer hide latency and need no
// prefetches: on Zen 5 a minibatch took 0.46-0.55 of drawFused's time on
// Cora, 0.59-0.69 on a 40k-node graph of 10 edges a node, 0.77-0.99 on a
// 20k-node one of 20 (paired rounds, [25,10] and [15,10,5]; the copies
// in Go instead of takeAll8 0.63-0.72 on Cora). A graph of over
// streamGraphBytes is far larger than the cache, and the positions its
// hops of few draws sample (drawAhead) are written with streaming stores
// (posStream): measured to pay on 880 MB and to cost on 88 MB.
const (
	cachedGraphBytes = 2 << 20
	midCacheBytes    = 16 << 20
	streamGraphBytes = 256 << 20
	passAhead        = 8
	prefetchAhead    = 8
	prefetchGroup    = 4
	fewDraws         = 8
	aheadMaxDraws    = 10 // the most drawAhead takes (its buffers' size)
	drawGroup        = 16 // a multiple of 8 (rng.FloydMasks8's lanes), at most 16
	drawAheadBy      = 16
)

// growEdges makes hb's edge arrays (Indices, EdgeIDs) at least n long,
// or as long as their capacities, keeping their first e entries.
func growEdges(hb *graph.Block, e, n int) {
	n = max(n, min(cap(hb.Indices), cap(hb.EdgeIDs)))
	hb.Indices = room(hb.Indices[:e], n-e)[:n]
	hb.EdgeIDs = room(hb.EdgeIDs[:e], n-e)[:n]
}

// nodeKey returns the seed of node v's draws under the hop key hk.
func (s *Sampler) nodeKey(hk uint64, v int32) uint64 {
	if s.cfg.KeyIDs != nil {
		v = s.cfg.KeyIDs[v]
	}
	return hk ^ uint64(uint32(v))
}

// pick chooses offsets in [0, d) for one node (fanout k, weights w when
// weighted) and writes them to out, returning how many it wrote.
func (s *Sampler) pick(sc *scratch, r *rng.Rand, d, k int, w []float32, out []int64) int {
	if d == 0 {
		return 0
	}
	if k < 0 {
		for j := 0; j < d; j++ {
			out[j] = int64(j)
		}
		return d
	}
	if s.cfg.Weighted {
		if s.cfg.Replace {
			return sc.weightedReplace(r, k, w, out)
		}
		return sc.weighted(r, k, w, out)
	}
	if s.cfg.Replace {
		for j := 0; j < k; j++ {
			out[j] = int64(r.IntN(d))
		}
		return k
	}
	if d <= k {
		for j := 0; j < d; j++ {
			out[j] = int64(j)
		}
		return d
	}
	if d <= 64 {
		// Floyd's algorithm with the chosen set in one register; the
		// offsets come out sorted.
		mask := r.FloydMask(d, k)
		c := 0
		for mask != 0 {
			out[c] = int64(bits.TrailingZeros64(mask))
			mask &= mask - 1
			c++
		}
		return c
	}
	// Floyd's algorithm with a scratch bitset, cleared afterwards.
	if words := (d + 63) / 64; len(sc.bits) < words {
		sc.bits = make([]uint64, words)
	}
	b := sc.bits
	c := 0
	for j := d - k; j < d; j++ {
		t := r.IntN(j + 1)
		if b[t>>6]>>(uint(t)&63)&1 != 0 {
			t = j
		}
		b[t>>6] |= 1 << (uint(t) & 63)
		out[c] = int64(t)
		c++
	}
	for _, t := range out[:c] {
		b[t>>6] = 0
	}
	return c
}

// weightedReplace draws k offsets with replacement, each with probability
// w[j]/sum(w), by binary search over prefix sums.
func (sc *scratch) weightedReplace(r *rng.Rand, k int, w []float32, out []int64) int {
	sc.cum = grow(sc.cum, len(w))
	cum := sc.cum
	total := 0.0
	last := -1
	for j, x := range w {
		total += float64(x)
		cum[j] = total
		if x > 0 {
			last = j
		}
	}
	if last < 0 {
		return 0
	}
	for j := 0; j < k; j++ {
		u := r.Float64() * total
		lo, hi := 0, len(cum)
		for lo < hi { // first index with cum > u
			mid := int(uint(lo+hi) >> 1)
			if cum[mid] > u {
				hi = mid
			} else {
				lo = mid + 1
			}
		}
		if lo > last { // rounding: u*total may round up to total
			lo = last
		}
		out[j] = int64(lo)
	}
	return k
}

// weighted draws min(k, #positive weights) offsets without replacement by
// Efraimidis-Spirakis: the k smallest keys E_j/w[j], E_j ~ Exp(1).
func (sc *scratch) weighted(r *rng.Rand, k int, w []float32, out []int64) int {
	keys := sc.keys[:0]
	for j, x := range w {
		if x > 0 {
			u := 1 - r.Float64() // (0, 1]
			keys = append(keys, wkey{-math.Log(u) / float64(x), int64(j)})
		}
	}
	sc.keys = keys
	if len(keys) > k {
		slices.SortFunc(keys, func(a, b wkey) int {
			if a.key < b.key {
				return -1
			}
			if a.key > b.key {
				return 1
			}
			return 0
		})
		keys = keys[:k]
	}
	for j, kk := range keys {
		out[j] = kk.off
	}
	return len(keys)
}

// setExclusions turns edge ids into sorted CSC positions in sc.excl.
func (s *Sampler) setExclusions(sc *scratch, exclude []int64) error {
	sc.excl = sc.excl[:0]
	if len(exclude) == 0 {
		return nil
	}
	m := int64(len(s.g.Indices))
	if s.g.EdgeIDs == nil {
		for _, id := range exclude {
			if id < 0 || id >= m {
				return fmt.Errorf("sample: excluded edge id %d is not an edge position in [0, %d)", id, m)
			}
			sc.excl = append(sc.excl, id)
		}
	} else {
		s.eidOnce.Do(s.buildEdgeIndex)
		for _, id := range exclude {
			if id < 0 {
				return fmt.Errorf("sample: excluded edge id %d is negative", id)
			}
			if id < int64(len(s.eidPos)) && s.eidPos[id] >= 0 {
				sc.excl = append(sc.excl, s.eidPos[id])
			}
		}
	}
	slices.Sort(sc.excl)
	sc.excl = slices.Compact(sc.excl)
	return nil
}

// buildEdgeIndex inverts g.EdgeIDs.
func (s *Sampler) buildEdgeIndex() {
	maxID := int64(-1)
	for _, id := range s.g.EdgeIDs {
		maxID = max(maxID, id)
	}
	pos := make([]int64, maxID+1)
	for i := range pos {
		pos[i] = -1
	}
	for p, id := range s.g.EdgeIDs {
		if id >= 0 {
			pos[id] = int64(p)
		}
	}
	s.eidPos = pos
}

// candidates returns the positions in [lo, hi) that are not excluded, or
// nil if none is excluded.
func (sc *scratch) candidates(lo, hi int64) []int64 {
	a, _ := slices.BinarySearch(sc.excl, lo)
	if a == len(sc.excl) || sc.excl[a] >= hi {
		return nil
	}
	c := sc.cand[:0]
	x := sc.excl[a:]
	for p := lo; p < hi; p++ {
		if len(x) > 0 && x[0] == p {
			x = x[1:]
			continue
		}
		c = append(c, p)
	}
	sc.cand = c
	if len(c) == 0 {
		return noCandidates
	}
	return c
}

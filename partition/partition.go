package partition

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/graphmill/graphmill/dataset/parts"
	"github.com/graphmill/graphmill/graph"
	"github.com/graphmill/graphmill/internal/arena"
	"github.com/graphmill/graphmill/internal/memstat"
	"github.com/graphmill/graphmill/internal/par"
	"github.com/graphmill/graphmill/internal/rng"
)

// Method selects a partitioning algorithm.
type Method string

const (
	// Multilevel is the METIS-style multilevel k-way partitioner: best cut.
	Multilevel Method = "metis"
	// Fennel is the one-pass streaming partitioner of Tsourakakis et al.
	// (WSDM 2014): a worse cut, but little memory beyond the graph.
	Fennel Method = "fennel"
	// Random assigns nodes to parts uniformly at random (exactly balanced
	// node counts): the baseline every other method must beat.
	Random Method = "random"
)

// Methods lists the methods ParseMethod accepts.
var Methods = []Method{Multilevel, Fennel, Random}

// ParseMethod returns the method called s ("metis" or "multilevel",
// "fennel", "random"), case-insensitively.
func ParseMethod(s string) (Method, error) {
	switch strings.ToLower(s) {
	case "metis", "multilevel", "":
		return Multilevel, nil
	case "fennel":
		return Fennel, nil
	case "random":
		return Random, nil
	}
	return "", fmt.Errorf("partition: unknown method %q (want metis, fennel or random)", s)
}

// DefaultImbalance is the default balance tolerance: a part may hold up
// to 3% more than the average, like METIS's default ufactor of 30.
const DefaultImbalance = 1.03

// Options controls Partition.
type Options struct {
	// Parts is the number of parts K, in [1, number of nodes].
	Parts int
	// Method is the algorithm (default Multilevel).
	Method Method
	// Imbalance is the balance tolerance: every part holds at most
	// Imbalance times the average node count (and the average of every
	// extra weight). Default DefaultImbalance; must be >= 1.
	Imbalance float64
	// Weights are extra balance constraints, each a non-negative weight
	// per node balanced across parts together with the node count (for
	// example 1 for training nodes and 0 otherwise, or node degrees to
	// balance edges). Multilevel and Fennel honour them; Random ignores
	// them.
	Weights [][]int32
	// Seed makes the result reproducible: the same graph, options and seed
	// give the same partition whatever the number of workers.
	Seed uint64
	// Workers bounds the goroutines used (0: all cores).
	Workers int
	// MaxCoarseBytes bounds the memory of the coarse graphs Multilevel
	// keeps for refinement (0: 6 times the input graph's Bytes). A coarse
	// level that would exceed it, and has not at least halved the edges
	// of the last kept level, is freed as soon as the next level is
	// built and is only projected through, not refined, while
	// uncoarsening: less memory for a slightly worse cut on graphs whose
	// edges do not shrink when coarsened. Whatever the budget, a level is
	// kept only while the memory the process may still take
	// (memstat.Room) holds two more of its size beside about 100 B per
	// input node: where memory is short the partition then differs from
	// the one made with room to spare, instead of the process being
	// killed.
	MaxCoarseBytes int64
	// VCycles is how many rounds of V-cycles Multilevel runs after its
	// first pass. A V-cycle coarsens the graph again, pairing only nodes
	// of the same part, so the partition carries to the coarsest level
	// unchanged, and refines it level by level on the way back: moves of
	// whole clusters that single-node refinement cannot find. A round runs
	// two independent V-cycles from the partition so far (at once, on
	// two cores, when the graph is small) and keeps the better one if it
	// lowers the cut. A cycle costs about one more coarsening and
	// refinement (not the initial partitioning). 0 picks by size: two
	// rounds on graphs of up to 32,768 undirected edges, where they cost
	// milliseconds, none on larger ones. Negative: none.
	VCycles int
}

// Result is a partition of a graph's nodes.
type Result struct {
	// Parts holds the part of every node, in [0, NumParts).
	Parts []int32
	// NumParts is K.
	NumParts int
	// Stats describes the cut and the balance.
	Stats Stats
	// Phases tells where a multilevel partitioning's wall time went (zero
	// for the other methods).
	Phases Phases
}

// Phases is the wall time of each phase of a multilevel partitioning.
type Phases struct {
	// Levels counts the graphs of the hierarchy, the input included.
	Levels int
	// Match and Contract are coarsening's two steps over all levels;
	// Initial partitions the coarsest graph (InitialRuns times, keeping
	// the best, each carried up through the coarsest InitialLevels
	// levels first; InitialFiner of them start from the level before a
	// dense coarsest graph instead); Refine projects the partition back
	// level by level and improves it there.
	Match, Contract, Initial, Refine         time.Duration
	InitialRuns, InitialLevels, InitialFiner int
	// InitialDense says the initial partitions were made on a finer level
	// than usual, the coarse ones being too dense to show any structure
	// (see initialAt).
	InitialDense bool
	// VCycles counts the V-cycles run (two a round of Options.VCycles)
	// and VCycle is their wall time.
	VCycles int
	VCycle  time.Duration
}

// Partition splits the nodes of g into opts.Parts parts so that few edges
// join different parts and every part's node count (and extra weights)
// stays within the imbalance tolerance.
//
// It fails if Parts is not in [1, NumNodes], if Imbalance is below 1, or
// if a weight vector has the wrong length or a negative entry.
// Disconnected graphs and isolated nodes are fine. With Multilevel the
// balance is guaranteed for the node count; extra constraints are met
// whenever the heaviest nodes allow it, and Stats reports what was
// reached.
func Partition(ctx context.Context, g *Graph, opts Options) (*Result, error) {
	if err := g.checkShape(); err != nil {
		return nil, err
	}
	n := g.NumNodes()
	k := opts.Parts
	if k <= 0 {
		return nil, fmt.Errorf("partition: number of parts must be positive, got %d", k)
	}
	if k > n {
		return nil, fmt.Errorf("partition: %d parts for a graph of %d nodes (at most one part per node)", k, n)
	}
	if opts.Imbalance == 0 {
		opts.Imbalance = DefaultImbalance
	}
	if !(opts.Imbalance >= 1) || math.IsInf(opts.Imbalance, 0) {
		return nil, fmt.Errorf("partition: imbalance must be >= 1 (e.g. 1.03 for 3%%), got %g", opts.Imbalance)
	}
	for i, w := range opts.Weights {
		if len(w) != n {
			return nil, fmt.Errorf("partition: weight vector %d has %d entries for %d nodes", i, len(w), n)
		}
		for v, x := range w {
			if x < 0 {
				return nil, fmt.Errorf("partition: weight vector %d: node %d has negative weight %d", i, v, x)
			}
		}
	}
	method, err := ParseMethod(string(opts.Method))
	if err != nil {
		return nil, err
	}
	var parts []int32
	var ph Phases
	cut := int64(-1) // unknown
	switch {
	case k == 1:
		parts = make([]int32, n)
	case method == Random:
		parts = randomParts(n, k, opts.Seed)
	case method == Fennel:
		parts, err = fennel(ctx, g, k, opts)
	default:
		parts, cut, err = multilevel(ctx, g, k, opts, &ph)
	}
	if err != nil {
		return nil, err
	}
	st, err := computeStats(g, parts, k, opts.Weights, opts.Workers, cut)
	if err != nil {
		return nil, err
	}
	return &Result{Parts: parts, NumParts: k, Stats: st, Phases: ph}, nil
}

// vertexWeights returns the level-0 weights: the node count then the extra
// constraints, interleaved per node, in an array from ar (nil: the Go
// heap).
func vertexWeights(n int, extra [][]int32, ar *arena.Arena) ([]int32, int) {
	ncon := 1 + len(extra)
	vw := arena.Make[int32](ar, n*ncon)
	for v := 0; v < n; v++ {
		vw[v*ncon] = 1
		for c, w := range extra {
			vw[v*ncon+1+c] = w[v]
		}
	}
	return vw, ncon
}

// heapOnly makes multilevel allocate its working memory from the Go heap,
// as it does where anonymous mappings are not available (arena.New
// returns nil): a variable so that tests run that path on every system.
var heapOnly = false

// multilevel runs coarsening, initial partitioning and refinement. It
// returns the partition and its edge cut.
//
// Its working memory comes from an arena (package internal/arena) at every
// size. On graphs of a few megabytes page faults on fresh memory were
// half the partitioning time. On large ones the Go heap faulted in every
// 4 KiB page of every coarse level and bisection (the 5M-node synthetic
// graph at K = 4: 1.5M faults, 15-19 s of system time in a 40-50 s run)
// and let the heap grow to twice what it held between collections; the
// arena populates in bulk and gives back what is no longer needed as it
// goes (Release after each initial run and bisection, Discard on coarse
// levels dropped for memory, Release after each V-cycle run alone): 5-7 s
// of system time, peak RSS 4.6 GB instead of 4.9-5.5 (gpmetis: 3.6), and
// at K = 16 3.4 GB instead of 3.9, the partitions byte for byte the same.
func multilevel(ctx context.Context, g *Graph, k int, opts Options, ph *Phases) ([]int32, int64, error) {
	workers := par.Workers(opts.Workers)
	n := g.NumNodes()
	var ar *arena.Arena
	if !heapOnly {
		// Address space for the coarse levels and the scratch; only what
		// is handed out is populated. A run handed out about 6x the input
		// (wave: 5.9-6.4x at K = 4-64) before contractions gave their
		// slack back (arena.Trim; wave at K = 4 now 4.0x); 6x where that
		// still fits one huge-page region, else at least 4x. With 4x and
		// no Trim, wave's arena grew into a second region too large for
		// huge pages: 3,100 more 4 KiB faults a run.
		b := int(g.Bytes())
		ar = arena.New(max(4*b+1<<20, min(6*b+2<<20, arena.HugeMaxRegion)))
		defer ar.Free()
	}
	vw, ncon := vertexWeights(n, opts.Weights, ar)
	tot := arena.Make[int64](ar, ncon)
	for v := 0; v < n; v++ {
		for c := 0; c < ncon; c++ {
			tot[c] += int64(vw[v*ncon+c])
		}
	}
	coarsenTo := max(30*k, 200)
	maxvw := arena.Make[int32](ar, ncon)
	for c := range maxvw {
		maxvw[c] = pairBound(tot[c], coarsenTo)
	}
	budget := opts.MaxCoarseBytes
	if budget <= 0 {
		budget = 6 * g.Bytes()
	}
	cs := coarsening{ncon: ncon, maxvw: maxvw, coarsenTo: coarsenTo, budget: budget, workers: workers,
		r: rng.New(opts.Seed), sc: &scratch{ar: ar}, ph: ph, shrink: coarsenShrink,
		room: memRoom, reserve: refineReserve * int64(n)}
	input := &level{n: n, xadj: g.Xadj, adj: g.Adjncy, ew: g.EdgeWeights, vw: vw, keep: true}
	levels, _, err := cs.coarsen(ctx, input, nil)
	if err != nil {
		return nil, 0, err
	}
	coarsest := levels[len(levels)-1]
	runs := initRuns
	if k <= 4 && n >= 50*coarsest.n {
		// Few parts and a coarsest graph much smaller than the input: one
		// more initial partition costs little next to coarsening and
		// refinement, and the initial split decides much of the cut.
		runs = initRunsFewParts
	}
	if len(g.Adjncy) >= initRunsLargeMin {
		// A large input: initial partitions cost a few percent at most.
		// On a 1M-node graph of 16 planted communities (synth, 5M edges)
		// at K = 16, the best of 2 missed the communities for 2 seeds of
		// 6 (cut 1.10-1.14M against 0.94M, imbalance at the limit); the
		// best of 4 found them for 8 seeds of 8, in 60 ms of a 3 s run.
		runs = max(runs, initRunsLarge)
	}
	// Initial partitions are cheap when the coarsest graph, times the
	// depth of the recursive bisection, is tiny next to the input (wave
	// at K = 4: 3,062 adjacency entries times 2, against 2.1M). Then many
	// of them, each with fewer bisection tries, are carried up through
	// the coarse levels before the best is kept: which one ends best is
	// poorly told at the coarsest level. On wave at K = 4 (seeds 16-55)
	// the mean cut fell from 19,613 to 19,059 (gpmetis: 19,529-19,976
	// on seeds 1-5); the best of 8 at the coarsest level alone gave
	// 19,437.
	tries, m := initTries, len(levels)-1
	unit := int64(len(coarsest.adj)) * int64(bits.Len(uint(k-1)))
	if int64(len(g.Adjncy)) >= cheapInitRatio*unit {
		runs, tries = max(runs, initRunsCheap), initTriesCheap
		m = trialLevel(levels, runs, len(g.Adjncy))
	}
	// A dense coarsest graph, the hubs' neighbourhoods of a power-law
	// graph merged into a core, splits poorly: all runs but one start
	// from the level before it instead, and the one from the core is
	// carried up to that level, where the best is kept. (The one from the
	// core is there for graphs whose core shows a structure the level
	// before hides: see denseCore.)
	finer := 0
	if m == len(levels)-1 && denseCore(levels, k) {
		runs = max(runs, denseCoreRuns)
		finer, m = runs-1, m-1
	}
	init := levels[m:]
	if f := initialAt(levels, m, k); f < m {
		// The coarse levels hold next to no structure: nearly complete
		// graphs, every coarse vertex a mix of the input's communities.
		// A graph whose communities show only globally (random edges
		// inside and between them, no triangles) loses them to
		// coarsening: on the 5M-node synthetic graph of 16 planted
		// communities at K = 4, a coarse vertex's majority community
		// held 91 % of its nodes one level up, 56 % five levels up and
		// 22 % (1/16 is random) at the coarsest, where 720 vertices
		// had 677 neighbours on average and the initial partitions cut
		// 0.96 of what random ones would. Refinement on the way up then
		// found the communities for 2 seeds of 5; for the others it
		// grouped them 5, 4, 4, 3 and split one to restore balance (cut
		// 1.18x gpmetis's, as on a 200k-node one for 2 seeds of 5).
		// Partitioned where METIS makes its initial partition (at
		// least n/(40 log2 K) vertices), they were found for every
		// seed.
		init, m = levels[f:f+1], f
		runs, finer, tries = denseLevelRuns, 0, denseLevelTries
		if k <= 4 {
			// Few parts: which communities end up together is decided
			// here, each part holding several whole ones; the best of a
			// few partitions picks better groupings (see denseLevelRuns).
			runs = denseLevelRunsFewParts
		}
		ph.InitialDense = true
	}
	t0 := time.Now()
	where, err := initialKWay(ctx, init, ncon, k, tot, opts.Imbalance, opts.Seed, runs, finer, tries, workers, ar)
	if err != nil {
		return nil, 0, err
	}
	ph.InitialRuns, ph.InitialLevels, ph.InitialFiner = runs, len(init), finer
	ph.Levels, ph.Initial = len(levels), time.Since(t0)
	levels = levels[:m+1] // the rest were refined by initialKWay
	t0 = time.Now()
	rf := newRefiner(k, ncon, tot, opts.Imbalance, rng.New(rng.Derive(opts.Seed, 8)), workers, ar)
	rf.reserve(n)
	where, err = uncoarsen(ctx, levels, where, rf, workers, ar, false)
	ph.Refine = time.Since(t0)
	if err != nil {
		return nil, 0, err
	}
	if ar != nil && len(levels) == 1 {
		// Not projected to the input level: initialKWay's partition, in
		// the arena, and the result outlives it.
		where = slices.Clone(where)
	}
	// The finest level is never dropped: rf's external degrees and cut
	// are those of the input graph.
	cut := rf.cut()
	if rounds := vcycleRounds(opts.VCycles, len(g.Adjncy)); rounds > 0 {
		t0 = time.Now()
		// A V-cycle coarsens only within parts, so its coarse vertices
		// may be larger than the first pass's: moving a whole cluster
		// across a part boundary is what it can do that refinement of
		// single vertices cannot.
		cs.coarsenTo = max(vcycleCoarsenTo*k, 100)
		cs.shrink = vcycleShrink
		for c := range maxvw {
			maxvw[c] = int32(min(int64(math.MaxInt32/4), vcycleMaxWeight*int64(maxvw[c])))
		}
		vc := vcycler{cs: cs, input: input, k: k, tot: tot, imb: opts.Imbalance, ar: ar}
		over := rf.overloaded()
		for round := range rounds {
			// Each cycle reads where and writes a new partition: where
			// stays to fall back on. A cycle's refinement on coarse
			// levels may overfill parts (fudgeKWay) and then rebalance
			// by moving large vertices: 10 of 180 runs on the shared
			// graphs (email-Enron at K = 16 and 64, seeds 1-15) ended
			// with a larger cut, by up to 3.6 %; the best cycle is kept
			// only if the cut or the balance improved.
			res, err := vc.round(ctx, where, rng.Derive(opts.Seed, uint64(100+round)))
			if err != nil {
				return nil, 0, err
			}
			for _, r := range res {
				if r.where == nil {
					continue // nothing to coarsen within the parts
				}
				ph.VCycles++
				if !r.over && (r.cut < cut || over) {
					where, cut, over = r.where, r.cut, r.over
				}
			}
		}
		ph.VCycle = time.Since(t0)
	}
	return where, cut, nil
}

// trialLevel returns the finest of levels (an index) that runs initial
// partitions are carried up to, refined on every level on the way, so
// that all that refinement adds up to at most 1/trialShare of the
// input's adjacency entries. It stops below a level dropped for memory.
func trialLevel(levels []*level, runs, inputAdj int) int {
	m := len(levels) - 1
	work := 0
	for m > 0 && levels[m-1].xadj != nil {
		work += len(levels[m-1].adj)
		if work*runs*trialShare > inputAdj {
			break
		}
		m--
	}
	return m
}

// denseCore reports whether the coarsest of levels (the input first) is a
// dense core worth starting most initial partitions below: an average
// degree of denseCoreDegree or more, and a level before it that is still
// small, within METIS's coarsening target of n/(metisTargetDivisor·log2 K)
// vertices for an input of n.
//
// email-Enron at K = 4 coarsens to 172 vertices of average degree 110;
// the level before has 342 (METIS stops near 900). Its mean cut over
// seeds 16-55 was 37,370 from the core alone (3 runs), 36,507 with 2 of
// the 3 runs from the level before, 36,411 with all 3, and 36,217 with 3
// of 4 (gpmetis about 36,000); the initial phase takes 10 ms instead of
// 6 (two cores). All runs from the level before had missed the 16
// planted communities of a 5M-node synthetic graph for 2 seeds of 3 at
// K = 4 (cut 5.16M and 4.50M against 3.73M), where the core alone found
// them: hence one run from the core. (That graph now takes the cheap
// initial partitions at K = 4, which this does not change; at K = 16
// this found its communities for seed 1, 4.68M against 5.66M.)
func denseCore(levels []*level, k int) bool {
	m := len(levels) - 1
	if m < 2 || k < 2 || levels[m-1].xadj == nil {
		return false
	}
	c := levels[m]
	return int64(len(c.adj)) >= denseCoreDegree*int64(c.n) &&
		float64(levels[m-1].n) <= metisTarget(levels[0].n, k)
}

// Dense coarsest graphs (denseCore): the least average degree and the
// initial partitions made (all but one from the level before).
const (
	denseCoreDegree = 64
	denseCoreRuns   = 4
)

// metisTarget is METIS's k-way coarsening target for an input of n
// vertices, n/(metisTargetDivisor log2 K): where it makes its initial
// partition.
func metisTarget(n, k int) float64 {
	return float64(n) / (metisTargetDivisor * math.Log2(float64(k)))
}

// initialAt returns the level (an index into levels, the input first)
// that the initial partitions are made on when level m, where they would
// be, is dense (an average degree of denseLevel times its other vertices
// or more: next to no structure left): the coarsest level kept in memory
// with at least metisTarget's vertices (and 30 K). It returns m where m is
// not dense or no finer level qualifies.
//
// The shared graphs' initial levels have densities of 0.003-0.38 (the
// most email-Enron's, below its dense core); the 5M-node synthetic
// graph's 0.94-0.97 at K = 4-64, a 200k-node one's 0.99 at K = 4.
func initialAt(levels []*level, m, k int) int {
	l := levels[m]
	if m == 0 || float64(len(l.adj)) < denseLevel*float64(l.n)*float64(l.n-1) {
		return m
	}
	target := max(metisTarget(levels[0].n, k), float64(30*k))
	for i := m - 1; i >= 0; i-- {
		if levels[i].xadj != nil && float64(levels[i].n) >= target {
			return i
		}
	}
	return m
}

// Initial partitions below dense levels (initialAt): made where the
// initial level's density is denseLevel or more, denseLevelRuns of them
// of denseLevelTries bisection tries each (denseLevelRunsFewParts for K <=
// 4). metisTargetDivisor is METIS's (metisTarget).
//
// At K = 4 on the 200k-node synthetic graph of 16 planted communities,
// seeds 1-50, the communities' grouping (the cut if every node were in its
// community's part) was 75 edges smaller on average with the best of 4
// partitions than with one (standard error about 30), and the final cut
// 1.0001 of gpmetis's with one (seeds 21-50), 0.9998 with 4. On the 5M-
// node one, seeds 1-5: 0.99987 with 4, 1.000001 with one; the initial
// partitions took 14-16 s instead of 5-10 of a 28-45 s run (gpmetis: 90
// s), side by side, one core each: peak RSS 4.5-5.3 GB instead of 3.6
// (gpmetis 3.6); one after another on both cores, 3.8 GB but 30 s. 32
// bisection tries in one partition instead did not pick better groupings
// (200k nodes, seeds 1-20: 50 edges larger). At K = 16 the grouping is
// one community a part whatever the initial partition.
const (
	denseLevel             = 0.5
	denseLevelRuns         = 1
	denseLevelRunsFewParts = 4
	denseLevelTries        = 8
	metisTargetDivisor     = 40
)

// pairBound is the heaviest a coarse vertex may be in a constraint of
// total weight tot when coarsening stops at about coarsenTo vertices:
// 1.5 times their average, as METIS bounds it.
func pairBound(tot int64, coarsenTo int) int32 {
	return int32(min(int64(math.MaxInt32/4), max(1, int64(1.5*float64(tot)/float64(coarsenTo)))))
}

// vcycleRounds is how many rounds of V-cycles follow the first multilevel
// pass: opt (see Options.VCycles) resolved for an input of adj adjacency
// entries.
func vcycleRounds(opt, adj int) int {
	switch {
	case opt < 0:
		return 0
	case opt > 0:
		return opt
	case adj <= vcycleAutoMax:
		return vcycleAuto
	}
	return 0
}

// vcycler runs rounds of V-cycles over the input level.
type vcycler struct {
	cs    coarsening // the V-cycles' bounds and workers; its generator and scratch are not used
	input *level
	k     int
	tot   []int64
	imb   float64
	ar    *arena.Arena
}

// cycleResult is one V-cycle's partition of the input level (nil if the
// graph did not coarsen within the parts), its cut and whether a part is
// over its limit.
type cycleResult struct {
	where []int32
	cut   int64
	over  bool
}

// round runs vcycleWidth independent V-cycles from where, each with its
// own generator derived from seed. On a graph too small for a level's
// loops to be split across cores the cycles run in parallel (their
// levels are refined on one core each); on larger ones one after the
// other, each on every core. Either way the results are the same.
func (vc *vcycler) round(ctx context.Context, where []int32, seed uint64) ([]cycleResult, error) {
	res := make([]cycleResult, vcycleWidth)
	errs := make([]error, vcycleWidth)
	inner, outer := vc.cs.workers, 1
	if vc.input.workers(inner) == 1 {
		inner, outer = 1, min(vc.cs.workers, vcycleWidth)
	}
	par.Run(outer, vcycleWidth, func(_, i int) {
		if outer == 1 {
			// The cycle has the arena to itself: its levels and scratch go
			// back after it (its partition, projected to the input level,
			// is on the Go heap), so that rounds on a large graph do not
			// pile up a hierarchy each.
			defer vc.ar.Release(vc.ar.Mark())
		}
		s := rng.Derive(seed, uint64(i))
		cs := vc.cs
		// Its own generator, buffers and phases (not reported: the
		// cycles' wall time is), and its own copy of the input level,
		// whose map to the next level contract sets.
		cs.r, cs.sc, cs.ph, cs.workers = rng.New(s), &scratch{ar: vc.ar}, &Phases{}, inner
		in := *vc.input
		levels, part, err := cs.coarsen(ctx, &in, where)
		if err != nil || len(levels) == 1 {
			errs[i] = err
			return
		}
		rf := newRefiner(vc.k, cs.ncon, vc.tot, vc.imb, rng.New(rng.Derive(s, 1)), inner, vc.ar)
		rf.reserve(in.n)
		next, err := uncoarsen(ctx, levels, part, rf, inner, vc.ar, false)
		if err != nil {
			errs[i] = err
			return
		}
		res[i] = cycleResult{next, rf.cut(), rf.overloaded()}
	})
	return res, errors.Join(errs...)
}

// coarsening holds what building a hierarchy reads: the balance
// constraints and their pair bound, where to stop, the memory budget for
// kept levels, and the buffers reused from level to level.
type coarsening struct {
	ncon      int
	maxvw     []int32
	coarsenTo int
	budget    int64
	workers   int
	r         *rng.Rand
	sc        *scratch
	ph        *Phases
	// shrink: coarsening stops at a level that keeps more than this
	// share of its vertices.
	shrink float64
	// room is the memory the process may still take (memstat.Room; nil:
	// unbounded), and reserve what must stay free of it for what comes
	// after coarsening (see affords).
	room    func() (int64, bool)
	reserve int64
}

// roomAskMin is the least memory that affords (two levels and the
// reserve) and runsAtOnce (the runs side by side) ask memstat.Room about:
// below, the answer is yes without asking. Room reads /proc and the
// cgroup's files, about 0.2 ms a call, and the bisections of a small
// graph's initial partitions at K = 64 build hundreds of levels of a few
// kilobytes (asking about every one slowed the shared graphs' quick cases
// up to 1.9x); 64 MiB are the coarse levels of graphs of a few million
// edges. A variable so that tests can ask on small graphs.
var roomAskMin int64 = 64 << 20

// memRoom is memstat.Room, a variable so that tests can pretend memory is
// short.
var memRoom = memstat.Room

// refineReserve is the memory kept free for refinement, in bytes per
// input vertex: the refiner's arrays and the boundary's searches (see the
// package documentation's memory paragraph: about 68 B a vertex plus up to
// 40 B for each boundary vertex and part next to it).
const refineReserve = 100

// affords reports whether a coarse level of nb bytes can stay in memory
// for refinement: the contractions still to come hold up to two levels of
// about its size beside the kept ones (the one contracted, dropped once
// the next is built, and the next at its upper bound), and cs.reserve
// must stay free. A level kept while memory is short fills it, and the
// contractions after it are then killed by the kernel: the 10M-node,
// 200M-edge synthetic graph in a 20 GB memory cgroup, at the default budget
// of 6x the input (9.8 GB), after 175 s.
func (cs *coarsening) affords(nb int64) bool {
	need := 2*nb + cs.reserve
	if cs.room == nil || need < roomAskMin {
		return true
	}
	r, ok := cs.room()
	return !ok || r >= need
}

// coarsenShrink is the first pass's (and each multilevel bisection's)
// coarsening stop: a level that keeps more than this share of its
// vertices is not worth contracting.
const coarsenShrink = 0.95

// discardDropped says whether coarsen gives the pages of levels dropped
// for memory back to the system (arena.Discard) in an arena: a variable
// so that tests can compare with the partition made without.
var discardDropped = true

// coarsen builds the hierarchy above input (which it returns first) by
// heavy-edge matching until a level has at most coarsenTo vertices or
// matching stops shrinking it. With part non-nil only vertices of the
// same part pair, and it also returns part carried to the coarsest level;
// with part nil that is nil.
//
// Levels beyond the memory budget (but those that at least halved the
// edges of the last kept level) are freed once the next is built: only
// their map to the coarser level is kept, and they are projected
// through, not refined.
func (cs *coarsening) coarsen(ctx context.Context, input *level, part []int32) ([]*level, []int32, error) {
	levels := []*level{input}
	kept, lastKept := int64(0), len(input.adj)
	for cur := input; cur.n > cs.coarsenTo; {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		t0 := time.Now()
		match, cn := cur.match(cs.r, cs.ncon, cs.maxvw, part, cs.workers, cs.sc)
		cs.ph.Match += time.Since(t0)
		if float64(cn) > cs.shrink*float64(cur.n) {
			break
		}
		t0 = time.Now()
		next := cur.contract(match, cn, cs.ncon, cs.workers, cs.sc)
		cs.ph.Contract += time.Since(t0)
		if part != nil {
			// A coarse vertex's fine vertices share a part.
			coarse := arena.Make[int32](cs.sc.ar, cn)
			for v, c := range cur.cmap {
				coarse[c] = part[v]
			}
			part = coarse
		}
		levels = append(levels, next)
		if cur != input && !cur.keep {
			// Over the memory budget: keep only the map to the coarser
			// level; this level is not refined while uncoarsening.
			ar := cs.sc.ar
			if ar != nil && discardDropped {
				// The arena keeps their addresses to the end, not their
				// pages: 200 MB of a 1M-node graph's 568 (K = 4).
				arena.Discard(ar, cur.xadj)
				arena.Discard(ar, cur.adj)
				arena.Discard(ar, cur.ew)
				arena.Discard(ar, cur.vw)
				arena.Discard(ar, cur.wdeg)
			}
			collect := ar == nil && cur.bytes() > 64<<20
			cur.xadj, cur.adj, cur.ew, cur.vw, cur.wdeg = nil, nil, nil, nil, nil
			if collect {
				// On the Go heap a collection now keeps the heap (and so
				// the resident set) near the live size instead of twice it.
				runtime.GC()
			}
		}
		nb := next.bytes()
		next.keep = (kept+nb <= cs.budget || 2*len(next.adj) <= lastKept) && cs.affords(nb)
		if next.keep {
			kept += nb
			lastKept = len(next.adj)
		}
		cur = next
	}
	return levels, part, nil
}

// uncoarsen refines where, a partition of the coarsest of levels, on
// every kept level while projecting it back to the finest, and returns
// the finest level's partition (on the Go heap when projected there: the
// result outlives the arena). rf is left holding the finest level. With
// keep the levels and their maps are left intact, for other partitions
// to be carried up through them; without, each coarser level is let go
// once projected.
func uncoarsen(ctx context.Context, levels []*level, where []int32, rf *refiner, workers int, ar *arena.Arena, keep bool) ([]int32, error) {
	refined := false      // whether rf holds the coarser level's degrees
	pairGain := int64(-1) // what the last level's searches gained (-1: none ran)
	for i := len(levels) - 1; i >= 0; i-- {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		l := levels[i]
		var coarseEd []int32
		if i < len(levels)-1 {
			war := ar
			if i == 0 {
				war = nil // the result, which outlives the arena
			}
			if refined && !keep {
				// project keeps these degrees in l.cmap, which keep
				// must leave intact.
				coarseEd = rf.ed
			}
			where, coarseEd = project(l, where, coarseEd, workers, war)
			if !keep {
				levels[i+1] = nil // free the coarser level
				l.cmap = nil
			}
		}
		if refined = l.xadj != nil; !refined {
			continue // a level dropped for memory: projected only
		}
		rf.setLevel(l, where, coarseEd)
		if rf.overloaded() {
			rf.balance()
		}
		if i > 0 {
			// Coarse levels: a move of positive gain may fill a part past
			// its limit by fudgeKWay times its gain (as METIS's greedy
			// refinement does); balance is restored below.
			rf.fudge = fudgeKWay
		}
		rf.greedyBatch(10)
		rf.fudge = 0
		// k-way FM on small levels, where it costs little, and where
		// parts are small (most boundary vertices touch several parts);
		// elsewhere localized searches on pairs of parts (pairFM) in its
		// place, which find chains of moves FM misses (wave's cut 1.5-2.5
		// % smaller at K = 4-64) and run on every core, except on the
		// levels between the finest and one where they found under
		// 1/pairPays of the cut. The initial partitions carried up (keep)
		// only need telling apart: FM.
		switch {
		case keep || l.n <= max(pairMinLevel, pairMinPart*rf.k):
			rf.fm(fmPassesKWay, fmLimitKWay)
		case i > 0 && pairGain >= 0 && pairGain*pairPays < rf.cut():
			// The searches on a coarser level found next to nothing.
		default:
			share := pairShare
			if 2*int64(len(l.adj)) >= int64(len(levels[0].adj)) {
				share = pairShareFine
				if rf.k >= pairManyK {
					share = pairShareFineMany
				}
				if i == 0 && len(l.adj) >= pairLargeMin {
					share = pairShareLarge
				}
			}
			pairGain = rf.pairFM(share)
			if i == 0 {
				// What neither the searches nor greedy rounds find: short
				// chains of moves from one of gain 0. Then greedy rounds
				// for the single moves left (a search's moves change the
				// gains of third parts' vertices, which no search looks
				// at again).
				rf.chainMoves(l.hub(), chainShare*int64(len(l.adj)))
				rf.greedyBatch(10)
			}
		}
		if rf.overloaded() {
			// Restoring balance after the fudged moves can cost much of
			// the cut (on email-Enron's coarse levels at K = 64 about 10
			// %): greedy rounds win it back, as many as the level's
			// first (until a round gains under 0.1 % of the cut). Two
			// rounds had left email-Enron's cut 0.3 % larger at K = 4 and
			// 64 (40 seeds, paired), for 0.4 and 6 ms less time.
			rf.balance()
			rf.greedyBatch(10)
		}
	}
	return where, nil
}

// randomParts assigns a random permutation of the nodes to parts in equal
// consecutive runs, so part sizes differ by at most one.
func randomParts(n, k int, seed uint64) []int32 {
	perm := randomPerm(rng.New(seed), n)
	parts := make([]int32, n)
	for i, v := range perm {
		parts[v] = int32(int64(i) * int64(k) / int64(n))
	}
	return parts
}

// Stats describes a partition: edge cut and balance. It is the type the
// partitioned-dataset book records (parts.Stats).
type Stats = parts.Stats

// ComputeStats measures the partition parts (k parts) of g: edge cut,
// part sizes and imbalance of the node count and of each weight vector.
func ComputeStats(g *Graph, parts []int32, k int, weights [][]int32, workers int) (Stats, error) {
	return computeStats(g, parts, k, weights, workers, -1)
}

// computeStats is ComputeStats given the edge cut if already known (else
// -1).
func computeStats(g *Graph, parts []int32, k int, weights [][]int32, workers int, cut int64) (Stats, error) {
	n := g.NumNodes()
	if len(parts) != n {
		return Stats{}, fmt.Errorf("partition: %d part ids for %d nodes", len(parts), n)
	}
	for v, p := range parts {
		if p < 0 || int(p) >= k {
			return Stats{}, fmt.Errorf("partition: node %d is in part %d, outside [0, %d)", v, p, k)
		}
	}
	if cut < 0 {
		cut = EdgeCut(g, parts, workers)
	}
	s := Stats{EdgeCut: cut, PartSizes: make([]int64, k)}
	if m := g.NumEdges(); m > 0 {
		s.CutFraction = float64(s.EdgeCut) / float64(m)
	}
	for _, p := range parts {
		s.PartSizes[p]++
	}
	s.Imbalance = imbalanceOf(s.PartSizes, int64(n))
	for _, sz := range s.PartSizes {
		if sz == 0 {
			s.EmptyParts++
		}
	}
	for _, w := range weights {
		if len(w) != n {
			return Stats{}, errors.New("partition: weight vector length differs from node count")
		}
		pw := make([]int64, k)
		tot := int64(0)
		for v, x := range w {
			pw[parts[v]] += int64(x)
			tot += int64(x)
		}
		s.WeightImbalance = append(s.WeightImbalance, imbalanceOf(pw, tot))
	}
	return s, nil
}

func imbalanceOf(pw []int64, tot int64) float64 {
	if tot == 0 {
		return 1
	}
	m := int64(0)
	for _, x := range pw {
		m = max(m, x)
	}
	return float64(m) * float64(len(pw)) / float64(tot)
}

// EdgeCut returns the total weight of the undirected edges of g whose
// endpoints lie in different parts. It panics (in the caller's goroutine)
// if parts does not give one part to every node; ComputeStats returns an
// error instead.
func EdgeCut(g *Graph, parts []int32, workers int) int64 {
	if len(parts) != g.NumNodes() {
		panic(fmt.Sprintf("partition: EdgeCut given %d part ids for %d nodes", len(parts), g.NumNodes()))
	}
	workers = par.Workers(workers)
	sums := make([]int64, workers)
	par.For(workers, g.NumNodes(), func(w, lo, hi int) {
		s := int64(0)
		for v := lo; v < hi; v++ {
			p := parts[v]
			for j := g.Xadj[v]; j < g.Xadj[v+1]; j++ {
				if parts[g.Adjncy[j]] != p {
					if g.EdgeWeights != nil {
						s += int64(g.EdgeWeights[j])
					} else {
						s++
					}
				}
			}
		}
		sums[w] = s
	})
	t := int64(0)
	for _, s := range sums {
		t += s
	}
	return t / 2
}

// Refinement effort: k-way FM passes per level and the number of moves
// without improvement after which a pass stops; initial partitions tried.
//
// fudgeKWay is how far (times the move's gain) a greedy move on a coarse
// level may fill a part past its limit. Mean cut ratio against gpmetis
// over seeds 1-5 on the 12 shared cases (wave, email-Enron, Cora,
// CiteSeer at K = 4, 16, 64): 1.018 without, 1.001 with 3 on the coarse
// levels; 1.002 with 2 on every level, whose time cost was larger on
// email-Enron. Time: within 0-8 % (fastest of five rounds a seed).
const (
	fudgeKWay        = 3
	fmPassesKWay     = 1
	fmLimitKWay      = 100
	initRuns         = 2
	initRunsFewParts = 3
	initRunsLarge    = 4
	// initTries is the bisection tries of each initial partition's
	// recursive bisection; initRunsCheap partitions of initTriesCheap
	// tries each are made where they are cheap (cheapInitRatio, see
	// multilevel).
	initTries      = 8
	initRunsCheap  = 8
	initTriesCheap = 2
	// trialShare bounds the refinement of the carried-up initial
	// partitions (trialLevel).
	trialShare = 4
	// initRunsLargeMin is the adjacency length (twice the undirected
	// edges) from which a graph is large for the initial partition's runs.
	initRunsLargeMin = 1 << 22
)

// cheapInitRatio is how many times the coarsest graph's adjacency times
// the bisection depth the input must have for initRunsCheap initial
// partitions.
const cheapInitRatio = 256

// V-cycles (Options.VCycles). A round runs vcycleWidth of them; by
// default vcycleAuto rounds on graphs of up to vcycleAutoMax adjacency
// entries (twice the undirected edges). Their coarsening stops at
// vcycleCoarsenTo vertices a part, or when a level keeps more than
// vcycleShrink of its vertices, and a coarse vertex may weigh
// vcycleMaxWeight times the first pass's bound.
//
// Mean cut ratio against gpmetis 5.1 on the 12 shared cases (wave,
// email-Enron, Cora, CiteSeer at K = 4, 16, 64), over seeds 1-5 and over
// seeds 6-15: 1.001 and 1.003 without V-cycles (3 and 5 cases at or under
// 1.0); with the default 0.980 and 0.979 (7 and 8: every Cora and
// CiteSeer case, 0.86-0.999, against 0.92-1.045 without); one round on
// every graph 0.972 and 0.970 (9 and 11), two rounds 0.962 and 0.961 (10
// and 11). Two cycles one after the other gave 0.968 and 0.968; the best
// of two from the same partition does as well in the time of one on two
// cores. Deeper V-cycle coarsening helped (vertices a part 30, 16, 8:
// CiteSeer at K = 64 1.021, 1.010, 0.999 with two cycles in a row), 4
// and 2 did not; a shrink bound of 0.95 cost 40 % more time on CiteSeer
// at K = 64 for the same cuts, 0.75 lost quality.
//
// Time, fastest of 7 runs on 2 cores (AMD EPYC Zen 4): one round takes
// Cora and CiteSeer 1.25-1.55x (1-2 ms more), a second 1.13-1.46x more.
// On wave and email-Enron a round costs 2.1-3.4x the run (each cycle's
// coarsening within parts takes more levels than the first pass's) for
// cuts 0.3-4.4 % smaller: there it is left to Options.VCycles (email-
// Enron at K = 64: 100 -> 202 ms for 1.5 % less cut).
//
// The default was one round until session 30. The second, paired over
// seeds 16-55, cut Cora's cut by 1.98 / 1.22 / 0.68 % at K = 4 / 16 / 64
// and CiteSeer's by 2.66 / 1.35 / 0.91 % (standard errors 0.10-0.59 %),
// and took CiteSeer at K = 64 from 1.013 to 0.999 of gpmetis over seeds
// 1-5, for 1-3 ms (CiteSeer at K = 64 11-13 ms against gpmetis's 18).
const (
	vcycleWidth     = 2
	vcycleAuto      = 2
	vcycleAutoMax   = 1 << 16
	vcycleCoarsenTo = 8
	vcycleMaxWeight = 8
	vcycleShrink    = 0.85
)

// initialKWay partitions the coarsest of levels by recursive bisection,
// runs times from different seeds (in parallel), refines each with the
// k-way greedy refiner, carries each up through the other levels (on the
// way to the finest, levels[0]) refining it there, and returns the best
// balanced one, a partition of levels[0]. The last finer of the runs
// start from the level before the coarsest instead. As many runs go side
// by side as the workers and the memory allow (runsAtOnce), sharing the
// workers: a single run has them all.
func initialKWay(ctx context.Context, levels []*level, ncon, k int, tot []int64, imb float64, seed uint64, runs, finer, tries, workers int, ar *arena.Arena) ([]int32, error) {
	type result struct {
		where []int32
		cut   int64
		over  bool
	}
	res := make([]result, runs)
	errs := make([]error, runs)
	top := levels[len(levels)-1]
	if finer > 0 {
		top = levels[len(levels)-2]
	}
	conc := runsAtOnce(min(workers, runs), initialRunBytes*top.bytes(), memRoom)
	inner := max(1, workers/conc)
	// Where the levels' arrays come from an arena and the runs' level is
	// large, each worker's runs take theirs from an arena of its own, given
	// back after each run but for its partition, so that the bisections
	// can give back their temporaries as they go (scratch.own).
	var own []*arena.Arena
	if ar != nil && top.bytes() >= ownArenaMin {
		own = make([]*arena.Arena, conc)
		defer func() {
			for _, a := range own {
				a.Free()
			}
		}()
	}
	par.Run(conc, runs, func(w, i int) {
		levels := levels
		if i >= runs-finer {
			levels = levels[:len(levels)-1]
		}
		l := levels[len(levels)-1]
		ar := ar
		if own != nil {
			if own[w] == nil {
				own[w] = arena.New(runArenaHint * int(top.bytes()))
			}
			ar = own[w]
			defer ar.Release(ar.Mark())
		}
		where := arena.Make[int32](ar, l.n)
		ids := arena.Make[int32](ar, l.n)
		for v := range ids {
			ids[v] = int32(v)
		}
		s := rng.Derive(seed, uint64(7+i))
		recursiveBisection(l, ncon, k, 0, ids, where, bisectionTolerance(imb, k), tries, s, inner, &scratch{ar: ar, own: own != nil})
		rf := newRefiner(k, ncon, tot, imb, rng.New(rng.Derive(s, 1)), inner, ar)
		rf.setLevel(l, where, nil)
		if rf.overloaded() {
			rf.balance()
		}
		rf.greedy(10)
		if len(levels) > 1 {
			rf = newRefiner(k, ncon, tot, imb, rng.New(rng.Derive(s, 2)), 1, ar)
			rf.reserve(levels[0].n)
			var err error
			if where, err = uncoarsen(ctx, slices.Clone(levels), where, rf, 1, ar, true); err != nil {
				errs[i] = err
				return
			}
		}
		if own != nil && len(levels) == 1 {
			where = slices.Clone(where) // outlives the run's arena
		}
		res[i] = result{where, rf.cut(), rf.overloaded()}
	})
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	best := 0
	for i := 1; i < runs; i++ {
		if res[i].over != res[best].over {
			if !res[i].over {
				best = i
			}
			continue
		}
		if res[i].cut < res[best].cut {
			best = i
		}
	}
	return res[best].where, nil
}

// ownArenaMin is the least level (bytes) whose initial runs take arenas
// of their own (initialKWay). Below, their temporaries are small and
// fresh arenas' page faults cost more: Cora and CiteSeer at K = 4, whose
// runs' levels take 0.1-0.3 MB, partitioned in 1.05-1.26x the time with
// them. The 1M-node synthetic graph's (62 MB) four runs at K = 4 held 2.3
// GB without them; with them the process peaked at 1.31 GB instead of
// 3.11 (4.8-6.4 s against 5.6-10.8; 1.09 GB once the dropped coarse
// levels' pages went back too) and ran in a 1 GB memory cgroup, where it
// was killed at 1.5 GB before (gpmetis: 0.65 GB). A variable so that tests
// can bring it within a small graph's reach.
var ownArenaMin int64 = 4 << 20

// runArenaHint is the address space reserved for an initial run's arena
// (initialKWay) in units of its level's bytes: it grows past it if needed.
const runArenaHint = 2

// initialRunBytes is about the memory one of initialKWay's runs takes, in
// units of its level's bytes: two side by side on the 5M-node synthetic
// graph at K = 4 (a level of 323 MB, 177k vertices and 40M adjacency
// entries) peaked 1.44 GB above one after another (5.62 GB against 4.18;
// gpmetis 3.6).
const initialRunBytes = 5

// runsAtOnce returns how many of initialKWay's runs go side by side, at
// most most, when each takes about perRun bytes: as many as room (the
// memory the process may still take, memstat.Room) holds, at least one.
// Runs one after another take their inner loops' workers instead, so they
// take longer (the 5M-node graph's initial partitions 30 s instead of 16)
// but are not killed by a memory cgroup: at K = 4 that graph peaked at 3.65
// GB one after another in a 3.8 GB cgroup (under the soft limit 'graphmill
// partition' sets there), where side by side needed 5.6. The partition
// does not depend on it.
func runsAtOnce(most int, perRun int64, room func() (int64, bool)) int {
	if most <= 1 || int64(most)*perRun < roomAskMin {
		return max(most, 1)
	}
	r, ok := room()
	if !ok {
		return most
	}
	return int(min(max(r/perRun, 1), int64(most)))
}

// Assign partitions the graph g (a CSC, made undirected) into parts parts
// with the default multilevel method and returns every node's part: the
// train.Partitioner that GNNAutoScale training takes
// (train.WithPartitioner(partition.Assign)).
func Assign(ctx context.Context, g *graph.CSC, parts int, seed uint64, workers int) ([]int32, error) {
	pg, err := FromCSC(ctx, g, workers)
	if err != nil {
		return nil, err
	}
	res, err := Partition(ctx, pg, Options{Parts: parts, Seed: seed, Workers: workers})
	if err != nil {
		return nil, err
	}
	return res.Parts, nil
}

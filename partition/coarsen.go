package partition

import (
	"math"
	"slices"
	"sort"
	"sync/atomic"

	"github.com/graphmill/graphmill/internal/arena"
	"github.com/graphmill/graphmill/internal/par"
	"github.com/graphmill/graphmill/internal/prefetch"
	"github.com/graphmill/graphmill/internal/rng"
)

// level is one graph of the multilevel hierarchy. Vertex weights are
// stored ncon per vertex (vw[v*ncon+c]); edge weights are nil for unit
// weights (the input level only).
type level struct {
	n    int
	xadj []int64
	adj  []int32
	ew   []int32
	vw   []int32
	// wdeg is each vertex's total edge weight, kept by contraction (nil
	// on the input level: weightedDegree sums its edges).
	wdeg []int32
	// cmap maps each vertex to its vertex in the next coarser level (set
	// when the coarser level is built).
	cmap []int32
	// keep says the level's graph stays in memory for refinement.
	keep bool
}

// parallelMin is the least work (vertices plus adjacency entries) a level
// needs before a loop over it is split across goroutines: below it,
// waking a second thread costs more than it saves.
const parallelMin = 1 << 15

// workers returns w for a level large enough to split loops over it, else
// 1.
func (l *level) workers(w int) int {
	if int64(l.n)+int64(len(l.adj)) < parallelMin {
		return 1
	}
	return w
}

// bytes returns the memory of the level's graph arrays.
func (l *level) bytes() int64 {
	return int64(len(l.xadj))*8 + int64(len(l.adj)+len(l.ew)+len(l.vw)+len(l.wdeg))*4
}

// ewAt returns the weight of adjacency entry j.
func (l *level) ewAt(j int64) int32 {
	if l.ew == nil {
		return 1
	}
	return l.ew[j]
}

// acrossWeight returns v's weighted degree and the weight of its edges to
// vertices in another part (part: a side of a bisection or a k-way part
// per vertex). Each edge counts through a mask, not a branch: whether a
// neighbour is across is a coin flip the predictor cannot learn (measured
// 6-11 % of whole partitioning runs on the shared graphs).
func acrossWeight[P int8 | int32](l *level, v int, part []P) (d, across int64) {
	pv := part[v]
	lo, hi := l.xadj[v], l.xadj[v+1]
	if l.ew == nil {
		for _, u := range l.adj[lo:hi] {
			x := int64(part[u] ^ pv)
			across -= (x | -x) >> 63 // 1 when the parts differ
		}
		return hi - lo, across
	}
	ew := l.ew[lo:hi]
	for j, u := range l.adj[lo:hi] {
		x := int64(part[u] ^ pv)
		w := int64(ew[j])
		d += w
		across += w & ((x | -x) >> 63)
	}
	return d, across
}

// weightedDegree returns the total weight of v's edges.
func (l *level) weightedDegree(v int) int64 {
	if l.wdeg != nil {
		return int64(l.wdeg[v])
	}
	lo, hi := l.xadj[v], l.xadj[v+1]
	if l.ew == nil {
		return hi - lo
	}
	d := int64(0)
	for _, w := range l.ew[lo:hi] {
		d += int64(w)
	}
	return d
}

// randomPerm returns a uniformly random permutation of [0, n).
func randomPerm(r *rng.Rand, n int) []int32 {
	return randomPermInto(r, make([]int32, n))
}

// randomPermInto fills p with a uniformly random permutation of
// [0, len(p)) and returns it.
func randomPermInto(r *rng.Rand, p []int32) []int32 {
	for i := range p {
		p[i] = int32(i)
	}
	rng.Shuffle(r, p)
	return p
}

// degreeOrder returns the vertices in increasing order of degree (capped
// at 4x the average, as METIS does), random within a degree.
func (l *level) degreeOrder(r *rng.Rand, sc *scratch) []int32 {
	out := sc.buf(&sc.order, l.n)
	l.degreeOrderRange(r, 0, l.n, l.degreeCap(), sc.buf(&sc.perm, l.n), out)
	return out
}

// degreeCap is the degree above which degreeOrder no longer tells
// vertices apart: 4x the average.
func (l *level) degreeCap() int {
	if l.n == 0 {
		return 1
	}
	return max(1, int(4*int64(len(l.adj))/int64(l.n)))
}

// degreeOrderRange writes the vertices [lo, hi) into out in increasing
// order of degree (capped at dcap), random within a degree; perm is
// scratch of the same length.
func (l *level) degreeOrderRange(r *rng.Rand, lo, hi, dcap int, perm, out []int32) {
	randomPermInto(r, perm)
	for i := range perm {
		perm[i] += int32(lo)
	}
	l.byDegree(perm, nil, dcap, out)
}

// byDegree writes the vertices of vs (only those without a partner in
// match, unless match is nil) into out by increasing degree, capped at
// dcap, in vs's order within a degree (a stable counting sort), and
// returns that prefix of out.
func (l *level) byDegree(vs, match []int32, dcap int, out []int32) []int32 {
	counts := make([]int32, dcap+2)
	deg := func(v int32) int { return min(int(l.xadj[v+1]-l.xadj[v]), dcap) }
	keep := func(v int32) bool { return match == nil || match[v] < 0 }
	for _, v := range vs {
		if keep(v) {
			counts[deg(v)+1]++
		}
	}
	for i := 1; i < len(counts); i++ {
		counts[i] += counts[i-1]
	}
	total := counts[len(counts)-1]
	for _, v := range vs {
		if keep(v) {
			d := deg(v)
			out[counts[d]] = v
			counts[d]++
		}
	}
	return out[:total]
}

// matchBlock is the block of consecutive vertices that parallel matching
// hands to one goroutine. It is fixed, not derived from the worker count,
// so that a seed gives the same matching on any number of cores; 16k
// vertices keep a block's matching state in the L2 cache.
const matchBlock = 1 << 14

// match computes a heavy-edge matching (unit-weight edges: the first
// unmatched neighbour) visiting vertices by increasing degree, then pairs
// leftover vertices that share a neighbour (two-hop matching, which keeps
// coarsening power-law graphs, whose many low-degree vertices hang off the
// same hubs) and leftover isolated vertices. No pair may exceed maxvw in
// any constraint. It returns match (match[v] is v's partner, or v) and the
// number of coarse vertices. If part is not nil, only vertices of the
// same part pair (a V-cycle's coarsening, which keeps that partition).
//
// On levels of two blocks or more whose edges mostly stay inside blocks
// (blockLocal), the blocks are first matched inside themselves in
// parallel (each block in its own degree order, with a generator derived
// from r, making only the pairs the whole level's pass could make), then
// one sequential pass matches what is left, by degree over the whole
// level. Graphs numbered with locality (meshes, packed or
// partition-ordered datasets) find most partners inside their block.
func (l *level) match(r *rng.Rand, ncon int, maxvw, part []int32, workers int, sc *scratch) ([]int32, int) {
	n := l.n
	if sc == nil {
		sc = &scratch{}
	}
	match := sc.buf(&sc.match, n)
	w := l.workers(workers)
	par.For(w, n, func(_, lo, hi int) {
		for i := lo; i < hi; i++ {
			match[i] = -1
		}
	})
	m := matcher{l: l, ncon: ncon, maxvw: maxvw, part: part, match: match}
	var order []int32
	cn, unmatched := 0, 0
	if nb := (n + matchBlock - 1) / matchBlock; nb >= 2 && l.blockLocal(l.workers(workers)) >= localMin {
		order = sc.buf(&sc.order, n)
		perm := sc.buf(&sc.perm, n)
		dcap := l.degreeCap()
		seed := r.Uint64()
		pairs, left := make([]int, nb), make([]int, nb)
		par.Run(min(l.workers(workers), nb), nb, func(_, b int) {
			lo, hi := b*matchBlock, min(n, (b+1)*matchBlock)
			blk := order[lo:hi]
			l.degreeOrderRange(rng.New(rng.Derive(seed, uint64(b))), lo, hi, dcap, perm[lo:hi], blk)
			pairs[b], _ = m.heavyEdge(blk, int32(lo), int32(hi))
			// The block's vertices still unmatched, in its order, at the
			// front of its range (only this block matches them).
			c := 0
			for _, v := range blk {
				if match[v] < 0 {
					blk[c] = v
					c++
				}
			}
			left[b] = c
		})
		// What the blocks left (the blocks' orders filtered, one after
		// the other), by increasing degree over the whole level:
		// heavy-edge matching must visit low degrees first, which the
		// blocks' orders one after the other do not. (On a 5M-node
		// power-law graph numbered at random, where blocks match almost
		// nothing, that order made the cut 1.7x gpmetis's.)
		nl := 0
		for b, p := range pairs {
			cn += p
			nl += copy(order[nl:], order[b*matchBlock:b*matchBlock+left[b]])
		}
		order = l.byDegree(order[:nl], nil, dcap, perm)
		p, u := m.heavyEdge(order, 0, int32(n))
		cn, unmatched = cn+p, u
	} else {
		order = l.degreeOrder(r, sc)
		cn, unmatched = m.heavyEdge(order, 0, int32(n))
	}
	if unmatched > 0 {
		// Two-hop: pair unmatched vertices through their heaviest
		// neighbour; isolated vertices pair with each other.
		pending := sc.buf(&sc.pending, n) // pending[h]+1: an unmatched vertex waiting at h
		clear(pending)
		// An isolated vertex waiting for a partner, one per part when
		// keeping a partition.
		waiting := []int32{-1}
		if part != nil {
			waiting = slices.Repeat(waiting, int(slices.Max(part))+1)
		}
		for _, v := range order {
			if match[v] >= 0 {
				continue
			}
			if l.xadj[v] == l.xadj[v+1] {
				w := &waiting[0]
				if part != nil {
					w = &waiting[part[v]]
				}
				if u := *w; u >= 0 && m.fits(u, v) {
					match[v], match[u] = u, v
					*w = -1
					cn++
				} else {
					*w = v
				}
				continue
			}
			if unmatched*10 < n {
				continue
			}
			h, hw := int32(-1), int32(0)
			for j := l.xadj[v]; j < l.xadj[v+1]; j++ {
				if w := l.ewAt(j); w > hw {
					h, hw = l.adj[j], w
				}
			}
			if p := pending[h] - 1; p >= 0 && match[p] < 0 && m.fits(p, v) {
				match[v], match[p] = p, v
				pending[h] = 0
				cn++
			} else {
				pending[h] = v + 1
			}
		}
	}
	singles := make([]int, w)
	par.For(w, n, func(wi, lo, hi int) {
		c := 0
		for v := lo; v < hi; v++ {
			if match[v] < 0 {
				match[v] = int32(v)
				c++
			}
		}
		singles[wi] = c
	})
	for _, c := range singles {
		cn += c
	}
	return match, cn
}

// localMin is the share of edges inside matching blocks (blockLocal)
// from which a level is matched block by block. Below it most vertices
// would be left to the pass across blocks after a wasted scan: a 5M-node
// power-law graph numbered at random (no locality) matched in 3.5 s
// without blocks and 8.9 s with them.
const localMin = 0.5

// blockLocal estimates the share of the level's adjacency entries whose
// two ends lie in the same matching block, from the lists of at most 4,096
// vertices spread evenly over the level.
//
// The samples are read on workers goroutines: each is a few cache misses
// (its offsets, then its list), about 0.2 ms a level on wave.
func (l *level) blockLocal(workers int) float64 {
	step := max(1, l.n/4096)
	samples := (l.n + step - 1) / step
	var in, all atomic.Int64
	par.For(workers, samples, func(_, lo, hi int) {
		i, a := int64(0), int64(0)
		for s := lo; s < hi; s++ {
			v := s * step
			b := v / matchBlock
			for _, u := range l.adj[l.xadj[v]:l.xadj[v+1]] {
				if int(u)/matchBlock == b {
					i++
				}
			}
			a += l.xadj[v+1] - l.xadj[v]
		}
		in.Add(i)
		all.Add(a)
	})
	if all.Load() == 0 {
		return 1
	}
	return float64(in.Load()) / float64(all.Load())
}

// matcher holds what one matching reads: the level, the weight bound,
// the partition pairs must keep (nil: none) and the partners found so far
// (-1: unmatched).
type matcher struct {
	l     *level
	ncon  int
	maxvw []int32
	part  []int32
	match []int32
}

// fits reports whether u and v may pair: the same part, if the matcher
// keeps a partition, and together within maxvw.
func (m *matcher) fits(u, v int32) bool {
	if m.part != nil && m.part[u] != m.part[v] {
		return false
	}
	ncon := m.ncon
	for c := 0; c < ncon; c++ {
		if m.l.vw[int(u)*ncon+c]+m.l.vw[int(v)*ncon+c] > m.maxvw[c] {
			return false
		}
	}
	return true
}

// heavyEdge visits order and pairs each unmatched vertex with its
// unmatched neighbour in [lo, hi) of heaviest rating that fits. It touches
// the match of no vertex outside [lo, hi), so disjoint ranges run in
// parallel; there (a block, when [lo, hi) is not the whole level) a vertex
// is left for later if a neighbour outside rates higher than the best one
// inside (whether or not that one is free: its match may not be read), so
// that blocks make only the pairs the whole level's pass could have made.
// It returns the pairs made and the vertices left unmatched.
func (m *matcher) heavyEdge(order []int32, lo, hi int32) (pairs, unmatched int) {
	match := m.match
	fast := hasHeaviestFast && m.ncon == 1 && m.part == nil
	var ahead lookahead
	for i, v := range order {
		if i%lookGroup == 0 {
			ahead.fetch(m.l, match, order, i)
		}
		if match[v] >= 0 {
			continue
		}
		var best int32
		switch {
		case m.l.ew == nil:
			best = m.firstFree(v, lo, hi)
		case fast:
			best = m.heaviestFast(v, lo, hi)
		default:
			best = m.heaviest(v, lo, hi)
		}
		if best >= 0 {
			match[v], match[best] = best, v
			pairs++
		} else {
			unmatched++
		}
	}
	return pairs, unmatched
}

// firstFree returns v's first unmatched neighbour in [lo, hi) that fits
// with it, or -1: heavyEdge's choice on unit weights, which rate every
// neighbour alike (and outside [lo, hi) never above one inside).
//
// heavyEdge's choices are functions of their own, with the level's
// arrays in locals: inside heavyEdge the compiler reloaded them from the
// level at every neighbour.
func (m *matcher) firstFree(v, lo, hi int32) int32 {
	match := m.match
	for _, u := range m.l.adj[m.l.xadj[v]:m.l.xadj[v+1]] {
		if u >= lo && u < hi && match[u] < 0 && m.fits(u, v) {
			return u
		}
	}
	return -1
}

// heaviest returns v's unmatched neighbour in [lo, hi) of heaviest rating
// that fits with it, or -1, also when a neighbour outside [lo, hi) rates
// higher (see heavyEdge).
func (m *matcher) heaviest(v, lo, hi int32) int32 {
	l, match, ncon := m.l, m.match, m.ncon
	j0, j1 := l.xadj[v], l.xadj[v+1]
	adj, ew, vw := l.adj[j0:j1], l.ew[j0:j1], l.vw
	ew = ew[:len(adj)]
	best, bestW, outW := int32(-1), 0.0, 0.0
	for j, u := range adj {
		out := u < lo || u >= hi
		if !out && match[u] >= 0 {
			continue
		}
		// Rating w^2/weight(u) prefers light partners, which keeps
		// coarse vertex weights even and improves the cut.
		e := float64(ew[j])
		w := e * e / float64(max(1, vw[int(u)*ncon]))
		if out {
			outW = max(outW, w)
			continue
		}
		if w > bestW && m.fits(u, v) {
			best, bestW = u, w
		}
	}
	if outW > bestW {
		return -1
	}
	return best
}

// scratch holds the buffers one coarsening reuses from level to level:
// the merge tables, matching and bisection buffers. Reusing them saves
// allocating and faulting in fresh memory at every level, which dominates
// on small graphs.
type scratch struct {
	// ar is where new arrays come from (nil: the Go heap).
	ar *arena.Arena
	// own says that no other computation allocates from ar meanwhile, so
	// a step may give back its temporaries (arena.Mark, Release).
	own bool
	// tables holds a merge table per worker (see mergeTable).
	tables []mergeTable
	// Matching: its result (consumed by contract) and temporaries.
	match, perm, order, pending []int32
	// Bisection: priority queues, FM buffers and degree arrays.
	q       [2]*pq
	moved   []int32
	locked  []bool
	ext, in []int64
}

// pqs returns the two bisection queues, empty, for vertices below n.
func (s *scratch) pqs(n int) [2]*pq {
	for i := range s.q {
		if s.q[i] == nil || len(s.q[i].pos) < n {
			s.q[i] = newPQ(s.ar, n)
		} else {
			s.q[i].reset()
		}
	}
	return s.q
}

// degreeBufs returns a bisector's external and internal degree arrays
// (n each, contents arbitrary).
func (s *scratch) degreeBufs(n int) (ext, in []int64) {
	if cap(s.ext) < n {
		s.ext, s.in = arena.Make[int64](s.ar, n), arena.Make[int64](s.ar, n)
	}
	return s.ext[:n], s.in[:n]
}

// fmBufs returns FM's move list (empty, capacity n) and lock flags (n,
// all false).
func (s *scratch) fmBufs(n int) ([]int32, []bool) {
	if cap(s.moved) < n {
		s.moved, s.locked = arena.Make[int32](s.ar, n)[:0], arena.Make[bool](s.ar, n)
	}
	return s.moved[:0], s.locked[:n]
}

// buf returns (*p)[:n], reallocating *p if it is too short; the contents
// are arbitrary.
func (s *scratch) buf(p *[]int32, n int) []int32 {
	if cap(*p) < n {
		*p = arena.Make[int32](s.ar, n)
	}
	return (*p)[:n]
}

// contractChunk is about the fine adjacency entries a chunk of a
// contraction reads (see contract).
const contractChunk = 1 << 14

// maxKeepSlack is the largest upper bound (in adjacency entries) of a
// contraction whose arrays are kept at that bound; larger levels are
// copied out at their exact size unless nearly full.
const maxKeepSlack = 1 << 22

// mergeTable is a contraction's merge table: ht[cu] - base is coarse
// vertex cu's slot in the list being merged, or negative when cu is not
// in it. Each coarse vertex's list takes slots from base on, then moves
// base past them, so the entries it left behind fall below and need no
// clearing. (Clearing them, a loop over the list, was 9 % of
// contraction's CPU time on wave; without it contraction took 0.96-0.98
// of the time on one core, Zen 1.) When base would pass MaxInt32 the
// table is cleared and base starts over.
type mergeTable struct {
	ht   []int32
	base int32
}

// table returns worker w's merge table for n coarse vertices.
func (s *scratch) table(w, n int) *mergeTable {
	for len(s.tables) <= w {
		s.tables = append(s.tables, mergeTable{})
	}
	t := &s.tables[w]
	if len(t.ht) < n {
		t.ht = arena.Make[int32](s.ar, n)
		t.reset()
	}
	return t
}

// reset clears the table: no slots taken, base 0.
func (t *mergeTable) reset() {
	for i := range t.ht {
		t.ht[i] = -1
	}
	t.base = 0
}

// room returns base, or clears the table and returns 0 where a list of
// up to n slots from base would pass MaxInt32.
func (t *mergeTable) room(base int32, n int64) int32 {
	if int64(base)+n < math.MaxInt32 {
		return base
	}
	t.reset()
	return 0
}

// contract builds the coarse graph of a matching: coarse vertices are
// numbered in order of their smallest fine vertex; parallel edges merge
// with summed weights and edges inside a coarse vertex vanish. It runs on
// workers goroutines, reuses the buffers of sc and allocates from its
// arena, and sets l.cmap.
func (l *level) contract(match []int32, cn, ncon, workers int, sc *scratch) *level {
	n := l.n
	ar := sc.ar
	workers = l.workers(workers)
	cmap := arena.Make[int32](ar, n)
	rep := arena.Make[int32](ar, cn)
	// Coarse vertices are numbered in order of their smallest fine
	// vertex: each range counts its pairs' smaller ends, then numbers
	// them from the ranges before it. A range writes the map of a partner
	// outside itself too; no other range writes that entry.
	nw := workers
	starts := make([]int32, nw+1)
	par.For(nw, n, func(w, lo, hi int) {
		c := int32(0)
		for v := lo; v < hi; v++ {
			if int(match[v]) >= v {
				c++
			}
		}
		starts[w+1] = c
	})
	for w := 0; w < nw; w++ {
		starts[w+1] += starts[w]
	}
	par.For(nw, n, func(w, lo, hi int) {
		c := starts[w]
		for v := lo; v < hi; v++ {
			if u := int(match[v]); u >= v {
				cmap[v] = c
				cmap[u] = c
				rep[c] = int32(v)
				c++
			}
		}
	})
	l.cmap = cmap
	cl := &level{n: cn, xadj: arena.Make[int64](ar, cn+1), vw: arena.Make[int32](ar, cn*ncon), wdeg: arena.Make[int32](ar, cn)}
	// Each coarse vertex's list is at most its fine vertices' degrees
	// long, plus one slot for contractRange's sink: cl.xadj holds the
	// running sum of these bounds until contractRange writes the degrees.
	bound := cl.xadj
	par.For(workers, cn, func(_, lo, hi int) {
		for c := lo; c < hi; c++ {
			v := rep[c]
			u := match[v]
			s := 1 + l.xadj[v+1] - l.xadj[v]
			if u != v {
				s += l.xadj[u+1] - l.xadj[u]
			}
			bound[c+1] = s
		}
	})
	for c := 0; c < cn; c++ {
		bound[c+1] += bound[c]
	}
	// Chunks of coarse vertices of about equal bounds (the work is the
	// fine lists read): chunks of equal vertex counts left the dense
	// coarse levels of a power-law graph, a few thousand vertices with
	// over 100k entries, to one core. Each chunk writes at its bound,
	// then the chunks are compacted in order.
	nchunks := 1
	if workers > 1 {
		nchunks = int(max(1, min(bound[cn]/contractChunk, int64(workers)*8)))
	}
	tw := min(workers, nchunks)
	bounds := make([]int, nchunks+1)
	ub := arena.Make[int64](ar, nchunks+1)
	for k := 1; k <= nchunks; k++ {
		target := bound[cn] * int64(k) / int64(nchunks)
		bounds[k] = sort.Search(cn, func(c int) bool { return bound[c+1] >= target }) + 1
		if k == nchunks {
			bounds[k] = cn
		}
		ub[k] = bound[bounds[k]]
	}
	// The adjacency is written at its upper bound in a fresh array that
	// the level keeps, cut to its exact size; copying it out to exact-size
	// arrays, or reusing one scratch buffer sized for the first level,
	// faulted in more fresh pages, which cost about 10% of partitioning
	// wave from a cold heap. A large level on the Go heap gets fresh merge
	// tables and exact-size copies, which the collector frees; an arena
	// frees nothing before the end, so there both would only add.
	heapLarge := ar == nil && ub[nchunks] > maxKeepSlack
	if heapLarge {
		sc = &scratch{}
	}
	used := arena.Make[int64](ar, nchunks)
	for w := 0; w < tw; w++ {
		sc.table(w, cn) // allocated here: the workers only read the slice headers
	}
	// The adjacency and then the edge weights, in one array allocated
	// last, so that what the bound reserved beyond the exact lists goes
	// back to the arena (arena.Trim): the next level's arrays reuse that
	// memory, already faulted in, instead of fresh pages (on wave a run
	// touched 57 MB of arena, 37 of them these arrays at their bounds).
	ubn := int(ub[nchunks])
	buf, dirty := arena.MakeDirty[int32](ar, 2*ubn)
	cadj, cew := buf[:ubn:ubn], buf[ubn:]
	dirty = max(0, dirty-ubn) // of cew
	par.Run(tw, nchunks, func(w, k int) {
		// Only the weights the masked merge loops add to need be zero
		// (the adjacency is written before it is read): what of each
		// chunk's the arena had handed out before is cleared by its
		// worker just before it writes them.
		clear(cew[min(ub[k], int64(dirty)):min(ub[k+1], int64(dirty))])
		used[k] = l.contractRange(cmap, rep, match, bounds[k], bounds[k+1], ncon, &sc.tables[w], cadj, cew, ub[k], cl)
	})
	// Compact the chunks: the adjacency first, then the edge weights right
	// after it (every chunk moves down or stays, so no copy overwrites a
	// chunk not yet moved), and turn degrees into offsets.
	total := 0
	for k := 0; k < nchunks; k++ {
		if lo := ub[k]; int64(total) != lo {
			copy(buf[total:], cadj[lo:lo+used[k]])
		}
		total += int(used[k])
	}
	for k, dst := 0, total; k < nchunks; k++ {
		copy(buf[dst:], cew[ub[k]:ub[k]+used[k]])
		dst += int(used[k])
	}
	for c := 0; c < cn; c++ {
		cl.xadj[c+1] += cl.xadj[c]
	}
	if heapLarge && total*5 < ubn*4 {
		// A large level well under its bound: exact-size copies, instead
		// of holding up to twice its memory.
		cl.adj = slices.Clone(buf[:total])
		cl.ew = slices.Clone(buf[total : 2*total])
	} else {
		buf = arena.Trim(ar, buf, 2*total)
		cl.adj, cl.ew = buf[:total:total], buf[total:]
	}
	return cl
}

// contractRange writes the coarse vertices [lo, hi) of a contraction: their
// merged adjacency into cadj/cew from pos, their degrees into cl.xadj[c+1]
// and their weights into cl.vw. mt is a merge table of at least the
// coarse vertex count. It returns the entries written.
func (l *level) contractRange(cmap, rep, match []int32, lo, hi, ncon int, mt *mergeTable, cadj, cew []int32, pos int64, cl *level) int64 {
	xadj, adj, ew, vw := l.xadj, l.adj, l.ew, l.vw
	cxadj, cvw := cl.xadj, cl.vw
	first := pos
	// The table's base, kept here (the workers' tables share cache lines)
	// and stored back at the end.
	ht, base := mt.ht, mt.base
	// The merge loops (see mergeMaskedMax), chosen once for the range.
	unit, weighted := mergeUnit, mergeWeighted
	if cl.n <= mergeMaskedMax {
		unit, weighted = maskedUnit, maskedWeighted
	}
	var look lookahead
	for c := lo; c < hi; c++ {
		if (c-lo)%lookGroup == 0 {
			look.fetchPartners(l, rep, match, c, hi)
		}
		v := rep[c]
		u := match[v]
		// The edges inside c (the pair's edge) add up in a sink slot past
		// the list's longest possible end (within the bound the chunk
		// reserved), so that the merge loops need no test for them and
		// the list needs no moving afterwards. (It had collected them in
		// slot 0 and moved down over it: two small copies a coarse
		// vertex, 5-10 % of partitioning wave at K = 4 on one core.)
		out, outw := cadj[pos:], cew[pos:]
		sink := xadj[v+1] - xadj[v]
		if u != v {
			sink += xadj[u+1] - xadj[u]
		}
		base = mt.room(base, sink+1)
		ht[c] = base + int32(sink)
		d := 0
		if ew == nil {
			d = unit(adj[xadj[v]:xadj[v+1]], cmap, ht, out, outw, d, base)
			if u != v {
				d = unit(adj[xadj[u]:xadj[u+1]], cmap, ht, out, outw, d, base)
			}
		} else {
			d = weighted(adj[xadj[v]:xadj[v+1]], ew[xadj[v]:xadj[v+1]], cmap, ht, out, outw, d, base)
			if u != v {
				d = weighted(adj[xadj[u]:xadj[u+1]], ew[xadj[u]:xadj[u+1]], cmap, ht, out, outw, d, base)
			}
		}
		base += int32(sink) + 1
		// c's weighted degree: its fine vertices' less the edges inside.
		wd := l.weightedDegree(int(v)) - int64(outw[sink])
		if u != v {
			wd += l.weightedDegree(int(u))
		}
		cl.wdeg[c] = int32(wd)
		outw[sink] = 0 // the masked merge loops want outw zero past the list
		pos += int64(d)
		cxadj[c+1] = int64(d)
		for k := 0; k < ncon; k++ {
			wv := vw[int(v)*ncon+k]
			if u != v {
				wv += vw[int(u)*ncon+k]
			}
			cvw[c*ncon+k] = wv
		}
	}
	mt.base = base
	return pos - first
}

// mergeMaskedMax is the most coarse vertices a level may have for its
// contraction to use the masked merge loops (mergeUnitMasked), not the
// branchy ones (mergeUnit). Then the merge table (4 bytes a coarse
// vertex) stays in L2, and mispredicted branches are what the loops wait
// for. On larger levels they wait for the table's cache misses, and the
// branchy loops let the core run ahead of them: contracting a 5M-node
// random graph (synthetic, 25M edges) took 11.1-11.2 s with the masked
// loops on every level, 7.0-9.1 s with the branchy ones on its large
// levels.
const mergeMaskedMax = 1 << 17

// mergeUnit adds the unit-weight list lst (fine vertices, mapped through
// cmap) to the coarse list out/outw holding d entries and returns its new
// length. ht[cu] - base is cu's index in out, or negative (see
// mergeTable).
//
// The merge loops are functions of their own, never inlined: inside
// contractRange the compiler kept their indices and slice headers on the
// stack, and wave's first level contracted 1.6x slower (33-36 ms against
// 18-22 at one thread).
//
//go:noinline
func mergeUnit(lst, cmap, ht, out, outw []int32, d int, base int32) int {
	outw = outw[:len(out)]
	for _, a := range lst {
		cu := cmap[a]
		if i := ht[cu] - base; i >= 0 {
			outw[i]++
		} else {
			ht[cu] = base + int32(d)
			out[d] = cu
			outw[d] = 1
			d++
		}
	}
	return d
}

// mergeWeighted is mergeUnit for a list with edge weights wts.
//
//go:noinline
func mergeWeighted(lst, wts, cmap, ht, out, outw []int32, d int, base int32) int {
	wts = wts[:len(lst)]
	outw = outw[:len(out)]
	for j, a := range lst {
		cu := cmap[a]
		if i := ht[cu] - base; i >= 0 {
			outw[i] += wts[j]
		} else {
			ht[cu] = base + int32(d)
			out[d] = cu
			outw[d] = wts[j]
			d++
		}
	}
	return d
}

// mergeUnitMasked is mergeUnit without a branch on whether cu is new: its
// slot is chosen with masks, out[d] is written either way (a new entry's
// slot, else overwritten later or past the end) and outw's slots past
// the list must be zero (fresh memory; contractRange clears the sink
// after use). Whether a neighbour is new is a coin toss on meshes; on
// wave (at most 81k coarse vertices a level) contraction took 15-20 %
// less time than with mergeUnit (K = 4, one core, Zen 4).
//
//go:noinline
func mergeUnitMasked(lst, cmap, ht, out, outw []int32, d int, base int32) int {
	outw = outw[:len(out)]
	for _, a := range lst {
		cu := cmap[a]
		i := ht[cu] - base
		m := i >> 31 // -1 if cu is new, else 0
		i ^= (i ^ int32(d)) & m
		ht[cu] = base + i
		out[d] = cu
		outw[i]++
		d -= int(m)
	}
	return d
}

// mergeWeightedMasked is mergeUnitMasked for a list with edge weights wts.
//
//go:noinline
func mergeWeightedMasked(lst, wts, cmap, ht, out, outw []int32, d int, base int32) int {
	wts = wts[:len(lst)]
	outw = outw[:len(out)]
	for j, a := range lst {
		cu := cmap[a]
		i := ht[cu] - base
		m := i >> 31 // -1 if cu is new, else 0
		i ^= (i ^ int32(d)) & m
		ht[cu] = base + i
		out[d] = cu
		outw[i] += wts[j]
		d -= int(m)
	}
	return d
}

// lookGroup and lookDist pace the prefetches of a visit in random order
// (matching by degree): every lookGroup vertices, the offsets of the
// vertices 2*lookDist ahead and the lists (and edge weights) of those
// lookDist ahead still unmatched are asked for, so that their cache
// misses overlap. Matching on wave took 4-19 % less time (four rounds of
// 14 alternations in one process, Ice Lake Xeon); on email-Enron, whose
// blocks do not apply, it was unchanged (without the unmatched filter,
// 10 % slower there).
const (
	lookGroup = 8
	lookDist  = 16
)

// lookahead is the offsets buffer of a visit's list prefetches.
type lookahead struct {
	offs [2 * lookGroup]int64
}

// fetch prefetches for the visit of order at i: the offsets of
// order[i+2*lookDist:][:lookGroup] and the lists of the unmatched ones of
// order[i+lookDist:][:lookGroup] (whose offsets were asked for earlier).
func (a *lookahead) fetch(l *level, match, order []int32, i int) {
	if k := i + 2*lookDist; k < len(order) {
		prefetch.Rows64(l.xadj, order[k:min(k+lookGroup, len(order))])
	}
	k := i + lookDist
	if k >= len(order) {
		return
	}
	n := 0
	for _, w := range order[k:min(k+lookGroup, len(order))] {
		if match[w] < 0 {
			a.offs[n], a.offs[n+1] = l.xadj[w], l.xadj[w+1]
			n += 2
		}
	}
	a.lists(l, n)
}

// lists prefetches the lists (and edge weights) of l whose ranges are the
// first n offsets of a.offs.
func (a *lookahead) lists(l *level, n int) {
	prefetch.Spans32(l.adj, a.offs[:n])
	if l.ew != nil {
		prefetch.Spans32(l.ew, a.offs[:n])
	}
}

// fetchPartners prefetches for contractRange at coarse vertex c (of those
// below hi): the offsets of the partners of the coarse vertices
// 2*lookDist ahead and the partners' lists (and edge weights) of those
// lookDist ahead, lookGroup coarse vertices each. A coarse vertex's
// first fine vertex comes in order (rep increases), and the hardware
// prefetchers follow its list; its partner's list is anywhere in the
// level, a cache miss each (on wave's first level 72 % of pairs are more
// than 64 ids apart). With these prefetches wave's first four levels
// contracted 18-26 % faster (one core, Zen 4); prefetching the lists'
// cmap entries as well was slower.
func (a *lookahead) fetchPartners(l *level, rep, match []int32, c, hi int) {
	var us [lookGroup]int32
	if k := c + 2*lookDist; k < hi {
		n := 0
		for _, v := range rep[k:min(k+lookGroup, hi)] {
			us[n] = match[v]
			n++
		}
		prefetch.Rows64(l.xadj, us[:n])
	}
	k := c + lookDist
	if k >= hi {
		return
	}
	n := 0
	for _, v := range rep[k:min(k+lookGroup, hi)] {
		if u := match[v]; u != v {
			a.offs[n], a.offs[n+1] = l.xadj[u], l.xadj[u+1]
			n += 2
		}
	}
	a.lists(l, n)
}

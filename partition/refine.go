package partition

import (
	"math"
	"slices"
	"sort"
	"sync/atomic"

	"github.com/graphmill/graphmill/internal/arena"
	"github.com/graphmill/graphmill/internal/par"
	"github.com/graphmill/graphmill/internal/rng"
)

// refiner improves a k-way partition of one level by greedy boundary moves
// under the balance constraints, and restores balance when it is violated.
type refiner struct {
	l       *level
	ncon, k int
	where   []int32
	id, ed  []int32 // weight of edges inside / leaving the vertex's part
	pw      []int64 // k*ncon part weights
	limit   []int64 // ncon: the most a part may weigh
	avg     []float64
	conn    []int64 // k scratch: connectivity to each part
	touched []int32
	bnd     []int32
	q       *pq
	visited []bool
	exact   []bool
	// settled (greedyBatch): for a vertex looked at with no move of gain
	// >= 0, a lower bound on its own part's edge weight less its largest
	// other part's (0: not settled).
	settled []int32
	// fudge lets greedyBatch's moves of positive gain fill a part past
	// its limit by fudge times their gain (0: never past it).
	fudge   float64
	bndKeys []int64 // FM's boundary with queue keys (scratch)
	pst     []int32 // pairFM's per-vertex state (see pairKnown)
	// cutW is the level's edge cut, set by setLevel and kept by move.
	cutW    int64
	r       *rng.Rand
	workers int
	ar      *arena.Arena // where its arrays come from (nil: the Go heap)
	// gb holds greedyBatch's lists from one call to the next (a refiner
	// runs it on every level, and from a cold heap growing them afresh
	// each time faulted in new pages).
	gb struct {
		res     [][]uint64
		seen    [][]int32
		conns   [][]int64
		touched [][]int32
		all     []uint64
		list    []int32
		moved   []int32
	}
}

func newRefiner(k, ncon int, tot []int64, imb float64, r *rng.Rand, workers int, ar *arena.Arena) *refiner {
	rf := &refiner{k: k, ncon: ncon, pw: arena.Make[int64](ar, k*ncon), limit: arena.Make[int64](ar, ncon),
		avg: arena.Make[float64](ar, ncon), conn: arena.Make[int64](ar, k), r: r, workers: workers, ar: ar}
	for c := 0; c < ncon; c++ {
		rf.avg[c] = float64(tot[c]) / float64(k)
		rf.limit[c] = balanceLimit(tot[c], k, imb)
	}
	return rf
}

// balanceLimit is the largest weight a part may have: imb times the
// average, but never less than the average rounded up (so that tiny
// graphs can be balanced at all).
func balanceLimit(tot int64, k int, imb float64) int64 {
	l := int64(imb * float64(tot) / float64(k))
	return max(l, (tot+int64(k)-1)/int64(k))
}

// setLevel points the refiner at level l with partition where and computes
// degrees and part weights. If coarseEd is not nil, coarseEd[v] is the
// external degree of v's vertex in the refined coarser level (project's
// second result): where it is 0, every neighbour of v lies in v's part
// (they all map to that vertex or to its neighbours, all in its part), so
// v's degree is all internal and its list need not be checked against
// where, as METIS does. At K = 4 most of wave's vertices are interior.
func (rf *refiner) setLevel(l *level, where, coarseEd []int32) {
	rf.l, rf.where = l, where
	if cap(rf.id) < l.n {
		rf.reserve(l.n)
	}
	rf.id, rf.ed = rf.id[:l.n], rf.ed[:l.n]
	var cut atomic.Int64
	ncon := rf.ncon
	w := l.workers(rf.workers)
	pws := make([][]int64, w) // each worker's part weights
	par.For(w, l.n, func(wi, lo, hi int) {
		c := int64(0)
		pw := make([]int64, len(rf.pw))
		for v := lo; v < hi; v++ {
			p := int(where[v])
			for k := 0; k < ncon; k++ {
				pw[p*ncon+k] += int64(l.vw[v*ncon+k])
			}
			if coarseEd != nil && coarseEd[v] == 0 {
				rf.id[v], rf.ed[v] = int32(l.weightedDegree(v)), 0
				continue
			}
			d, ex := acrossWeight(l, v, where)
			rf.id[v], rf.ed[v] = int32(d-ex), int32(ex)
			c += ex
		}
		cut.Add(c)
		pws[wi] = pw
	})
	rf.cutW = cut.Load() / 2
	clear(rf.pw)
	for _, pw := range pws {
		for i, x := range pw {
			rf.pw[i] += x
		}
	}
}

// fits reports whether v can join part q within every constraint's limit.
func (rf *refiner) fits(v int32, q int32) bool { return rf.fitsSlack(v, q, 0) }

// fitsSlack reports whether v can join part q within every constraint's
// limit plus slack.
func (rf *refiner) fitsSlack(v int32, q int32, slack int64) bool {
	ncon := rf.ncon
	for c := 0; c < ncon; c++ {
		w := int64(rf.l.vw[int(v)*ncon+c])
		if w > 0 && rf.pw[int(q)*ncon+c]+w > rf.limit[c]+slack {
			return false
		}
	}
	return true
}

// load returns part q's largest weight relative to the average.
func (rf *refiner) load(q int32) float64 {
	m := 0.0
	for c := 0; c < rf.ncon; c++ {
		if rf.avg[c] > 0 {
			m = max(m, float64(rf.pw[int(q)*rf.ncon+c])/rf.avg[c])
		}
	}
	return m
}

// connect fills conn/touched (both empty) with v's edge weight to each
// other part.
func (rf *refiner) connect(v int32) {
	rf.touched = rf.connectInto(v, rf.conn, rf.touched)
}

func (rf *refiner) clearConn() {
	for _, q := range rf.touched {
		rf.conn[q] = 0
	}
	rf.touched = rf.touched[:0]
}

// shiftWeight moves v's weights from part from's to part to's.
func (rf *refiner) shiftWeight(v, from, to int32) {
	ncon := rf.ncon
	for c := 0; c < ncon; c++ {
		w := int64(rf.l.vw[int(v)*ncon+c])
		rf.pw[int(from)*ncon+c] -= w
		rf.pw[int(to)*ncon+c] += w
	}
}

// move moves v to part to, where it has connTo weight of edges.
func (rf *refiner) move(v, to int32, connTo int64) {
	l := rf.l
	from := rf.assign(v, to)
	for j := l.xadj[v]; j < l.xadj[v+1]; j++ {
		u := l.adj[j]
		w := l.ewAt(j)
		switch rf.where[u] {
		case from:
			rf.id[u] -= w
			rf.ed[u] += w
		case to:
			rf.id[u] += w
			rf.ed[u] -= w
		}
	}
	rf.ownDegrees(v, connTo)
}

// assign puts v in part to, moving its weights there, and returns the part
// it left: the start of move and moveSettle.
func (rf *refiner) assign(v, to int32) int32 {
	from := rf.where[v]
	rf.where[v] = to
	rf.shiftWeight(v, from, to)
	return from
}

// ownDegrees ends move and moveSettle: v's edges into the part it left
// become cut, those into its new part (connTo of weight) no longer are.
func (rf *refiner) ownDegrees(v int32, connTo int64) {
	rf.cutW += int64(rf.id[v]) - connTo
	deg := rf.id[v] + rf.ed[v]
	rf.id[v] = int32(connTo)
	rf.ed[v] = deg - int32(connTo)
}

// moveSettle is move for greedyBatch's apply phase: in the same pass over
// v's list it also lowers the settled margins of v's neighbours (see
// greedyBatch). A neighbour in v's old part loses w inside and may gain w
// to the new one (2w), one elsewhere may gain w to the new part (w), one
// in the new part gains w inside (0); in int64 and floored at 0, so that
// heavy edges cannot wrap a margin around. With a second pass over the
// list after move, partitioning email-Enron at K = 64 took 3-7 % longer
// (16 runs alternated in one process, twice; the other shared cases
// within the noise); folding the margins into move behind a nil check kept
// none of the gain, hence a loop of its own.
func (rf *refiner) moveSettle(v, to int32, connTo int64, settled []int32) {
	l := rf.l
	from := rf.assign(v, to)
	for j := l.xadj[v]; j < l.xadj[v+1]; j++ {
		u := l.adj[j]
		w := l.ewAt(j)
		lower := int64(w)
		switch rf.where[u] {
		case from:
			rf.id[u] -= w
			rf.ed[u] += w
			lower *= 2
		case to:
			rf.id[u] += w
			rf.ed[u] -= w
			lower = 0
		}
		if s := settled[u]; s != 0 {
			settled[u] = int32(max(0, int64(s)-lower))
		}
	}
	rf.ownDegrees(v, connTo)
}

// greedy runs up to passes passes of greedy boundary refinement. A pass
// visits boundary vertices once each, best ed-id first (a vertex enters
// the queue when a neighbour's move makes it a candidate), and moves each
// to the neighbouring part of largest positive gain that has room, or of
// zero gain if that improves the balance. It returns the total gain.
func (rf *refiner) greedy(passes int) int64 {
	total := int64(0)
	n := rf.l.n
	q := rf.q
	visited := rf.visited[:n]
	for pass := 0; pass < passes; pass++ {
		bnd := rf.bnd[:0]
		for v := 0; v < n; v++ {
			if rf.candidate(int32(v)) {
				bnd = append(bnd, int32(v))
			}
		}
		rng.Shuffle(rf.r, bnd)
		for _, v := range bnd {
			q.push(v, int64(rf.ed[v]-rf.id[v]))
		}
		rf.bnd = bnd
		moves, gain := 0, int64(0)
		l := rf.l
		for q.len() > 0 {
			v := q.pop()
			visited[v] = true
			rf.bnd = append(rf.bnd, v)
			if !rf.candidate(v) {
				continue
			}
			rf.connect(v)
			id := int64(rf.id[v])
			p := rf.where[v]
			best, bestGain := int32(-1), int64(-1)
			for _, t := range rf.touched {
				g := rf.conn[t] - id
				if g < 0 || g < bestGain || !rf.fits(v, t) {
					continue
				}
				if g > bestGain || rf.load(t) < rf.load(best) {
					best, bestGain = t, g
				}
			}
			if best >= 0 && (bestGain > 0 || rf.zeroGainHelps(v, p, best)) {
				rf.move(v, best, rf.conn[best])
				moves++
				gain += bestGain
				for j := l.xadj[v]; j < l.xadj[v+1]; j++ {
					u := l.adj[j]
					if visited[u] {
						continue
					}
					if rf.candidate(u) {
						if q.has(u) {
							q.update(u, int64(rf.ed[u]-rf.id[u]))
						} else {
							q.push(u, int64(rf.ed[u]-rf.id[u]))
						}
					} else if q.has(u) {
						q.remove(u)
					}
				}
			}
			rf.clearConn()
		}
		for _, v := range rf.bnd {
			visited[v] = false
		}
		total += gain
		// Stop when a pass gains less than 0.1% of the cut.
		cut := rf.cut()
		if moves == 0 || gain*1000 < cut {
			break
		}
	}
	return total
}

// candidate reports whether greedy refinement looks at v: a boundary
// vertex with at least as much weight leaving its part as inside it.
func (rf *refiner) candidate(v int32) bool { return rf.ed[v] > 0 && rf.ed[v] >= rf.id[v] }

// reserve sizes every per-vertex array of the refiner for levels of up
// to n vertices; setLevel calls it for a level larger than that, and the
// refinement steps rely on it. Uncoarsening refines ever larger levels, so
// multilevel reserves the input graph's size at once: growing the arrays
// level by level faulted in about twice the finest level's memory and
// initialised the queue's positions each time.
func (rf *refiner) reserve(n int) {
	rf.id, rf.ed = arena.Make[int32](rf.ar, n)[:0], arena.Make[int32](rf.ar, n)[:0]
	// greedy lists the boundary then every vertex it pops: at most 2n,
	// so its appends stay in place.
	rf.bnd = arena.Make[int32](rf.ar, 2*n)[:0]
	rf.q = newPQ(rf.ar, n)
	rf.visited = arena.Make[bool](rf.ar, n)
	rf.exact = arena.Make[bool](rf.ar, n)
	rf.settled = arena.Make[int32](rf.ar, n)
	rf.bndKeys = arena.Make[int64](rf.ar, n)
	rf.pairArrays(n)
}

// hubKey marks a vertex FM leaves out of its queue (a key ed-id never
// takes: ed >= 0 and id < 2^31).
const hubKey = math.MinInt32

// zeroGainHelps reports whether moving v from p to q improves the balance
// of constraint 0 between the two parts.
func (rf *refiner) zeroGainHelps(v, p, q int32) bool {
	ncon := rf.ncon
	w := int64(rf.l.vw[int(v)*ncon])
	return rf.pw[int(q)*ncon]+w < rf.pw[int(p)*ncon]
}

// overloaded reports whether any part exceeds a limit.
func (rf *refiner) overloaded() bool {
	for p := 0; p < rf.k; p++ {
		for c := 0; c < rf.ncon; c++ {
			if rf.pw[p*rf.ncon+c] > rf.limit[c] {
				return true
			}
		}
	}
	return false
}

// helps reports whether v carries weight in a constraint its part exceeds.
func (rf *refiner) helps(v int32) bool {
	p := int(rf.where[v])
	for c := 0; c < rf.ncon; c++ {
		if rf.pw[p*rf.ncon+c] > rf.limit[c] && rf.l.vw[int(v)*rf.ncon+c] > 0 {
			return true
		}
	}
	return false
}

// balance moves vertices out of overloaded parts, boundary vertices of
// best gain first, into neighbouring parts with room, else into the least
// loaded part with room, until no part is overloaded or nothing can move.
func (rf *refiner) balance() {
	for round := 0; round < 4 && rf.overloaded(); round++ {
		// Largest ed-id first, then smallest vertex (the order a stable
		// sort of the candidates in vertex order gives), from the
		// refiner's queue: it pops only what balancing uses, usually a few
		// of many; sorting them all was most of balance's time after
		// over-filling moves.
		cands := rf.q
		for v := 0; v < rf.l.n; v++ {
			if rf.helps(int32(v)) {
				cands.push(int32(v), int64(rf.ed[v]-rf.id[v])<<32-int64(v))
			}
		}
		for cands.len() > 0 {
			v := cands.pop()
			if !rf.helps(v) {
				continue
			}
			rf.connect(v)
			best, bestGain := int32(-1), int64(0)
			for _, q := range rf.touched {
				if g := rf.conn[q]; (best < 0 || g > bestGain) && rf.fits(v, q) {
					best, bestGain = q, g
				}
			}
			if best < 0 {
				// No neighbouring part has room: the least loaded one.
				bl := 0.0
				for q := int32(0); q < int32(rf.k); q++ {
					if q != rf.where[v] && rf.fits(v, q) {
						if ld := rf.load(q); best < 0 || ld < bl {
							best, bl = q, ld
						}
					}
				}
				if best >= 0 {
					bestGain = rf.conn[best]
				}
			}
			if best >= 0 {
				rf.move(v, best, bestGain)
			}
			rf.clearConn()
			if !rf.overloaded() {
				cands.reset()
				return
			}
		}
	}
}

// project maps the partition of the coarser level onto l, into an array
// from ar (nil: the Go heap). Given the coarser level's external degrees
// (coarseEd, from its refiner), it also returns each vertex's coarse
// vertex's external degree, for setLevel.
func project(l *level, coarse, coarseEd []int32, workers int, ar *arena.Arena) (where, ed []int32) {
	where = arena.Make[int32](ar, l.n)
	if coarseEd != nil {
		// l.cmap is not needed after projecting: it takes each vertex's
		// coarse external degree instead.
		ed = l.cmap
	}
	par.For(l.workers(workers), l.n, func(_, lo, hi int) {
		for v := lo; v < hi; v++ {
			c := l.cmap[v]
			where[v] = coarse[c]
			if ed != nil {
				ed[v] = coarseEd[c]
			}
		}
	})
	return where, ed
}

// bestMove returns v's best target part with room and the gain of moving
// there (which may be negative), or -1. conn must hold v's connectivity.
func (rf *refiner) bestMove(v int32) (int32, int64) {
	id := int64(rf.id[v])
	best, bestGain := int32(-1), int64(0)
	for _, t := range rf.touched {
		g := rf.conn[t] - id
		if (best < 0 || g > bestGain || g == bestGain && rf.load(t) < rf.load(best)) && rf.fits(v, t) {
			best, bestGain = t, g
		}
	}
	return best, bestGain
}

// fm runs k-way Fiduccia-Mattheyses passes: boundary vertices move, best
// gain first, even when the gain is negative, each at most once a pass,
// and the pass is rolled back to its best prefix (smallest cut, then
// better balance). A pass stops after limit moves without improvement.
// It returns the total gain.
func (rf *refiner) fm(passes, limit int) int64 {
	l := rf.l
	n := l.n
	q := rf.q
	locked := rf.visited[:n]
	type mv struct {
		v    int32
		from int32
	}
	var moved []mv
	total := int64(0)
	hub := l.hub()
	exact := rf.exact[:n]
	// The queue is keyed by ed-id, an upper bound of the gain that needs
	// no scan of the neighbours; the exact best move is found on pop.
	key := func(u int32) int64 { return int64(rf.ed[u] - rf.id[u]) }
	for pass := 0; pass < passes; pass++ {
		// The boundary vertices with their keys (key<<32 | v), read in
		// vertex order, then shuffled: degrees and gains read at random
		// after the shuffle missed the cache. Hubs are shuffled too,
		// marked, so the order is that of the vertices shuffled alone.
		bnd := rf.bndKeys[:0]
		for v := 0; v < n; v++ {
			if rf.ed[v] > 0 {
				k := rf.ed[v] - rf.id[v]
				if l.xadj[v+1]-l.xadj[v] > hub {
					k = hubKey
				}
				bnd = append(bnd, int64(k)<<32|int64(v))
			}
		}
		rng.Shuffle(rf.r, bnd)
		for _, e := range bnd {
			if k := int32(e >> 32); k != hubKey {
				q.push(int32(e), int64(k))
			}
		}
		moved = moved[:0]
		delta, best, bestLen := int64(0), int64(0), 0
		// Work budget: every pop scans a vertex's neighbours, which on
		// the dense coarse levels of power-law graphs costs far more than
		// the few moves it finds.
		budget := len(bnd)/2 + 100
		for q.len() > 0 && len(moved)-bestLen < limit && budget > 0 {
			budget--
			v := q.pop()
			rf.connect(v)
			t, g := rf.bestMove(v)
			if t < 0 {
				rf.clearConn()
				exact[v] = false // out of the queue: no flag may outlive the pass
				continue
			}
			if !exact[v] && q.len() > 0 {
				// Keys are upper bounds (ed-id): v is the best only if
				// its exact gain beats the next bound; else requeue it
				// with its exact gain.
				if _, next := q.top(); g < next {
					rf.clearConn()
					exact[v] = true
					q.push(v, g)
					continue
				}
			}
			from := rf.where[v]
			rf.move(v, t, rf.conn[t])
			rf.clearConn()
			locked[v] = true
			exact[v] = false
			moved = append(moved, mv{v, from})
			delta += g
			if delta > best {
				best, bestLen = delta, len(moved)
			}
			for j := l.xadj[v]; j < l.xadj[v+1]; j++ {
				u := l.adj[j]
				if locked[u] {
					continue
				}
				switch {
				case rf.ed[u] > 0 && l.xadj[u+1]-l.xadj[u] <= hub:
					exact[u] = false
					if q.has(u) {
						q.update(u, key(u))
					} else {
						q.push(u, key(u))
					}
				case q.has(u):
					q.remove(u)
				}
			}
		}
		for _, v := range q.heap {
			exact[v] = false
		}
		q.reset()
		for i := len(moved) - 1; i >= bestLen; i-- {
			m := moved[i]
			rf.connect(m.v)
			rf.move(m.v, m.from, rf.conn[m.from])
			rf.clearConn()
		}
		for _, m := range moved {
			locked[m.v] = false
		}
		total += best
		if best == 0 {
			break
		}
	}
	return total
}

// hub returns the degree over which a vertex stays out of FM, the pair
// searches and the chains of moves: updating a vertex's gains after every
// neighbour's move would cost O(degree^2) on power-law graphs.
func (l *level) hub() int64 { return max(32, 4*int64(len(l.adj))/int64(max(1, l.n))) }

// cut returns the current edge cut of the level. (Summing the external
// degrees after every refinement pass instead cost about 2 % of
// partitioning wave into 4 parts.)
func (rf *refiner) cut() int64 { return rf.cutW }

// connectInto fills conn (indexed by part, all 0 on entry) with v's edge
// weight to each other part, appending the parts touched to touched.
//
// Every neighbour's weight is added to its part, v's own included, which
// is then taken out: whether a neighbour of a boundary vertex lies across
// is a coin flip the predictor cannot learn, while a part first seen is
// rare (a few parts a vertex).
func (rf *refiner) connectInto(v int32, conn []int64, touched []int32) []int32 {
	l, where := rf.l, rf.where
	p := where[v]
	lo, hi := l.xadj[v], l.xadj[v+1]
	adj := l.adj[lo:hi]
	n := len(touched)
	// Room for every part: each entry's part is written at the end of
	// touched and kept only if first seen. (With an append in the loop the
	// compiler spilled and reloaded registers at every entry: connectInto
	// took 21.7 % of the CPU time partitioning email-Enron at K = 64, 14.7 %
	// so; same results.)
	t := slices.Grow(touched, rf.k+1)
	t = t[:cap(t)]
	m := n
	if l.ew == nil {
		for _, u := range adj {
			q := where[u]
			c := conn[q]
			t[m] = q
			if c == 0 {
				m++
			}
			conn[q] = c + 1
		}
	} else {
		ew := l.ew[lo:hi]
		ew = ew[:len(adj)]
		for j, u := range adj {
			q := where[u]
			c := conn[q]
			t[m] = q
			if c == 0 {
				m++
			}
			conn[q] = c + int64(ew[j])
		}
	}
	touched = t[:m]
	if conn[p] != 0 {
		conn[p] = 0
		i := n
		for touched[i] != p {
			i++
		}
		// Keep the order of first sight (pick breaks ties by it).
		touched = append(touched[:i], touched[i+1:]...)
	}
	return touched
}

// pick returns the greedy move of v given its connectivity: the part of
// largest non-negative gain with room (ties to the less loaded part),
// accepted if the gain is positive or the move improves the balance.
func (rf *refiner) pick(v int32, conn []int64, touched []int32) (int32, int64) {
	id := int64(rf.id[v])
	best, bestGain := int32(-1), int64(-1)
	for _, t := range touched {
		g := conn[t] - id
		if g < 0 || g < bestGain || !rf.fitsSlack(v, t, int64(rf.fudge*float64(g))) {
			continue
		}
		if g > bestGain || rf.load(t) < rf.load(best) {
			best, bestGain = t, g
		}
	}
	if best >= 0 && (bestGain > 0 || rf.zeroGainHelps(v, rf.where[v], best)) {
		return best, bestGain
	}
	return -1, 0
}

// perWorker returns workers slices of n int64s, each on cache lines of
// its own: slices made one after another lie side by side, and two
// workers adding to their own counters in one line (connectInto adds to
// one at every adjacency entry) would take the line from each other.
func perWorker(workers, n int) [][]int64 {
	const line = 8 // int64s a cache line
	stride := (n+line-1)/line*line + line
	slab := make([]int64, workers*stride)
	out := make([][]int64, workers)
	for w := range out {
		out[w] = slab[w*stride : w*stride+n : w*stride+n]
	}
	return out
}

// workRanges splits the vertices into consecutive ranges of about equal
// work (vertices plus adjacency entries), at most 256 and each of about
// per or more, and returns their bounds. The dense coarse levels of
// power-law graphs have few vertices but long lists.
func (l *level) workRanges(per int64) []int {
	n := l.n
	work := int64(n) + int64(len(l.adj))
	nch := int(max(1, min(256, work/per)))
	bounds := make([]int, nch+1)
	for c := 1; c < nch; c++ {
		target := work * int64(c) / int64(nch)
		// The first vertex v with v + xadj[v] >= target.
		bounds[c] = sort.Search(n, func(v int) bool { return int64(v)+l.xadj[v] >= target })
	}
	bounds[nch] = n
	return bounds
}

// greedyBatch is greedy refinement in rounds that parallelise: every
// candidate's best move is computed on a snapshot by all workers, then the
// moves are applied best gain first, each re-checked against the current
// state. The result does not depend on the number of workers.
//
// The first round looks at every vertex; a later one only at the
// candidates of the round before and the neighbours of the vertices that
// moved, since a vertex's degrees change only when it or a neighbour
// moves. (Filtering every vertex again was most of a later round's time
// on wave's finest level: about 0.2 ms for 156k vertices to find 1-3k
// candidates.) The candidates are applied in an order of their own (gain,
// then vertex), so which vertices a round looks at first does not matter.
func (rf *refiner) greedyBatch(passes int) int64 {
	// A candidate is its sort key: MaxInt32 minus its gain (a difference
	// of int32 degrees, 0 <= gain < 2^31) in the high half, the vertex in
	// the low half, so that sorting the keys as integers orders by gain,
	// best first, then by vertex. (Sorting structs with a comparison
	// function took 1.25 % of the CPU time partitioning email-Enron at K =
	// 64, on one core between parallel rounds; the keys take 0.56 %.)
	type cand = uint64
	candOf := func(v int32, gain int64) cand { return uint64(math.MaxInt32-gain)<<32 | uint64(uint32(v)) }
	l := rf.l
	bounds := l.workRanges(4096)
	nch := len(bounds) - 1
	workers := min(l.workers(rf.workers), nch)
	gb := &rf.gb
	if len(gb.conns) < workers {
		gb.conns = perWorker(workers, rf.k)
	}
	conns := gb.conns
	for len(gb.touched) < workers {
		gb.touched = append(gb.touched, nil)
	}
	for len(gb.res) < nch {
		gb.res, gb.seen = append(gb.res, nil), append(gb.seen, nil)
	}
	res := gb.res[:nch]
	seen := gb.seen[:nch] // per chunk: the vertices that passed the filter
	all := gb.all[:0]
	list, moved := gb.list[:0], gb.moved[:0] // the vertices a later round looks at; the round's moves
	visited := rf.visited[:l.n]
	// A vertex looked at whose every other part has less of its edges
	// than its own (no move of gain >= 0, whatever the part weights) is
	// settled: later rounds skip it while the margin by which its own
	// part leads lasts. A neighbour's move of weight w cuts that margin
	// by 2w at most (w from its own part, w to another), so the margin
	// kept is a lower bound, and the moves are the same as looking at it
	// again. On email-Enron at K = 16 these looks (mostly at high-degree
	// vertices, whose neighbours move every round) were a third of
	// partitioning's CPU time; a settled vertex had been looked at again
	// after any neighbour's move, and connectInto was still a quarter of
	// the CPU time.
	settled := rf.settled[:l.n]
	clear(settled)
	full := true // the round looks at every vertex, not at list
	total := int64(0)
	for pass := 0; pass < passes; pass++ {
		chunks := nch
		var lb []int // bounds of the chunks of list (rounds that scan a list)
		if !full {
			chunks = min(nch, max(1, len(list)/1024))
			lb = par.Ranges(len(list), chunks)
		}
		par.Run(min(workers, chunks), chunks, func(w, c int) {
			conn := conns[w]
			touched := gb.touched[w]
			out, in := res[c][:0], seen[c][:0]
			look := func(v int32) {
				in = append(in, v)
				touched = rf.connectInto(v, conn, touched[:0])
				if t, g := rf.pick(v, conn, touched); t >= 0 {
					out = append(out, candOf(v, g))
				} else {
					most := int64(0)
					for _, q := range touched {
						most = max(most, conn[q])
					}
					settled[v] = int32(max(0, int64(rf.id[v])-most))
				}
				for _, q := range touched {
					conn[q] = 0
				}
			}
			if lb == nil {
				for v := int32(bounds[c]); v < int32(bounds[c+1]); v++ {
					if rf.candidate(v) && settled[v] == 0 {
						look(v)
					}
				}
			} else {
				for _, v := range list[lb[c]:lb[c+1]] {
					if rf.candidate(v) && settled[v] == 0 {
						look(v)
					}
				}
			}
			res[c], seen[c], gb.touched[w] = out, in, touched
		})
		all = all[:0]
		for _, r := range res[:chunks] {
			all = append(all, r...)
		}
		slices.Sort(all)
		gain := int64(0)
		moved = moved[:0]
		for _, c := range all {
			v := int32(uint32(c))
			if !rf.candidate(v) {
				continue
			}
			rf.touched = rf.connectInto(v, rf.conn, rf.touched[:0])
			if t, g := rf.pick(v, rf.conn, rf.touched); t >= 0 {
				rf.moveSettle(v, t, rf.conn[t], settled)
				moved = append(moved, v)
				gain += g
			}
			rf.clearConn()
		}
		total += gain
		if len(moved) == 0 || gain*1000 < rf.cut() {
			break
		}
		// The next round's vertices: this round's candidates and the
		// moved vertices' neighbours (the moved ones are candidates);
		// every vertex again where that is not much less than all (the
		// list is built on one core, the full filter runs on all).
		size := int64(0)
		for _, in := range seen[:chunks] {
			size += int64(len(in))
		}
		for _, v := range moved {
			size += l.xadj[v+1] - l.xadj[v]
		}
		if full = size*8 > int64(l.n); full {
			continue
		}
		list = list[:0]
		add := func(v int32) {
			if !visited[v] {
				visited[v] = true
				list = append(list, v)
			}
		}
		for _, in := range seen[:chunks] {
			for _, v := range in {
				add(v)
			}
		}
		for _, v := range moved {
			for _, u := range l.adj[l.xadj[v]:l.xadj[v+1]] {
				add(u)
			}
		}
		for _, v := range list {
			visited[v] = false
		}
	}
	gb.all, gb.list, gb.moved = all, list, moved
	return total
}

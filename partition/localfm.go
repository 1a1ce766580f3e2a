package partition

import (
	"cmp"
	"math"
	"slices"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/graphmill/graphmill/internal/arena"
	"github.com/graphmill/graphmill/internal/par"
	"github.com/graphmill/graphmill/internal/rng"
)

// Localized two-way FM on pairs of adjacent parts (pairFM).
//
// The k-way FM pass (fm) is one sequence of moves over the whole boundary:
// once no move gains, its moves go anywhere, and after a hundred of them
// without improvement it stops. What it misses are short chains that move
// a small group of vertices across a boundary together, each move alone a
// loss. Localized searches (as in KaFFPa's and Mt-KaHyPar's localized FM)
// look for exactly those: each starts from one boundary vertex whose move
// loses little, moves best gain first among the vertices it reaches, stops
// after a few moves without improvement or once it is too far below its
// best, and rolls back to its best prefix. On wave at K = 16, 8-30
// vertices moved together made most of what they found.
//
// The searches run on pairs of parts, two-way: a vertex of a pair may move
// only to the pair's other part. That keeps each vertex's gain a single
// number, updated by its neighbours' moves without looking at its list
// again, and it lets pairs that share no part run at the same time. A move
// between a and b changes the degrees (id, ed) only of vertices in a or b,
// and the gains of a pair's vertices depend only on which of their
// neighbours are in a or b, so pairs that share no part do not see each
// other: the pairs run in a fixed order (heaviest first), each after the
// pairs before it on its parts (runPairs), and the partition is the same
// on any number of workers. Where parts are read across pairs (a
// neighbour's part), the reads and the owner's writes are atomic.
//
// Each pair's searches get a share of the level's work budget (adjacency
// entries scanned) in proportion to its seeds' edges to the other part.

const (
	// pairMinLevel: levels of up to this many vertices get k-way FM
	// (fm) instead, which costs little there. On Cora and CiteSeer,
	// whose levels are all that small, searches on every level gave
	// CiteSeer at K = 64 1.001-1.019 of gpmetis's cut over seeds 1-5
	// (0.999 without).
	pairMinLevel = 5000
	// pairMinPart: nor levels of fewer than this many vertices a part.
	// There a two-way search misses the moves to third parts that FM
	// makes: on a 300 x 200 grid (8 seeds) the searches gave K = 300 a
	// cut 1.7 % larger than FM's (0.4 % from 200 vertices a part up,
	// none from 300), while K = 2-64 came out 1.9-3.2 % smaller.
	pairMinPart = 300
	// pairLimit is how many moves without improvement end a search;
	// pairDip how far below its best (in average edge weights) a search
	// may go; pairSeed how much a seed's move may lose (average edge
	// weights). A search that wins moved 3-30 vertices; one from a seed
	// that loses more than 2 rarely wins.
	pairLimit = 10
	pairDip   = 4
	pairSeed  = 2
	// pairShare bounds a level's searches to pairShare times its
	// adjacency entries scanned, pairShareFine on the levels with half
	// the input's adjacency or more: there a search costs the most
	// (its vertices' state is out of cache) and finds the least. On wave
	// the coarser levels' searches end well within their bound; at the
	// finest level, a quarter of the searches' work (a bound of 1/4)
	// kept most of the gain (mean cut ratio to gpmetis over seeds 1-5,
	// K = 16: 0.997 with either bound).
	pairShare     = 1.0
	pairShareFine = 0.25
	// pairShareFineMany is the fine levels' share from pairManyK parts
	// on. At K = 64, seeds 16-55 paired against a quarter: wave's cut
	// 0.44 % smaller with a half and 0.52 % with the whole adjacency,
	// email-Enron's 0.05 and 0.10 %, smaller on every one of the 40
	// seeds either way; wave's time about 3 % and 8-13 % more (email-
	// Enron's within the noise). At K = 16 the whole adjacency gained
	// less (0.05 and 0.13 %) for 8-9 % more time.
	pairShareFineMany = 0.5
	pairManyK         = 64
	// pairShareLarge is the input level's share on inputs of pairLargeMin
	// adjacency entries or more, where coarsening takes most of the time
	// and the searches a small part. On the 5M-node synthetic graph (50M
	// entries) at K = 4 the input level's searches gained 2,040 edges with
	// a quarter and 4,074 with the whole adjacency (then ending within
	// it), taking the cut from 1.0004 of gpmetis's to 0.9999, for 3 s of
	// a 33 s run.
	pairShareLarge = 1.0
	pairLargeMin   = 1 << 24
	// pairPays: once a level's searches gained under 1/pairPays of its
	// cut, the finer levels' searches are skipped, all but the finest
	// level's (uncoarsen). On a power-law graph they find little off the
	// finest level (hubs stay out of them): email-Enron at K = 4 gained
	// 0-2 edges of 46,000 at 5,051 vertices, 5-11 at 9,820 and 37-80 at
	// 18,992, for about 2 ms of its 38; skipping them changed its cut by
	// +0.11 % (0.12) over 30 seeds and cut its time 4-7 % at K = 4 and 16.
	// On wave every level's searches gain 0.3-2 % of its cut.
	pairPays = 2000
)

// pairTask is one pair's searches.
type pairTask struct {
	a, b   int32
	w      int64   // the seeds' edge weight to the other part
	n      int32   // seeds
	seeds  []int32 // vertices of a next to b and of b next to a
	budget int64
	seed   uint64
	gain   int64 // the cut's decrease
}

type pairMv struct {
	v, from int32
	g       int64
}

// pairWorker is one worker's scratch: a search's queue and lists.
type pairWorker struct {
	queue []int32 // the search's queue (see pop)
	moved []pairMv
	seen  []int32 // vertices whose gain the search computed
	done  []int32 // vertices the task will not seed or move again
	r     rng.Rand
	_     [64]byte // no false sharing between workers
}

// pairFM runs localized two-way FM searches on the level's pairs of
// adjacent parts, within a budget of share times the level's adjacency
// entries scanned, and returns the cut's decrease.
func (rf *refiner) pairFM(share float64) int64 {
	l := rf.l
	k := rf.k
	if k < 2 || l.n == 0 {
		return 0
	}
	// The average edge weight (the searches' limits scale with it) and
	// whether any vertex is over hub, the degree from which the searches
	// leave vertices alone, as fm does.
	hub := l.hub()
	workers := l.workers(rf.workers)
	sums, maxDegs := make([]int64, workers), make([]int64, workers)
	par.For(workers, l.n, func(w, lo, hi int) {
		sum, maxDeg := int64(0), int64(0)
		for v := lo; v < hi; v++ {
			sum += int64(rf.id[v]) + int64(rf.ed[v])
			maxDeg = max(maxDeg, l.xadj[v+1]-l.xadj[v])
		}
		sums[w], maxDegs[w] = sum, maxDeg
	})
	wsum := int64(0)
	for _, x := range sums {
		wsum += x
	}
	avgw := float64(wsum) / float64(max(1, len(l.adj)))
	th := int64(pairSeed * avgw)
	proto := pairSearcher{rf: rf, dip: max(1, int64(pairDip*avgw)), hub: hub, hubs: slices.Max(maxDegs) > hub}

	tasks := rf.pairTasks(th, hub, proto.hubs, workers)
	if len(tasks) == 0 {
		return 0
	}
	total := int64(0)
	for i := range tasks {
		total += tasks[i].w
	}
	base := rf.r.Uint64()
	levelBudget := share * float64(len(l.adj))
	for i := range tasks {
		t := &tasks[i]
		t.budget = int64(levelBudget*float64(t.w)/float64(total)) + 64
		t.seed = rng.Derive(base, uint64(t.a)*uint64(k)+uint64(t.b))
	}
	slices.SortFunc(tasks, func(x, y pairTask) int {
		if c := cmp.Compare(y.w, x.w); c != 0 {
			return c
		}
		return cmp.Or(cmp.Compare(x.a, y.a), cmp.Compare(x.b, y.b))
	})

	wks := make([]pairWorker, workers)
	runPairs(len(tasks), k, workers, func(i int) (int32, int32) { return tasks[i].a, tasks[i].b }, func(w, i int) {
		ps := proto
		ps.wk = &wks[w]
		ps.runPair(&tasks[i], th)
	})
	gain := int64(0)
	for i := range tasks {
		gain += tasks[i].gain
	}
	rf.cutW -= gain
	return gain
}

// pairTasks returns a task for every pair of parts with seeds: the
// boundary vertices (hubs aside) whose move to the pair's other part loses
// at most th, in vertex order, and their edge weight to that part (w).
func (rf *refiner) pairTasks(th, hub int64, hubs bool, workers int) []pairTask {
	l, k := rf.l, rf.k
	type cand struct {
		lo, hi int32 // the pair of parts, lo < hi
		v, w   int32 // the vertex and its edge weight to the other part
	}
	bounds := l.workRanges(4096)
	nch := len(bounds) - 1
	cands := make([][]cand, nch)
	par.Run(min(workers, nch), nch, func(_, c int) {
		conn := make([]int64, k)
		var touched []int32
		var out []cand
		for v := int32(bounds[c]); v < int32(bounds[c+1]); v++ {
			if rf.ed[v] == 0 || int64(rf.ed[v]-rf.id[v]) < -th || hubs && l.xadj[v+1]-l.xadj[v] > hub {
				continue // no move of v loses th or less, or a hub
			}
			p := rf.where[v]
			touched = rf.connectInto(v, conn, touched[:0])
			for _, q := range touched {
				if conn[q]-int64(rf.id[v]) >= -th {
					out = append(out, cand{min(p, q), max(p, q), v, int32(conn[q])})
				}
				conn[q] = 0
			}
		}
		cands[c] = out
	})
	// Group the seeds by pair: by the pair's lower part (a stable counting
	// sort), then by the other in order of first sight.
	byLo := make([]int32, k+1)
	nc := 0
	for _, cs := range cands {
		for _, c := range cs {
			byLo[c.lo+1]++
		}
		nc += len(cs)
	}
	if nc == 0 {
		return nil
	}
	for p := 0; p < k; p++ {
		byLo[p+1] += byLo[p]
	}
	sorted := make([]cand, nc)
	for _, cs := range cands {
		for _, c := range cs {
			sorted[byLo[c.lo]] = c
			byLo[c.lo]++
		}
	}
	var tasks []pairTask
	taskOf := make([]int32, nc)
	slot := make([]int32, k)
	for i := range slot {
		slot[i] = -1
	}
	for i := 0; i < nc; {
		j := i
		for ; j < nc && sorted[j].lo == sorted[i].lo; j++ {
			c := sorted[j]
			t := slot[c.hi]
			if t < 0 {
				t = int32(len(tasks))
				slot[c.hi] = t
				tasks = append(tasks, pairTask{a: c.lo, b: c.hi})
			}
			tasks[t].w += int64(c.w)
			tasks[t].n++
			taskOf[j] = t
		}
		for _, c := range sorted[i:j] {
			slot[c.hi] = -1
		}
		i = j
	}
	seeds := make([]int32, nc)
	off := int32(0)
	for i := range tasks {
		t := &tasks[i]
		t.seeds = seeds[off : off : off+t.n]
		off += t.n
	}
	for j, c := range sorted {
		t := &tasks[taskOf[j]]
		t.seeds = append(t.seeds, c.v)
	}
	return tasks
}

// runPairs runs n tasks on pairs of parts (parts(i) of task i; k parts)
// with the result of running them one after the other in order: a task
// starts once the tasks before it on either of its parts are done, so
// tasks that share no part run at the same time, on up to workers
// goroutines, lowest index first. (Rounds of disjoint pairs with a barrier
// between them had left a core idle at the end of every round.)
func runPairs(n, k, workers int, parts func(i int) (int32, int32), run func(w, i int)) {
	if workers <= 1 || n <= 1 {
		for i := 0; i < n; i++ {
			run(0, i)
		}
		return
	}
	// next[2i], next[2i+1]: the next task on task i's first and second
	// part; waits[i]: the tasks before i on its parts not done yet.
	next := make([]int32, 2*n)
	waits := make([]int8, n)
	last := make([]int32, k)
	for i := range last {
		last[i] = -1
	}
	for i := 0; i < n; i++ {
		a, b := parts(i)
		for s, p := range [2]int32{a, b} {
			if j := last[p]; j >= 0 {
				ja, _ := parts(int(j))
				slot := 2 * j
				if ja != p {
					slot++
				}
				next[slot] = int32(i)
				waits[i]++
			}
			last[p] = int32(i)
			next[2*i+s] = -1
		}
	}
	var mu sync.Mutex
	cond := sync.NewCond(&mu)
	var ready []int32 // tasks that may start, lowest index first
	for i := 0; i < n; i++ {
		if waits[i] == 0 {
			ready = append(ready, int32(i))
		}
	}
	left := n
	work := func(w int) {
		mu.Lock()
		for {
			for len(ready) == 0 && left > 0 {
				cond.Wait()
			}
			if left == 0 {
				mu.Unlock()
				return
			}
			i := ready[0]
			ready = ready[1:]
			mu.Unlock()
			run(w, int(i))
			mu.Lock()
			left--
			for _, j := range next[2*i : 2*i+2] {
				if j >= 0 {
					if waits[j]--; waits[j] == 0 {
						k := sort.Search(len(ready), func(x int) bool { return ready[x] > j })
						ready = slices.Insert(ready, k, j)
					}
				}
			}
			cond.Broadcast()
		}
	}
	// Worker 0 is the calling goroutine, the others the shared pool's
	// (internal/par), which start at once when a worker is spinning.
	par.Each(workers, work)
}

// partOf reads u's part where a concurrent pair may be moving it.
func (rf *refiner) partOf(u int32) int32 { return atomic.LoadInt32(&rf.where[u]) }

// pairGain is v's gain from moving to part other: its edge weight there
// less its own part's.
func (rf *refiner) pairGain(v, other int32) int64 {
	l := rf.l
	lo, hi := l.xadj[v], l.xadj[v+1]
	c := int64(0)
	if l.ew == nil {
		for _, u := range l.adj[lo:hi] {
			if rf.partOf(u) == other {
				c++
			}
		}
	} else {
		ew := l.ew[lo:hi]
		for j, u := range l.adj[lo:hi] {
			if rf.partOf(u) == other {
				c += int64(ew[j])
			}
		}
	}
	return c - int64(rf.id[v])
}

// pairMove moves v (of a running pair) to part to for gain g and updates
// the degrees of its neighbours in either part and the gains of those whose
// gain is known. With a searcher, it also queues (or requeues) the
// neighbours that border the other part and the search may move, and
// drops those that no longer border it. It returns the entries scanned.
func (rf *refiner) pairMove(v, to int32, g int64, ps *pairSearcher) int64 {
	l := rf.l
	from := rf.where[v]
	atomic.StoreInt32(&rf.where[v], to)
	rf.shiftWeight(v, from, to)
	st := rf.pst
	lo, hi := l.xadj[v], l.xadj[v+1]
	for j := lo; j < hi; j++ {
		u := l.adj[j]
		w := l.ewAt(j)
		switch rf.partOf(u) {
		case from:
			rf.id[u] -= w
			rf.ed[u] += w
			if st[2*u+1]&pairKnown != 0 {
				st[2*u] += 2 * w
			}
		case to:
			rf.id[u] += w
			rf.ed[u] -= w
			if st[2*u+1]&pairKnown != 0 {
				st[2*u] -= 2 * w
			}
		default:
			continue
		}
		if ps == nil || st[2*u+1]&(pairLocked|pairDone) != 0 || ps.hubs && l.xadj[u+1]-l.xadj[u] > ps.hub {
			continue
		}
		// Its gain if computed, else the bound ed-id.
		k, border := int64(rf.ed[u]-rf.id[u]), rf.ed[u] > 0
		if st[2*u+1]&pairKnown != 0 {
			k = int64(st[2*u])
			border = k+int64(rf.id[u]) > 0
		}
		queued := st[2*u+1]&pairQueued != 0
		switch {
		case border:
			st[2*u] = int32(k)
			if !queued {
				ps.push(u)
			}
		case queued:
			ps.remove(u)
		}
	}
	conn := int32(g) + rf.id[v]
	deg := rf.id[v] + rf.ed[v]
	rf.id[v], rf.ed[v] = conn, deg-conn
	st[2*v] = int32(-g)
	return hi - lo
}

// pairFM's per-vertex state is two int32 a vertex in refiner.pst, side by
// side (one cache line for both): its move's gain (where its flags have
// pairKnown) at 2v and its flags at 2v+1.
const (
	pairLocked = 1 << iota // moved in this search
	pairKnown              // gain computed
	pairDone               // not to be seeded or moved again in this pair
	pairQueued             // in the search's queue, keyed by its gain or bound
)

// push queues u, whose key is st[2u].
func (ps *pairSearcher) push(u int32) {
	ps.rf.pst[2*u+1] |= pairQueued
	ps.wk.queue = append(ps.wk.queue, u)
}

// remove takes u out of the queue.
func (ps *pairSearcher) remove(u int32) {
	ps.rf.pst[2*u+1] &^= pairQueued
	q := ps.wk.queue
	i := slices.Index(q, u)
	q[i] = q[len(q)-1]
	ps.wk.queue = q[:len(q)-1]
}

// pop takes the queued vertex of largest key (the first queued of
// those) out of the queue and returns it with the largest key left
// (math.MinInt64 if none). A search queues tens of vertices: a scan of
// them, all in cache, costs less than a heap's scattered position
// updates.
func (ps *pairSearcher) pop() (int32, int64) {
	st, q := ps.rf.pst, ps.wk.queue
	bi, bk, next := 0, int64(st[2*q[0]]), int64(math.MinInt64)
	for i := 1; i < len(q); i++ {
		if k := int64(st[2*q[i]]); k > bk {
			bi, bk, next = i, k, bk
		} else if k > next {
			next = k
		}
	}
	v := q[bi]
	copy(q[bi:], q[bi+1:])
	ps.wk.queue = q[:len(q)-1]
	st[2*v+1] &^= pairQueued
	return v, next
}

// pairSearcher runs one pair's searches (runPair).
type pairSearcher struct {
	rf       *refiner
	wk       *pairWorker
	a, b     int32
	budget   int64
	dip, hub int64
	hubs     bool // the level has vertices over hub
}

// know makes u's gain (u in part p) known and returns it.
func (ps *pairSearcher) know(u, p int32) int64 {
	rf := ps.rf
	st := rf.pst[2*u : 2*u+2]
	if st[1]&pairKnown == 0 {
		st[1] |= pairKnown
		st[0] = int32(rf.pairGain(u, ps.a+ps.b-p))
		ps.wk.seen = append(ps.wk.seen, u)
		ps.budget -= rf.l.xadj[u+1] - rf.l.xadj[u]
	}
	return int64(st[0])
}

// forget clears the gains computed so far: they are kept up to date only
// within a search.
func (ps *pairSearcher) forget() {
	st := ps.rf.pst
	for _, u := range ps.wk.seen {
		st[2*u+1] &^= pairKnown
	}
	ps.wk.seen = ps.wk.seen[:0]
}

// search runs one search from seed s and returns the cut's decrease it
// kept.
func (ps *pairSearcher) search(s int32) int64 {
	rf, wk := ps.rf, ps.wk
	st := rf.pst
	a, b := ps.a, ps.b
	ps.push(s)
	wk.moved = wk.moved[:0]
	delta, best, bestLen := int64(0), int64(0), 0
	for len(wk.queue) > 0 && len(wk.moved)-bestLen < pairLimit && best-delta <= ps.dip && ps.budget > 0 {
		v, next := ps.pop()
		from := rf.where[v]
		to := a + b - from
		if st[2*v+1]&pairKnown == 0 {
			// Its key was the bound ed-id: v is the best only if its
			// gain beats the next key; else it goes back with its gain.
			g := ps.know(v, from)
			if g+int64(rf.id[v]) <= 0 {
				continue // no edge to the other part
			}
			if g < next {
				ps.push(v) // st[2v] is its gain now
				continue
			}
		}
		if !rf.fits(v, to) {
			continue
		}
		g := int64(st[2*v])
		st[2*v+1] |= pairLocked
		ps.budget -= 2 * rf.pairMove(v, to, g, ps)
		wk.moved = append(wk.moved, pairMv{v, from, g})
		delta += g
		if delta > best {
			best, bestLen = delta, len(wk.moved)
		}
	}
	for _, u := range wk.queue {
		st[2*u+1] &^= pairQueued
	}
	wk.queue = wk.queue[:0]
	ps.forget()
	for i := len(wk.moved) - 1; i >= bestLen; i-- {
		m := wk.moved[i]
		rf.pairMove(m.v, m.from, -m.g, nil)
	}
	for i, m := range wk.moved {
		st[2*m.v+1] &^= pairLocked
		if i < bestLen {
			st[2*m.v+1] |= pairDone
			wk.done = append(wk.done, m.v)
		}
	}
	if st[2*s+1]&pairDone == 0 {
		st[2*s+1] |= pairDone
		wk.done = append(wk.done, s)
	}
	return best
}

// runPair runs the searches of pair t: from each seed in random order
// (skipping those moved or used already and those whose move now loses
// more than th), within t's budget.
func (ps *pairSearcher) runPair(t *pairTask, th int64) {
	rf, wk := ps.rf, ps.wk
	ps.a, ps.b, ps.budget = t.a, t.b, t.budget
	wk.r.Seed(t.seed)
	seeds := t.seeds
	rng.Shuffle(&wk.r, seeds)
	st := rf.pst
	gain := int64(0)
	for _, s := range seeds {
		if ps.budget <= 0 {
			break
		}
		p := rf.partOf(s)
		if p != t.a && p != t.b || st[2*s+1]&pairDone != 0 {
			continue
		}
		if g := ps.know(s, p); g < -th || g+int64(rf.id[s]) <= 0 {
			continue // no longer a seed
		}
		gain += ps.search(s)
	}
	ps.forget() // seeds looked at after the last search
	for _, v := range wk.done {
		st[2*v+1] &^= pairDone
	}
	wk.done = wk.done[:0]
	t.gain = gain
}

// pairArrays allocates pairFM's per-vertex arrays (see reserve).
func (rf *refiner) pairArrays(n int) {
	rf.pst = arena.Make[int32](rf.ar, 2*n)
}

package partition

import (
	"cmp"
	"context"
	"math"
	"slices"

	"github.com/graphmill/graphmill/internal/arena"
	"github.com/graphmill/graphmill/internal/par"
	"github.com/graphmill/graphmill/internal/rng"
)

// pq is an indexed binary max-heap of vertices keyed by gain. The keys sit
// beside the vertices in heap order rather than in an array indexed by
// vertex: a comparison then reads the heap's own lines, not a random line
// of a per-vertex array (on wave's finest level that array is 1.2 MiB,
// and its reads missed L2 when FM filled its queue).
type pq struct {
	heap []int32 // vertices
	hkey []int64 // hkey[i] is the key of heap[i]
	pos  []int32 // position in heap, -1 if absent
}

// newPQ returns an empty queue for vertices below n, its arrays from ar
// (nil: the Go heap). A vertex is queued at most once, so the heap never
// outgrows its capacity n.
func newPQ(ar *arena.Arena, n int) *pq {
	q := &pq{heap: arena.Make[int32](ar, n)[:0], hkey: arena.Make[int64](ar, n)[:0], pos: arena.Make[int32](ar, n)}
	for i := range q.pos {
		q.pos[i] = -1
	}
	return q
}

func (q *pq) len() int            { return len(q.heap) }
func (q *pq) has(v int32) bool    { return q.pos[v] >= 0 }
func (q *pq) top() (int32, int64) { return q.heap[0], q.hkey[0] }

func (q *pq) reset() {
	for _, v := range q.heap {
		q.pos[v] = -1
	}
	q.heap = q.heap[:0]
	q.hkey = q.hkey[:0]
}

func (q *pq) push(v int32, k int64) {
	q.pos[v] = int32(len(q.heap))
	q.heap = append(q.heap, v)
	q.hkey = append(q.hkey, k)
	q.up(len(q.heap) - 1)
}

func (q *pq) update(v int32, k int64) {
	i := int(q.pos[v])
	old := q.hkey[i]
	q.hkey[i] = k
	if k > old {
		q.up(i)
	} else {
		q.down(i)
	}
}

func (q *pq) remove(v int32) {
	i := int(q.pos[v])
	last := len(q.heap) - 1
	q.swap(i, last)
	q.heap = q.heap[:last]
	q.hkey = q.hkey[:last]
	q.pos[v] = -1
	if i < last {
		q.up(i)
		q.down(i)
	}
}

func (q *pq) pop() int32 {
	v := q.heap[0]
	q.remove(v)
	return v
}

func (q *pq) swap(i, j int) {
	q.heap[i], q.heap[j] = q.heap[j], q.heap[i]
	q.hkey[i], q.hkey[j] = q.hkey[j], q.hkey[i]
	q.pos[q.heap[i]] = int32(i)
	q.pos[q.heap[j]] = int32(j)
}

// up and down move the entry at i towards the root or the leaves, as
// repeated swaps with its parent or larger child would, but shifting the
// entries it passes into the hole and writing it once at its place, with
// the arrays in locals (stores through q's slices made the compiler reload
// their headers at every step). Same heap as the swaps; up and down took
// 7.0-7.7 % of the CPU time partitioning email-Enron at K = 64 with swaps,
// 5.3 % so.
func (q *pq) up(i int) {
	heap, hkey, pos := q.heap, q.hkey, q.pos
	v, k := heap[i], hkey[i]
	for i > 0 {
		p := (i - 1) / 2
		kp := hkey[p]
		if kp >= k {
			break
		}
		u := heap[p]
		heap[i], hkey[i] = u, kp
		pos[u] = int32(i)
		i = p
	}
	heap[i], hkey[i] = v, k
	pos[v] = int32(i)
}

func (q *pq) down(i int) {
	heap, hkey, pos := q.heap, q.hkey, q.pos
	n := len(heap)
	hkey = hkey[:n]
	v, k := heap[i], hkey[i]
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m, km := l, hkey[l]
		if r := l + 1; r < n && hkey[r] > km {
			m, km = r, hkey[r]
		}
		if k >= km {
			break
		}
		u := heap[m]
		heap[i], hkey[i] = u, km
		pos[u] = int32(i)
		i = m
	}
	heap[i], hkey[i] = v, k
	pos[v] = int32(i)
}

// bisector holds the state of one 2-way partitioning of a level.
type bisector struct {
	l      *level
	ncon   int
	side   []int8
	ext    []int64 // weight of edges to the other side
	in     []int64 // weight of edges to the own side
	pw     [2][]int64
	limit  [2][]float64
	target [2][]float64
	tot    []int64
	ar     *arena.Arena // where its arrays come from (nil: the Go heap)
}

func newBisector(l *level, ncon int, frac, tol float64, ar *arena.Arena) *bisector {
	return newBisectorIn(l, ncon, frac, tol, &scratch{ar: ar})
}

// newBisectorIn is newBisector taking the degree arrays from sc, which
// must then not be shared with another live bisector, and its other
// arrays from sc's arena.
func newBisectorIn(l *level, ncon int, frac, tol float64, sc *scratch) *bisector {
	ar := sc.ar
	b := &bisector{l: l, ncon: ncon, side: arena.Make[int8](ar, l.n), tot: arena.Make[int64](ar, ncon), ar: ar}
	b.ext, b.in = sc.degreeBufs(l.n)
	maxvw := arena.Make[int64](ar, ncon)
	for v := 0; v < l.n; v++ {
		for c := 0; c < ncon; c++ {
			w := int64(l.vw[v*ncon+c])
			b.tot[c] += w
			maxvw[c] = max(maxvw[c], w)
		}
	}
	for s := 0; s < 2; s++ {
		f := frac
		if s == 1 {
			f = 1 - frac
		}
		b.pw[s] = arena.Make[int64](ar, ncon)
		b.limit[s] = arena.Make[float64](ar, ncon)
		b.target[s] = arena.Make[float64](ar, ncon)
		for c := 0; c < ncon; c++ {
			t := f * float64(b.tot[c])
			b.target[s][c] = t
			b.limit[s][c] = t*tol + float64(maxvw[c])/2
		}
	}
	return b
}

// overweight returns how far side s is over its limit (max over
// constraints, relative to the target), or 0 if within.
func (b *bisector) overweight(s int8) float64 {
	o := 0.0
	for c := 0; c < b.ncon; c++ {
		if d := float64(b.pw[s][c]) - b.limit[s][c]; d > 0 && b.target[s][c] > 0 {
			o = max(o, d/b.target[s][c])
		}
	}
	return o
}

// fits reports whether v can join side s without exceeding its limit.
func (b *bisector) fits(v int32, s int8) bool {
	for c := 0; c < b.ncon; c++ {
		w := b.l.vw[int(v)*b.ncon+c]
		if w > 0 && float64(b.pw[s][c]+int64(w)) > b.limit[s][c] {
			return false
		}
	}
	return true
}

func (b *bisector) move(v int32, to int8) {
	from := b.side[v]
	b.side[v] = to
	for c := 0; c < b.ncon; c++ {
		w := int64(b.l.vw[int(v)*b.ncon+c])
		b.pw[from][c] -= w
		b.pw[to][c] += w
	}
}

// toward is the change of u's internal degree (and, negated, of its
// external one) when a neighbour joins side to by an edge of weight w: +w
// if u is on side to, else -w, without a branch.
func (b *bisector) toward(u int32, to int8, w int32) int64 {
	s := int64(b.side[u] ^ to) // 0 on side to, else 1
	return int64(w) * (1 - 2*s)
}

// computeDegrees fills ext, in and pw from side and returns the cut.
func (b *bisector) computeDegrees() int64 {
	l := b.l
	cut := int64(0)
	for s := 0; s < 2; s++ {
		clear(b.pw[s])
	}
	for v := 0; v < l.n; v++ {
		// (This pass was two thirds of FM's time on the small graphs of the
		// initial partition before it lost its branches: acrossWeight.)
		d, e := acrossWeight(l, v, b.side)
		b.ext[v], b.in[v] = e, d-e
		cut += e
		for c := 0; c < b.ncon; c++ {
			b.pw[b.side[v]][c] += int64(l.vw[v*b.ncon+c])
		}
	}
	return cut / 2
}

// grow runs greedy graph growing: side 1 holds everything, and vertices
// join side 0, best gain first, from a random seed, until side 0 reaches
// its target weight of constraint 0.
//
// deg holds every vertex's weighted degree (weightedDegrees), shared by
// the tries of a bisection; skipped is n flags, all false, for vertices
// too heavy to join side 0, which grow clears again. Computing the degrees and allocating the flags in every
// try cost 4-8 % of partitioning CiteSeer at K = 64 (one core).
func (b *bisector) grow(r *rng.Rand, q *pq, deg []int64, skipped []bool) {
	l := b.l
	for v := range b.side {
		b.side[v] = 1
	}
	for c := 0; c < b.ncon; c++ {
		b.pw[0][c], b.pw[1][c] = 0, b.tot[c]
	}
	// gain of moving v to side 0 = (edges to 0) - (edges to 1).
	clear(b.ext) // edges to side 0
	defer clear(skipped)
	q.reset()
	target := b.target[0][0]
	if b.tot[0] == 0 {
		return
	}
	for float64(b.pw[0][0]) < target {
		if q.len() == 0 {
			// Start (or restart, for a disconnected graph) from a random
			// vertex still on side 1.
			start := r.IntN(l.n)
			v := int32(-1)
			for i := 0; i < l.n; i++ {
				u := int32((start + i) % l.n)
				if b.side[u] == 1 && !skipped[u] {
					v = u
					break
				}
			}
			if v < 0 {
				return
			}
			q.push(v, 0)
		}
		v := q.pop()
		if !b.fits(v, 0) && b.pw[0][0] > 0 {
			skipped[v] = true
			continue
		}
		b.move(v, 0)
		// The slices in locals: the queue's stores would otherwise make
		// the compiler reload their headers (and the list's end) at
		// every entry.
		lo, hi := l.xadj[v], l.xadj[v+1]
		side, ext := b.side, b.ext
		var ew []int32
		if l.ew != nil {
			ew = l.ew[lo:hi]
		}
		for j, u := range l.adj[lo:hi] {
			if side[u] != 1 {
				continue
			}
			w := int64(1)
			if ew != nil {
				w = int64(ew[j])
			}
			e := ext[u] + w
			ext[u] = e
			g := 2*e - deg[u]
			if q.has(u) {
				q.update(u, g)
			} else {
				q.push(u, g)
			}
		}
	}
}

// weightedDegrees returns every vertex's total edge weight, in an array
// from ar.
func weightedDegrees(l *level, ar *arena.Arena) []int64 {
	deg := arena.Make[int64](ar, l.n)
	for v := range deg {
		deg[v] = l.weightedDegree(v)
	}
	return deg
}

// fork returns a bisector of the same level and balance (sharing its
// targets and limits, read-only) with its own sides and part weights,
// and its degree arrays from sc: one try of several.
func (b *bisector) fork(sc *scratch) bisector {
	f := *b
	f.side = arena.Make[int8](sc.ar, b.l.n)
	f.ext, f.in = sc.degreeBufs(b.l.n)
	f.pw = [2][]int64{arena.Make[int64](sc.ar, b.ncon), arena.Make[int64](sc.ar, b.ncon)}
	return f
}

// fm runs Fiduccia-Mattheyses passes with balance, keeping the best
// (balanced first, then smallest cut) prefix of each pass. It returns the
// cut.
func (b *bisector) fm(passes int, qs [2]*pq, moved []int32, locked []bool) int64 {
	l := b.l
	cut := b.computeDegrees()
	limit := min(max(l.n/100, 15), 100)
	for pass := 0; pass < passes; pass++ {
		qs[0].reset()
		qs[1].reset()
		for v := 0; v < l.n; v++ {
			if b.ext[v] > 0 {
				qs[b.side[v]].push(int32(v), b.ext[v]-b.in[v])
			}
		}
		bestCut, bestOver := cut, b.overweight(0)+b.overweight(1)
		bestLen := 0
		moved = moved[:0]
		for len(moved)-bestLen < limit {
			// Pick the side to move from.
			var from int8
			o0, o1 := b.overweight(0), b.overweight(1)
			switch {
			case o0 > 0 && o0 >= o1:
				from = 0
			case o1 > 0:
				from = 1
			case qs[0].len() == 0 && qs[1].len() == 0:
				from = -1
			case qs[0].len() == 0:
				from = 1
			case qs[1].len() == 0:
				from = 0
			default:
				_, g0 := qs[0].top()
				_, g1 := qs[1].top()
				from = 0
				if g1 > g0 || g1 == g0 && float64(b.pw[1][0])/b.target[1][0] > float64(b.pw[0][0])/b.target[0][0] {
					from = 1
				}
			}
			if from < 0 || qs[from].len() == 0 {
				break
			}
			v := qs[from].pop()
			to := 1 - from
			if !b.fits(v, to) && b.overweight(from) == 0 {
				locked[v] = true
				moved = append(moved, -v-1) // a skipped vertex, not moved
				continue
			}
			cut -= b.ext[v] - b.in[v]
			b.move(v, to)
			b.ext[v], b.in[v] = b.in[v], b.ext[v]
			locked[v] = true
			moved = append(moved, v)
			for j := l.xadj[v]; j < l.xadj[v+1]; j++ {
				u := l.adj[j]
				w := b.toward(u, to, l.ewAt(j))
				b.in[u] += w
				b.ext[u] -= w
				if locked[u] {
					continue
				}
				q := qs[b.side[u]]
				if q.has(u) {
					q.update(u, b.ext[u]-b.in[u])
				} else if b.ext[u] > 0 {
					q.push(u, b.ext[u]-b.in[u])
				}
			}
			over := b.overweight(0) + b.overweight(1)
			if over < bestOver || over == bestOver && cut < bestCut {
				bestCut, bestOver, bestLen = cut, over, len(moved)
			}
		}
		// Undo the moves after the best prefix, updating the degrees.
		for i := len(moved) - 1; i >= bestLen; i-- {
			v := moved[i]
			if v < 0 {
				continue
			}
			to := 1 - b.side[v]
			cut -= b.ext[v] - b.in[v]
			b.move(v, to)
			b.ext[v], b.in[v] = b.in[v], b.ext[v]
			for j := l.xadj[v]; j < l.xadj[v+1]; j++ {
				u := l.adj[j]
				w := b.toward(u, to, l.ewAt(j))
				b.in[u] += w
				b.ext[u] -= w
			}
		}
		for _, v := range moved {
			if v < 0 {
				v = -v - 1
			}
			locked[v] = false
		}
		if bestLen == 0 {
			break
		}
	}
	return cut
}

// bisect splits l into two sides with weight fractions frac and 1-frac
// (within tol). Small connected components (fillers) are set aside: the
// rest is bisected with the balance limits of the whole graph, so the cut
// can fall where the graph is thin, and the fillers, heaviest first, then
// go where there is most room.
func bisect(l *level, ncon int, frac, tol float64, tries int, seed uint64, workers int, sc *scratch) []int8 {
	ar := sc.ar
	comp, weights := components(l, ncon, ar)
	tot := int64(0)
	for v := 0; v < l.n; v++ {
		tot += int64(l.vw[v*ncon])
	}
	filler := arena.Make[bool](ar, len(weights)/ncon)
	fill := int64(0)
	for c := range filler {
		if w := weights[c*ncon]; float64(w) <= 0.02*float64(tot) {
			filler[c] = true
			fill += w
		}
	}
	if fill == 0 || fill == tot || float64(fill) < 0.01*float64(tot) {
		return bisectCore(l, ncon, frac, tol, tries, seed, workers, nil, sc)
	}
	mark := arena.Make[int8](ar, l.n)
	for v := range mark {
		if filler[comp[v]] {
			mark[v] = 1
		}
	}
	ids := arena.Make[int32](ar, l.n)
	for i := range ids {
		ids[i] = int32(i)
	}
	subs, subIDs := split(l, ncon, mark, ids, ar)
	whole := newBisector(l, ncon, frac, tol, ar)
	coreSide := bisectCore(subs[0], ncon, frac, tol, tries, seed, workers, &whole.limit, sc)
	side := arena.Make[int8](ar, l.n)
	pw := [2][]int64{arena.Make[int64](ar, ncon), arena.Make[int64](ar, ncon)}
	for i, v := range subIDs[0] {
		side[v] = coreSide[i]
		for c := 0; c < ncon; c++ {
			pw[coreSide[i]][c] += int64(l.vw[int(v)*ncon+c])
		}
	}
	// Fillers, heaviest first, to the side with the most relative room.
	var fcs []int
	for c, f := range filler {
		if f {
			fcs = append(fcs, c)
		}
	}
	slices.SortStableFunc(fcs, func(a, b int) int { return cmp.Compare(weights[b*ncon], weights[a*ncon]) })
	compSide := arena.Make[int8](ar, len(filler))
	for _, c := range fcs {
		room := func(s int) float64 {
			r := math.Inf(1)
			for k := 0; k < ncon; k++ {
				if whole.target[s][k] > 0 {
					r = min(r, (whole.limit[s][k]-float64(pw[s][k]+weights[c*ncon+k]))/whole.target[s][k])
				}
			}
			return r
		}
		s := int8(0)
		if room(1) > room(0) {
			s = 1
		}
		compSide[c] = s
		for k := 0; k < ncon; k++ {
			pw[s][k] += weights[c*ncon+k]
		}
	}
	for v := range side {
		if filler[comp[v]] {
			side[v] = compSide[comp[v]]
		}
	}
	return side
}

// components labels the connected components of l and returns each
// vertex's component (in an array from ar) and the ncon weights of every
// component.
func components(l *level, ncon int, ar *arena.Arena) ([]int32, []int64) {
	comp := arena.Make[int32](ar, l.n)
	for i := range comp {
		comp[i] = -1
	}
	// Every vertex is pushed once, and a component's weights are at most
	// the vertices': both arrays from ar too (on a graph of many small
	// components, CiteSeer's 438, growing them from the Go heap faulted in
	// fresh pages on every partitioning from a cold heap).
	weights := arena.Make[int64](ar, ncon*l.n)
	stack := arena.Make[int32](ar, l.n)[:0]
	nc := int32(0)
	for s := 0; s < l.n; s++ {
		if comp[s] >= 0 {
			continue
		}
		w := weights[int(nc)*ncon : int(nc+1)*ncon]
		comp[s] = nc
		stack = append(stack[:0], int32(s))
		for len(stack) > 0 {
			v := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			for c := 0; c < ncon; c++ {
				w[c] += int64(l.vw[int(v)*ncon+c])
			}
			for j := l.xadj[v]; j < l.xadj[v+1]; j++ {
				if u := l.adj[j]; comp[u] < 0 {
					comp[u] = nc
					stack = append(stack, u)
				}
			}
		}
		nc++
	}
	return comp, weights[:int(nc)*ncon]
}

// bisectCore is bisect without the filler logic, trying tries random
// starts and keeping the best. limits, if non-nil, replaces the balance
// limits (those of a larger graph this one is the core of).
func bisectCore(l *level, ncon int, frac, tol float64, tries int, seed uint64, workers int, limits *[2][]float64, sc *scratch) []int8 {
	type result struct {
		side []int8
		cut  int64
		over float64
	}
	res := make([]result, tries)
	parallel := workers > 1 && l.n > 2000
	// What every try reads: the balance and the weighted degrees.
	base := newBisectorIn(l, ncon, frac, tol, sc)
	if limits != nil {
		base.limit = *limits
	}
	deg := weightedDegrees(l, sc.ar)
	run := func(t int) {
		ws := sc
		if parallel {
			ws = &scratch{ar: sc.ar}
		}
		b := base.fork(ws)
		r := rng.New(rng.Derive(seed, uint64(t)))
		qs := ws.pqs(l.n)
		moved, locked := ws.fmBufs(l.n)
		b.grow(r, qs[0], deg, locked)
		cut := b.fm(4, qs, moved, locked)
		res[t] = result{b.side, cut, b.overweight(0) + b.overweight(1)}
	}
	if !parallel {
		workers = 1
	}
	par.Run(workers, tries, func(_, t int) { run(t) })
	best := 0
	for t := 1; t < tries; t++ {
		if res[t].over < res[best].over || res[t].over == res[best].over && res[t].cut < res[best].cut {
			best = t
		}
	}
	return res[best].side
}

// split returns the subgraphs induced by the two sides, with the original
// ids of their vertices, in arrays from ar. Whether a neighbour lies on
// the vertex's side is counted and kept through arithmetic, not a branch
// (every entry is written, and the next one overwrites it unless it was
// on the side), as in acrossWeight: split's share of the CPU time
// partitioning email-Enron at K = 64 fell from 4.5 % to 2.0 % (wave's from
// 0.75 % to 0.49 %); same subgraphs.
func split(l *level, ncon int, side []int8, ids []int32, ar *arena.Arena) (subs [2]*level, subIDs [2][]int32) {
	local := arena.Make[int32](ar, l.n)
	var cnt [2]int
	var ent [2]int64
	for v, s := range side {
		local[v] = int32(cnt[s])
		cnt[s]++
		same := int64(0)
		for _, u := range l.adj[l.xadj[v]:l.xadj[v+1]] {
			same += int64(1 ^ side[u] ^ s) // sides are 0 and 1
		}
		ent[s] += same
	}
	var adj, ew [2][]int32
	for s := 0; s < 2; s++ {
		// One entry of slack: an edge across, last in the list, is
		// written past the side's entries.
		adj[s] = arena.Make[int32](ar, int(ent[s])+1)
		ew[s] = arena.Make[int32](ar, int(ent[s])+1)
		subs[s] = &level{n: cnt[s], xadj: arena.Make[int64](ar, cnt[s]+1), vw: arena.Make[int32](ar, cnt[s]*ncon)}
		subIDs[s] = arena.Make[int32](ar, cnt[s])
	}
	var pos [2]int64
	for v := 0; v < l.n; v++ {
		s := side[v]
		a, e, p := adj[s], ew[s], pos[s]
		lo, hi := l.xadj[v], l.xadj[v+1]
		if l.ew == nil {
			for _, u := range l.adj[lo:hi] {
				a[p], e[p] = local[u], 1
				p += int64(1 ^ side[u] ^ s)
			}
		} else {
			w := l.ew[lo:hi]
			for j, u := range l.adj[lo:hi] {
				a[p], e[p] = local[u], w[j]
				p += int64(1 ^ side[u] ^ s)
			}
		}
		pos[s] = p
		sl, lv := subs[s], int(local[v])
		sl.xadj[lv+1] = p
		copy(sl.vw[lv*ncon:(lv+1)*ncon], l.vw[v*ncon:(v+1)*ncon])
		subIDs[s][lv] = ids[v]
	}
	for s := 0; s < 2; s++ {
		subs[s].adj, subs[s].ew = adj[s][:ent[s]], ew[s][:ent[s]]
	}
	return
}

// recursiveBisection partitions l into k parts numbered from first,
// writing where[ids[v]] for every vertex v of l.
func recursiveBisection(l *level, ncon, k, first int, ids []int32, where []int32, tol float64, tries int, seed uint64, workers int, sc *scratch) {
	if k == 1 || l.n <= 1 {
		for _, id := range ids {
			where[id] = int32(first)
		}
		return
	}
	if l.n <= k {
		// Fewer vertices than parts: one vertex per part.
		for v, id := range ids {
			where[id] = int32(first + v)
		}
		return
	}
	k0 := k / 2
	frac := float64(k0) / float64(k)
	var side []int8
	if sc.own {
		// Only the sides outlive the bisection: its coarse levels and
		// scratch (a fresh one, so that sc keeps no buffer given back)
		// are given back. A 1M-node graph's four initial partitions at
		// K = 4 held 2.3 GB of them, 9x their level each.
		side = arena.Make[int8](sc.ar, l.n)
		m := sc.ar.Mark()
		copy(side, mlBisect(l, ncon, frac, tol, tries, seed, workers, &scratch{ar: sc.ar}))
		sc.ar.Release(m)
	} else {
		side = mlBisect(l, ncon, frac, tol, tries, seed, workers, sc)
	}
	if k == 2 {
		// Each side is one part: no subgraphs to build. (Building them
		// cost email-Enron at K = 4, whose initial partitions split
		// dense graphs, about 0.8 ms of a 13-15 ms initial phase on one
		// core; same partitions.)
		for v, id := range ids {
			where[id] = int32(first) + int32(side[v])
		}
		return
	}
	m := sc.ar.Mark() // the subgraphs, given back after them where sc.own
	subs, subIDs := split(l, ncon, side, ids, sc.ar)
	recursiveBisection(subs[0], ncon, k0, first, subIDs[0], where, tol, tries, rng.Derive(seed, 1000), workers, sc)
	recursiveBisection(subs[1], ncon, k-k0, first+k0, subIDs[1], where, tol, tries, rng.Derive(seed, 1001), workers, sc)
	if sc.own {
		sc.ar.Release(m)
	}
}

// bisectionTolerance is the per-bisection imbalance that compounds to imb
// over log2(k) levels of recursion.
func bisectionTolerance(imb float64, k int) float64 {
	depth := math.Ceil(math.Log2(float64(k)))
	if depth < 1 {
		return imb
	}
	return math.Pow(imb, 1/depth)
}

// mlBisect's memory budget for its coarse levels: mlBisectBudgetRatio
// times its input's, and at least mlBisectBudget (the shared graphs'
// bisections keep every level). A variable so that tests can bring the
// budget within a small graph's reach.
var mlBisectBudget int64 = 256 << 20

const mlBisectBudgetRatio = 2

// mlBisect is a multilevel bisection: it coarsens l further by heavy-edge
// matching to about 100 vertices, bisects the coarsest graph (bisect), and
// projects the sides back level by level with FM refinement at each.
func mlBisect(l *level, ncon int, frac, tol float64, tries int, seed uint64, workers int, sc *scratch) []int8 {
	if l.n <= 2*mlBisectCoarsenTo {
		return bisect(l, ncon, frac, tol, tries, seed, workers, sc)
	}
	lc := *l // contract sets cmap: work on a copy, l may be shared
	l = &lc
	cs := bisectCoarsening(l, ncon, seed, workers, sc)
	levels, _, _ := cs.coarsen(context.Background(), l, nil) // no error without a deadline
	side := bisect(levels[len(levels)-1], ncon, frac, tol, tries, seed, workers, sc)
	for i := len(levels) - 2; i >= 0; i-- {
		fine := levels[i]
		var b *bisector
		var proj []int8
		if fine.xadj != nil {
			b = newBisectorIn(fine, ncon, frac, tol, sc)
			proj = b.side
		} else {
			proj = arena.Make[int8](sc.ar, fine.n) // dropped for memory: projected only
		}
		for v := range proj {
			proj[v] = side[fine.cmap[v]]
		}
		fine.cmap, side = nil, proj
		if b != nil {
			moved, locked := sc.fmBufs(fine.n)
			b.fm(4, sc.pqs(fine.n), moved, locked)
		}
	}
	return side
}

// mlBisectCoarsenTo is about how many vertices mlBisect coarsens to.
const mlBisectCoarsenTo = 100

// bisectCoarsening returns mlBisect's coarsening of l: heavy-edge matching
// to about mlBisectCoarsenTo vertices, every level kept up to a memory
// budget (the graphs are usually small), the phases not reported. Levels
// past the budget are projected through, not refined, as in the k-way
// pass: a dense level bisected below dense coarse levels (initialAt; the
// 5M-node synthetic graph's 176k-vertex level of 40M adjacency entries)
// coarsens with its adjacency shrinking by a few percent a level, and
// keeping them all raised its peak RSS at K = 4 from 2.6 to 5.0 GiB.
func bisectCoarsening(l *level, ncon int, seed uint64, workers int, sc *scratch) coarsening {
	maxvw := arena.Make[int32](sc.ar, ncon)
	for c := range maxvw {
		t := int64(0)
		for v := 0; v < l.n; v++ {
			t += int64(l.vw[v*ncon+c])
		}
		maxvw[c] = pairBound(t, mlBisectCoarsenTo)
	}
	budget := max(mlBisectBudget, mlBisectBudgetRatio*l.bytes())
	return coarsening{ncon: ncon, maxvw: maxvw, coarsenTo: mlBisectCoarsenTo, budget: budget, workers: workers,
		r: rng.New(rng.Derive(seed, 99)), sc: sc, ph: &Phases{}, shrink: coarsenShrink, room: memRoom}
}

//go:build !noasm

package partition

//go:noescape
func heaviest1(adj, ew *int32, n int, vw, match *int32, lo, hi, vwv, maxvw int32) int32

// heaviestFast is matcher.heaviest for one balance constraint and no
// partition to keep (m.ncon == 1, m.part == nil, m.l.ew set), in
// assembly: the Go loop kept the best so far, the outside test and four
// slice headers on the stack. Partitioning wave at K = 4 matched in 0.94
// of the time (23.3 against 24.8 ms, medians of 30 paired runs, AMD EPYC
// Zen 1), with the same result. The level's lists must hold valid vertex
// ids (a validated graph).
func (m *matcher) heaviestFast(v, lo, hi int32) int32 {
	l := m.l
	j0, j1 := l.xadj[v], l.xadj[v+1]
	if j0 == j1 {
		return -1
	}
	adj, ew := l.adj[j0:j1], l.ew[j0:j1]
	return heaviest1(&adj[0], &ew[0], len(adj), &l.vw[0], &m.match[0], lo, hi, l.vw[v], m.maxvw[0])
}

// hasHeaviestFast tells whether heaviestFast is the assembly loop.
const hasHeaviestFast = true

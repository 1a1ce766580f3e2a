package partition

import (
	"context"
	"slices"

	"github.com/graphmill/graphmill/internal/par"
	"github.com/graphmill/graphmill/internal/rng"
)

var bgctx = context.Background()

// level is one graph of the multilevel hierarchy. Vertex weights are
// stored ncon per vertex (vw[v*ncon+c]); edge weights are nil for unit
// weights (the input level only).
type level struct {
	n    int
	xadj []int64
	adj  []int32
	ew   []int32
	vw   []int32
	// cmap maps each vertex to its vertex in the next coarser level (set
	// when the coarser level is built).
	cmap []int32
	// keep says the level's graph stays in memory for refinement.
	keep bool
}

// bytes returns the memory of the level's graph arrays.
func (l *level) bytes() int64 {
	return int64(len(l.xadj))*8 + int64(len(l.adj)+len(l.ew)+len(l.vw))*4
}

// ewAt returns the weight of adjacency entry j.
func (l *level) ewAt(j int64) int32 {
	if l.ew == nil {
		return 1
	}
	return l.ew[j]
}

// randomPerm returns a uniformly random permutation of [0, n).
func randomPerm(r *rng.Rand, n int) []int32 {
	p := make([]int32, n)
	for i := range p {
		p[i] = int32(i)
	}
	for i := n - 1; i > 0; i-- {
		j := r.IntN(i + 1)
		p[i], p[j] = p[j], p[i]
	}
	return p
}

// degreeOrder returns the vertices in increasing order of degree (capped
// at 4x the average, as METIS does), random within a degree.
func (l *level) degreeOrder(r *rng.Rand) []int32 {
	n := l.n
	avg := 1
	if n > 0 {
		avg = max(1, int(4*int64(len(l.adj))/int64(n)))
	}
	counts := make([]int32, avg+2)
	deg := func(v int32) int { return min(int(l.xadj[v+1]-l.xadj[v]), avg) }
	for v := 0; v < n; v++ {
		counts[deg(int32(v))+1]++
	}
	for i := 1; i < len(counts); i++ {
		counts[i] += counts[i-1]
	}
	perm := randomPerm(r, n)
	out := make([]int32, n)
	for _, v := range perm {
		d := deg(v)
		out[counts[d]] = v
		counts[d]++
	}
	return out
}

// match computes a heavy-edge matching (unit-weight edges: the first
// unmatched neighbour) visiting vertices by increasing degree, then pairs
// leftover vertices that share a neighbour (two-hop matching, which keeps
// coarsening power-law graphs, whose many low-degree vertices hang off the
// same hubs) and leftover isolated vertices. No pair may exceed maxvw in
// any constraint. It returns match (match[v] is v's partner, or v) and the
// number of coarse vertices.
func (l *level) match(r *rng.Rand, ncon int, maxvw []int32) ([]int32, int) {
	n := l.n
	match := make([]int32, n)
	for i := range match {
		match[i] = -1
	}
	fits := func(u, v int32) bool {
		for c := 0; c < ncon; c++ {
			if l.vw[int(u)*ncon+c]+l.vw[int(v)*ncon+c] > maxvw[c] {
				return false
			}
		}
		return true
	}
	order := l.degreeOrder(r)
	unmatched := 0
	cn := 0
	for _, v := range order {
		if match[v] >= 0 {
			continue
		}
		best, bestW := int32(-1), 0.0
		for j := l.xadj[v]; j < l.xadj[v+1]; j++ {
			u := l.adj[j]
			if match[u] >= 0 {
				continue
			}
			var w float64
			if l.ew == nil {
				w = 1
			} else {
				// Rating w^2/weight(u) prefers light partners, which keeps
				// coarse vertex weights even and improves the cut.
				e := float64(l.ew[j])
				w = e * e / float64(max(1, l.vw[int(u)*ncon]))
			}
			if w > bestW && fits(u, v) {
				best, bestW = u, w
				if l.ew == nil {
					break
				}
			}
		}
		if best >= 0 {
			match[v], match[best] = best, v
			cn++
		} else {
			unmatched++
		}
	}
	if unmatched > 0 {
		// Two-hop: pair unmatched vertices through their heaviest
		// neighbour; isolated vertices pair with each other.
		pending := make([]int32, n) // pending[h]+1: an unmatched vertex waiting at h
		iso := int32(-1)
		for _, v := range order {
			if match[v] >= 0 {
				continue
			}
			if l.xadj[v] == l.xadj[v+1] {
				if iso >= 0 && fits(iso, v) {
					match[v], match[iso] = iso, v
					iso = -1
					cn++
				} else {
					iso = v
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
			if p := pending[h] - 1; p >= 0 && match[p] < 0 && fits(p, v) {
				match[v], match[p] = p, v
				pending[h] = 0
				cn++
			} else {
				pending[h] = v + 1
			}
		}
	}
	for v := range match {
		if match[v] < 0 {
			match[v] = int32(v)
			cn++
		}
	}
	return match, cn
}

// contract builds the coarse graph of a matching: coarse vertices are
// numbered in order of their smallest fine vertex; parallel edges merge
// with summed weights and edges inside a coarse vertex vanish. It runs on
// workers goroutines and sets l.cmap.
func (l *level) contract(match []int32, cn, ncon, workers int) *level {
	n := l.n
	cmap := make([]int32, n)
	rep := make([]int32, cn)
	c := int32(0)
	for v := 0; v < n; v++ {
		if u := int(match[v]); u >= v {
			cmap[v] = c
			cmap[u] = c
			rep[c] = int32(v)
			c++
		}
	}
	l.cmap = cmap
	cl := &level{n: cn, xadj: make([]int64, cn+1), vw: make([]int32, cn*ncon)}
	// Chunks of coarse vertices; each writes at an upper bound of its
	// size, then the chunks are compacted in order.
	nchunks := max(1, min(cn/4096, workers*8))
	if workers <= 1 {
		nchunks = 1
	}
	bounds := par.Ranges(cn, nchunks)
	ub := make([]int64, nchunks+1)
	par.For(workers, nchunks, func(_, lo, hi int) {
		for k := lo; k < hi; k++ {
			s := int64(0)
			for c := bounds[k]; c < bounds[k+1]; c++ {
				v := rep[c]
				u := match[v]
				s += l.xadj[v+1] - l.xadj[v]
				if u != v {
					s += l.xadj[u+1] - l.xadj[u]
				}
			}
			ub[k+1] = s
		}
	})
	for k := 0; k < nchunks; k++ {
		ub[k+1] += ub[k]
	}
	cadj := make([]int32, ub[nchunks])
	cew := make([]int32, ub[nchunks])
	used := make([]int64, nchunks)
	tables := make([][]int32, workers)
	_ = par.Tasks(bgctx, workers, nchunks, func(w, k int) {
		ht := tables[w]
		if ht == nil {
			ht = make([]int32, cn)
			for i := range ht {
				ht[i] = -1
			}
			tables[w] = ht
		}
		pos := ub[k]
		for c := bounds[k]; c < bounds[k+1]; c++ {
			start := pos
			v := rep[c]
			u := match[v]
			xs, nx := [2]int32{v, u}, 2
			if u == v {
				nx = 1
			}
			if d := l.xadj[v+1] - l.xadj[v] + l.xadj[u+1] - l.xadj[u]; d <= 24 {
				// Few edges: merge by scanning the short output list,
				// which stays in cache, instead of the large table.
				for _, x := range xs[:nx] {
					for j := l.xadj[x]; j < l.xadj[x+1]; j++ {
						cu := cmap[l.adj[j]]
						if cu == int32(c) {
							continue
						}
						wt := int32(1)
						if l.ew != nil {
							wt = l.ew[j]
						}
						i := start
						for ; i < pos; i++ {
							if cadj[i] == cu {
								cew[i] += wt
								break
							}
						}
						if i == pos {
							cadj[pos] = cu
							cew[pos] = wt
							pos++
						}
					}
				}
				goto done
			}
			for _, x := range xs[:nx] {
				for j := l.xadj[x]; j < l.xadj[x+1]; j++ {
					cu := cmap[l.adj[j]]
					if cu == int32(c) {
						continue
					}
					wt := int32(1)
					if l.ew != nil {
						wt = l.ew[j]
					}
					if i := ht[cu]; i >= 0 {
						cew[start+int64(i)] += wt
					} else {
						ht[cu] = int32(pos - start)
						cadj[pos] = cu
						cew[pos] = wt
						pos++
					}
				}
			}
			for j := start; j < pos; j++ {
				ht[cadj[j]] = -1
			}
		done:
			cl.xadj[c+1] = pos - start
			for k := 0; k < ncon; k++ {
				wv := l.vw[int(v)*ncon+k]
				if u != v {
					wv += l.vw[int(u)*ncon+k]
				}
				cl.vw[c*ncon+k] = wv
			}
		}
		used[k] = pos - ub[k]
	})
	// Compact the chunks and turn degrees into offsets.
	dst := int64(0)
	for k := 0; k < nchunks; k++ {
		if dst != ub[k] {
			copy(cadj[dst:dst+used[k]], cadj[ub[k]:ub[k]+used[k]])
			copy(cew[dst:dst+used[k]], cew[ub[k]:ub[k]+used[k]])
		}
		dst += used[k]
	}
	for c := 0; c < cn; c++ {
		cl.xadj[c+1] += cl.xadj[c]
	}
	if dst*5 < int64(cap(cadj))*4 {
		cl.adj = slices.Clone(cadj[:dst])
		cl.ew = slices.Clone(cew[:dst])
	} else {
		cl.adj = cadj[:dst]
		cl.ew = cew[:dst]
	}
	return cl
}

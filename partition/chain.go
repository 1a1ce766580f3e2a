package partition

import "math"

// Short chains of moves from a move of gain 0 (chainMoves).
//
// Once no single vertex gains by moving, a few neighbours may still gain
// by moving one after another: the first move gains nothing, and the
// edges it takes along make the next ones gain. Two neighbours of one
// part each with as many edges to a third part as inside their own gain
// by moving there together (the edge between them stays inside); or, one
// leaving, the other gains by moving elsewhere (the edge no longer holds
// it); a path of three, each move of gain 0 or -1 alone, gains once all
// three have moved. The pair searches (pairFM) find such chains only
// within the two parts of a pair, from a vertex of one moving to the
// other, and greedy rounds none. On the synthetic graphs of planted
// communities with random edges between them (most boundary vertices of
// degree 2-5), such groups of 2-4 vertices, each worth an edge, were the
// whole of the gap to gpmetis's cut once the searches had converged: on
// the 5M-node graph at K = 16 (seed 1) the cut was 1,030 edges over
// gpmetis's, and is 73 under with the chains.

// chainDepth is the most moves a chain makes. On a 200k-node synthetic
// graph at K = 4 and 16 (seeds 1-5), chains of 2 closed the gap to
// gpmetis (mean cut 190,167 at K = 16 against its 190,170); of 3 and 4
// gained 6 edges a seed more, of 6 none.
const chainDepth = 4

// chainShare bounds the chains' work on a level: chainShare times its
// adjacency entries scanned. On the shared graphs they scan 0.05-3.7 % of
// it, on the 5M-node synthetic graph 0.5 %; the bound is for graphs with
// many moves of gain 0 among vertices of many edges.
const chainShare = 1

// chainMoves looks for a chain from every vertex (at most hub edges) with
// a move of gain 0 (or more) that fits, once for each such part: it makes
// the move, then again and again the best move (of gain 0 or more, with
// room) of a vertex next to those moved (unmoved, with at most hub edges),
// up to chainDepth moves; and keeps the chain as soon as its moves gained
// in all, undoing them otherwise. One pass over the vertices in order, on
// one core: under a millisecond on the shared graphs, under a second on 5M
// nodes; it stops early once the chains' neighbours' lists it scanned
// reach budget entries. It returns what the chains gained.
func (rf *refiner) chainMoves(hub, budget int64) int64 {
	l := rf.l
	type step struct {
		v, from int32
		back    int64 // v's edge weight to from after its move
	}
	var chain []step
	inChain := func(u int32) bool {
		for _, s := range chain {
			if s.v == u {
				return true
			}
		}
		return false
	}
	cy := make([]int64, rf.k)
	var ty []int32
	gain := int64(0)
	for x := int32(0); x < int32(l.n) && budget > 0; x++ {
		if rf.ed[x] == 0 || rf.ed[x] < rf.id[x] || l.xadj[x+1]-l.xadj[x] > hub {
			continue // every move of x loses, or x is a hub
		}
		// rf.conn holds x's edge weights for the whole loop: a chain's
		// moves and their undoing leave them as they were, and the chain
		// itself scans into cy.
		rf.connect(x)
		for _, q := range rf.touched {
			if rf.conn[q] < int64(rf.id[x]) || !rf.fits(x, q) {
				continue
			}
			chain = append(chain[:0], step{x, rf.where[x], int64(rf.id[x])})
			sum := rf.conn[q] - int64(rf.id[x])
			rf.move(x, q, rf.conn[q])
			for len(chain) < chainDepth && sum <= 0 {
				by, bt, bg, bc := int32(-1), int32(-1), int64(math.MinInt64), int64(0)
				for i := range chain {
					v := chain[i].v
					for j := l.xadj[v]; j < l.xadj[v+1]; j++ {
						y := l.adj[j]
						// ed < id: every move of y loses.
						if rf.ed[y] == 0 || rf.ed[y] < rf.id[y] || l.xadj[y+1]-l.xadj[y] > hub || inChain(y) {
							continue
						}
						ty = rf.connectInto(y, cy, ty[:0])
						budget -= l.xadj[y+1] - l.xadj[y]
						for _, t := range ty {
							if g := cy[t] - int64(rf.id[y]); g > bg && rf.fits(y, t) {
								by, bt, bg, bc = y, t, g, cy[t]
							}
							cy[t] = 0
						}
					}
				}
				if by < 0 || bg < 0 {
					break
				}
				chain = append(chain, step{by, rf.where[by], int64(rf.id[by])})
				rf.move(by, bt, bc)
				sum += bg
			}
			if sum > 0 {
				gain += sum
				break
			}
			for i := len(chain) - 1; i >= 0; i-- {
				rf.move(chain[i].v, chain[i].from, chain[i].back)
			}
		}
		rf.clearConn()
	}
	return gain
}

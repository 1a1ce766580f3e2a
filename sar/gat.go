package sar

import (
	"context"
	"math"
	"slices"

	"github.com/graphmill/graphmill/dist"
	"github.com/graphmill/graphmill/internal/par"
	"github.com/graphmill/graphmill/tensor"
	"github.com/graphmill/graphmill/tensor/autograd"
)

// GAT's distributed edge softmax. A destination's in-edges come from
// several ranks; each rank owning sources sends their attention terms el
// first, so every destination's scores, their maximum and the softmax's
// sum are computed where the destination lives (SAR's edge_softmax), then
// the rows h arrive rank by rank to be weighted and summed. The backward
// pass needs h again for the coefficients' gradients: sar mode fetches
// the rows again, sa and one-shot kept them. Gradients of h and el go
// back to their owners in one exchange.

const gatSlope = 0.2 // nn.GATConv's LeakyReLU slope

// edgeKeys returns, for every self-looped in-edge of the inner nodes (per
// owner), its index in the whole graph's self-looped CSR (nn's
// Block.WithSelfLoops of the full graph: nodes in original order, each
// row its self-loop then its in-neighbours by increasing original id):
// the key of its attention dropout mask, so that the ranks draw the
// single process's masks. The row offsets need the in-degrees of all
// nodes with smaller ids; they are summed over the ranks in chunks, so no
// rank holds a table of all nodes.
func (s *Shard) edgeKeys(ctx context.Context, comm dist.Comm) ([][]int64, error) {
	if s.keys != nil {
		return s.keys, nil
	}
	e := s.edges(true)
	ni := s.NumInner()
	// Row lengths of the self-looped rows (self-loop plus non-self edges).
	rowLen := make([]int64, ni)
	for _, o := range e {
		for d := 0; d < ni; d++ {
			rowLen[d] += o.indptr[d+1] - o.indptr[d]
		}
	}
	// Offsets: the sum of row lengths over nodes with a smaller original
	// id, chunk by chunk of the id space.
	order := make([]int32, ni) // inner rows by original id
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int { return int(s.GlobalIDs[a]) - int(s.GlobalIDs[b]) })
	offset := make([]int64, ni)
	const chunk = 1 << 20
	var base int64
	j := 0
	for lo := 0; lo < s.NumNodes; lo += chunk {
		hi := min(lo+chunk, s.NumNodes)
		buf := make([]int64, hi-lo)
		for k := j; k < ni && int(s.GlobalIDs[order[k]]) < hi; k++ {
			buf[int(s.GlobalIDs[order[k]])-lo] = rowLen[order[k]]
		}
		if s.Size > 1 {
			if err := comm.AllReduce(ctx, buf, dist.Sum); err != nil {
				return nil, err
			}
		}
		var run int64
		for v := range buf {
			if j < ni && int(s.GlobalIDs[order[j]]) == lo+v {
				offset[order[j]] = base + run
				j++
			}
			run += buf[v]
		}
		base += run
	}
	// Within a row: the self-loop first, then by source id.
	keys := make([][]int64, len(e))
	for q, o := range e {
		keys[q] = make([]int64, len(o.src))
	}
	type ref struct {
		g    int32
		q    int
		edge int64
	}
	par.For(workers(ni), ni, func(_, lo, hi int) {
		var row []ref
		for d := lo; d < hi; d++ {
			row = row[:0]
			for q, o := range e {
				for i := o.indptr[d]; i < o.indptr[d+1]; i++ {
					if q == s.Rank && o.src[i] == int32(d) {
						keys[q][i] = offset[d] // the self-loop
						continue
					}
					row = append(row, ref{o.srcGlobal[o.src[i]], q, i})
				}
			}
			slices.SortStableFunc(row, func(a, b ref) int { return int(a.g) - int(b.g) })
			for k, r := range row {
				keys[r.q][r.edge] = offset[d] + 1 + int64(k)
			}
		}
	})
	s.keys = keys
	return keys, nil
}

// gatAggregate is tensor.GATAggregateKeep over the distributed graph.
func (x *exchanger) gatAggregate(tp *autograd.Tape, h, el, er *autograd.Var, heads int, p float64, seed uint64, t *topo) (*autograd.Var, error) {
	s, me, n := x.s, x.s.Rank, x.s.Size
	csr := t.csr
	ni := t.outRows()
	cols := h.Value.Cols
	f := cols / heads
	// Raw scores z = el[src] + er[dst] per edge and head.
	z := make([][]float32, n)
	scores := func(q int, elq tensor.Matrix) {
		c := csr[q]
		zq := make([]float32, len(c.Indices)*heads)
		par.For(workers(ni), ni, func(_, lo, hi int) {
			for d := lo; d < hi; d++ {
				erd := er.Value.Row(d)
				for i := c.Indptr[d]; i < c.Indptr[d+1]; i++ {
					els := elq.Row(int(c.Indices[i]))
					for k := 0; k < heads; k++ {
						zq[int(i)*heads+k] = els[k] + erd[k]
					}
				}
			}
		})
		z[q] = zq
	}
	scores(me, el.Value)
	if err := x.fetchRows(el.Value, t, scores); err != nil {
		return nil, err
	}
	// Softmax over every destination's edges from all owners.
	alpha := make([][]float32, n)
	for q := range alpha {
		alpha[q] = make([]float32, len(z[q]))
	}
	par.For(workers(ni), ni, func(_, lo, hi int) {
		for d := lo; d < hi; d++ {
			for k := 0; k < heads; k++ {
				m := float32(math.Inf(-1))
				for q, c := range csr {
					for i := c.Indptr[d]; i < c.Indptr[d+1]; i++ {
						m = max(m, leaky(z[q][int(i)*heads+k]))
					}
				}
				var sum float64
				for q, c := range csr {
					for i := c.Indptr[d]; i < c.Indptr[d+1]; i++ {
						v := math.Exp(float64(leaky(z[q][int(i)*heads+k]) - m))
						alpha[q][int(i)*heads+k] = float32(v)
						sum += v
					}
				}
				inv := float32(1 / sum)
				for q, c := range csr {
					for i := c.Indptr[d]; i < c.Indptr[d+1]; i++ {
						alpha[q][int(i)*heads+k] *= inv
					}
				}
			}
		}
	})
	var keep [][]float32
	if p > 0 {
		keys, err := s.edgeKeys(x.ctx, x.comm)
		if err != nil {
			return nil, err
		}
		keep = make([][]float32, n)
		for q := range keep {
			kq := keys[q]
			if t.base != nil {
				kq = make([]int64, len(t.base[q]))
				for i, b := range t.base[q] {
					kq[i] = keys[q][b]
				}
			}
			keep[q] = make([]float32, len(alpha[q]))
			dropFactors(keep[q], kq, heads, p, seed)
		}
	}
	coef := func(q int, i int) float32 {
		if keep != nil {
			return alpha[q][i] * keep[q][i]
		}
		return alpha[q][i]
	}
	out := tensor.New(ni, cols)
	weigh := func(q int, rows tensor.Matrix) {
		c := csr[q]
		par.For(workers(ni), ni, func(_, lo, hi int) {
			for d := lo; d < hi; d++ {
				o := out.Row(d)
				for i := c.Indptr[d]; i < c.Indptr[d+1]; i++ {
					r := rows.Row(int(c.Indices[i]))
					for k := 0; k < heads; k++ {
						tensor.Axpy(coef(q, int(i)*heads+k), r[k*f:(k+1)*f], o[k*f:(k+1)*f])
					}
				}
			}
		})
	}
	weigh(me, h.Value)
	var kept []tensor.Matrix // sa, one-shot: the fetched rows, for backward
	if x.mode != SAR && !tp.NoGrad() {
		kept = make([]tensor.Matrix, n)
	}
	if err := x.fetchRows(h.Value, t, func(q int, rows tensor.Matrix) {
		weigh(q, rows)
		if kept != nil {
			kept[q] = rows
			x.hold(4 * int64(len(rows.Data)))
		}
	}); err != nil {
		return nil, err
	}
	return tp.Custom("SAR-GAT", out, func(gy tensor.Matrix, grads []tensor.Matrix) error {
		if kept != nil {
			defer func() {
				for q := range kept {
					x.hold(-4 * int64(len(kept[q].Data)))
				}
			}()
		}
		// dα'_e = gy[d,k]·h[src,k] (times keep): per owner, with its rows.
		dz := make([][]float32, n)
		grad := func(q int, rows tensor.Matrix) {
			c := csr[q]
			dq := make([]float32, len(alpha[q]))
			par.For(workers(ni), ni, func(_, lo, hi int) {
				for d := lo; d < hi; d++ {
					g := gy.Row(d)
					for i := c.Indptr[d]; i < c.Indptr[d+1]; i++ {
						r := rows.Row(int(c.Indices[i]))
						for k := 0; k < heads; k++ {
							j := int(i)*heads + k
							da := tensor.Dot(g[k*f:(k+1)*f], r[k*f:(k+1)*f])
							if keep != nil {
								da *= keep[q][j]
							}
							dq[j] = da
						}
					}
				}
			})
			dz[q] = dq
		}
		grad(me, h.Value)
		if kept != nil {
			for q := range kept {
				if q != me && t.fetched(q) > 0 {
					grad(q, kept[q])
				}
			}
		} else if err := x.fetchRows(h.Value, t, grad); err != nil {
			return err
		}
		for q := range dz {
			if dz[q] == nil {
				dz[q] = []float32{}
			}
		}
		// Softmax and LeakyReLU backward per destination; der.
		der := grads[2]
		par.For(workers(ni), ni, func(_, lo, hi int) {
			for d := lo; d < hi; d++ {
				for k := 0; k < heads; k++ {
					var sum float32
					for q, c := range csr {
						for i := c.Indptr[d]; i < c.Indptr[d+1]; i++ {
							j := int(i)*heads + k
							sum += alpha[q][j] * dz[q][j]
						}
					}
					var acc float32
					for q, c := range csr {
						for i := c.Indptr[d]; i < c.Indptr[d+1]; i++ {
							j := int(i)*heads + k
							dz[q][j] = alpha[q][j] * (dz[q][j] - sum) * leakyDeriv(z[q][j])
							acc += dz[q][j]
						}
					}
					if der.Data != nil {
						der.Data[d*heads+k] += acc
					}
				}
			}
		})
		// Per source: dh[s,k] += Σ coef·gy[d,k]; del[s,k] += Σ dz.
		srcGrads := func(q int, dh, del tensor.Matrix, dhOff int) {
			c := csr[q]
			t := c.T()
			par.For(workers(c.NumSrc), c.NumSrc, func(_, lo, hi int) {
				for src := lo; src < hi; src++ {
					o := dh.Row(src)[dhOff:]
					for r := t.Indptr[src]; r < t.Indptr[src+1]; r++ {
						d, e := int(t.Dst[r]), int(t.Edge[r])
						g := gy.Row(d)
						for k := 0; k < heads; k++ {
							j := e*heads + k
							if dh.Data != nil {
								tensor.Axpy(coef(q, j), g[k*f:(k+1)*f], o[k*f:(k+1)*f])
							}
							if del.Data != nil {
								del.Data[src*del.Cols+k] += dz[q][j]
							}
						}
					}
				}
			})
		}
		dh, del := grads[0], grads[1]
		srcGrads(me, dh, del, 0)
		// Other owners' rows: [dh | del] per fetched row, sent back.
		return x.returnGrads(n, cols+heads, t, func(q int) tensor.Matrix {
			g := tensor.New(t.fetched(q), cols+heads)
			// del goes in the last heads columns: a view with the row
			// stride of g is not a Matrix, so collect it apart.
			dl := tensor.New(t.fetched(q), heads)
			srcGrads(q, g, dl, 0)
			for i := 0; i < g.Rows; i++ {
				copy(g.Row(i)[cols:], dl.Row(i))
			}
			return g
		}, func(rows []int32, g tensor.Matrix) {
			for i, r := range rows {
				if dh.Data != nil {
					tensor.Axpy(1, g.Row(i)[:cols], dh.Row(int(r)))
				}
				if del.Data != nil {
					tensor.Axpy(1, g.Row(i)[cols:], del.Row(int(r)))
				}
			}
		})
	}, h, el, er), nil
}

func leaky(z float32) float32 {
	if z > 0 {
		return z
	}
	return gatSlope * z
}

func leakyDeriv(z float32) float32 {
	if z > 0 {
		return 1
	}
	return gatSlope
}

package tensor

import (
	"fmt"
	"math"
)

// CSR is a graph or sampled block compressed over destinations: the in-edges
// of destination d are the positions e in [Indptr[d], Indptr[d+1]), edge e
// comes from source row Indices[e] (a row of the source feature matrix, in
// [0, NumSrc)), and has weight Weights[e] (nil means no weights). For a full
// graph, sources and destinations are the same nodes; for a sampled block
// the destinations are usually the first rows of the sources.
//
// The transpose used by backward passes is built on first use by T and
// cached; do not modify the slices afterwards, and call T once before
// sharing a CSR between goroutines.
type CSR struct {
	Indptr  []int64   // len NumDst()+1, non-decreasing, Indptr[0] == 0
	Indices []int32   // source row of each edge
	Weights []float32 // optional per-edge weights, len NumEdges() or nil
	NumSrc  int       // number of source rows
	// TScratch, when set, is where T builds the transpose, reusing (and
	// growing) its arrays instead of allocating: a caller that makes a new
	// CSR every step passes the same scratch each time (the transpose of
	// the CSR it last served is overwritten).
	TScratch *Transposed

	t *Transposed
	// same, when set, is a CSR with the same Indptr and Indices (made by
	// DropoutNonZeros): T shares its transpose's arrays, with weights of
	// its own (in tw's storage when set: DropoutNonZerosInto), instead
	// of transposing again.
	same *CSR
	tw   []float32
}

// Transposed is a CSR compressed over sources: the out-edges of source s are
// positions q in [Indptr[s], Indptr[s+1]); Dst[q] is the destination and
// Edge[q] the index of the edge in the original CSR.
type Transposed struct {
	Indptr []int64
	Dst    []int32
	Edge   []int64

	// w holds every edge's weight in this order for the reduction wMode
	// (built by weights when wValid is false; T clears it).
	w      []float32
	wMode  Reduce
	wValid bool
}

// NumDst is the number of destination rows.
func (g *CSR) NumDst() int { return max(len(g.Indptr)-1, 0) }

// NumEdges is the number of edges.
func (g *CSR) NumEdges() int { return len(g.Indices) }

// Validate checks the structure: Indptr starts at 0, never decreases and
// ends at len(Indices); every index is in [0, NumSrc); Weights is nil or
// one per edge. It returns an error wrapping ErrGraph saying what is wrong.
func (g *CSR) Validate() error {
	if len(g.Indptr) == 0 {
		return fmt.Errorf("%w: empty Indptr (need NumDst+1 entries)", ErrGraph)
	}
	if g.Indptr[0] != 0 {
		return fmt.Errorf("%w: Indptr[0] = %d, want 0", ErrGraph, g.Indptr[0])
	}
	for d := 1; d < len(g.Indptr); d++ {
		if g.Indptr[d] < g.Indptr[d-1] {
			return fmt.Errorf("%w: Indptr decreases at destination %d", ErrGraph, d-1)
		}
	}
	if last := g.Indptr[len(g.Indptr)-1]; last != int64(len(g.Indices)) {
		return fmt.Errorf("%w: Indptr ends at %d but there are %d indices", ErrGraph, last, len(g.Indices))
	}
	for e, s := range g.Indices {
		if s < 0 || int(s) >= g.NumSrc {
			return fmt.Errorf("%w: edge %d has source %d, outside [0, %d)", ErrGraph, e, s, g.NumSrc)
		}
	}
	if g.Weights != nil && len(g.Weights) != len(g.Indices) {
		return fmt.Errorf("%w: %d weights for %d edges", ErrGraph, len(g.Weights), len(g.Indices))
	}
	return nil
}

// T returns the transpose (built on first call, then cached; in TScratch
// when set; shared with the CSR whose structure g shares, for a
// DropoutNonZeros output).
func (g *CSR) T() *Transposed {
	if g.t != nil {
		return g.t
	}
	if g.same != nil {
		st := g.same.T()
		g.t = &Transposed{Indptr: st.Indptr, Dst: st.Dst, Edge: st.Edge, w: g.tw[:0]}
		return g.t
	}
	t := g.TScratch
	if t == nil {
		t = &Transposed{}
	}
	n, ne := g.NumSrc, len(g.Indices)
	t.Indptr = resize(t.Indptr, n+1)
	t.Dst = resize(t.Dst, ne)
	t.Edge = resize(t.Edge, ne)
	ip := t.Indptr
	clear(ip)
	for _, s := range g.Indices {
		ip[s+1]++
	}
	for s := 0; s < n; s++ {
		ip[s+1] += ip[s]
	}
	// Fill with ip[s] as source s's cursor; afterwards ip[s] holds the
	// start of s+1, so shift back by one.
	for d := 0; d < g.NumDst(); d++ {
		for e := g.Indptr[d]; e < g.Indptr[d+1]; e++ {
			s := g.Indices[e]
			q := ip[s]
			ip[s]++
			t.Dst[q] = int32(d)
			t.Edge[q] = e
		}
	}
	copy(ip[1:], ip[:n])
	ip[0] = 0
	t.wValid = false
	g.t = t
	return t
}

// resize returns s with length n, reusing its array when it is large enough.
func resize[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n, n+n/4)
	}
	return s[:n]
}

// InDegrees returns the number of in-edges of each destination.
func (g *CSR) InDegrees() []float32 {
	deg := make([]float32, g.NumDst())
	for d := range deg {
		deg[d] = float32(g.Indptr[d+1] - g.Indptr[d])
	}
	return deg
}

// OutDegrees returns the number of out-edges of each source.
func (g *CSR) OutDegrees() []float32 {
	deg := make([]float32, g.NumSrc)
	for _, s := range g.Indices {
		deg[s]++
	}
	return deg
}

// GCNWeights returns the GCN symmetric-normalisation edge weights
// 1/sqrt(degSrc[s]*degDst[d]). Pass nil degrees to use the block's own
// (OutDegrees and InDegrees); pass the full-graph degrees when g is a
// sampled block. Edges touching a zero degree get weight 0. Add self loops
// to the CSR beforehand if the model wants them.
func GCNWeights(g *CSR, degSrc, degDst []float32) ([]float32, error) {
	if degSrc == nil {
		degSrc = g.OutDegrees()
	}
	if degDst == nil {
		degDst = g.InDegrees()
	}
	if len(degSrc) != g.NumSrc || len(degDst) != g.NumDst() {
		return nil, fmt.Errorf("%w: GCNWeights: %d source and %d destination degrees for a %d→%d block", ErrShape, len(degSrc), len(degDst), g.NumSrc, g.NumDst())
	}
	w := make([]float32, len(g.Indices))
	for d := 0; d < g.NumDst(); d++ {
		for e := g.Indptr[d]; e < g.Indptr[d+1]; e++ {
			p := float64(degSrc[g.Indices[e]]) * float64(degDst[d])
			if p > 0 {
				w[e] = float32(1 / math.Sqrt(p))
			}
		}
	}
	return w, nil
}

// Reduce selects how Aggregate combines the in-edges of a destination.
type Reduce uint8

const (
	// Sum adds the source rows.
	Sum Reduce = iota
	// Mean averages the source rows (zero for a destination without edges).
	Mean
	// Weighted adds the source rows times the edge weights g.Weights (for
	// GCN, the weights from GCNWeights).
	Weighted
)

// String names the reduction.
func (r Reduce) String() string {
	switch r {
	case Sum:
		return "sum"
	case Mean:
		return "mean"
	case Weighted:
		return "weighted"
	}
	return fmt.Sprintf("Reduce(%d)", uint8(r))
}

func checkAgg(op string, g *CSR, x, out Matrix, mode Reduce) error {
	if err := x.Validate(); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	if err := out.Validate(); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	if len(g.Indptr) == 0 {
		return fmt.Errorf("%w: %s: empty Indptr", ErrGraph, op)
	}
	if x.Rows != g.NumSrc || out.Rows != g.NumDst() || out.Cols != x.Cols {
		return fmt.Errorf("%w: %s: block %d→%d, source features %d×%d, destination features %d×%d",
			ErrShape, op, g.NumSrc, g.NumDst(), x.Rows, x.Cols, out.Rows, out.Cols)
	}
	if mode == Weighted && len(g.Weights) != len(g.Indices) {
		return fmt.Errorf("%w: %s: weighted aggregation needs one weight per edge (have %d for %d edges)", ErrGraph, op, len(g.Weights), len(g.Indices))
	}
	if mode > Weighted {
		return fmt.Errorf("tensor: %s: unknown reduction %v", op, mode)
	}
	return nil
}

func (g *CSR) edgeWeight(mode Reduce, d int, e int64) float32 {
	switch mode {
	case Weighted:
		return g.Weights[e]
	case Mean:
		return 1 / float32(g.Indptr[d+1]-g.Indptr[d])
	}
	return 1
}

// prefetchAhead is how many edges ahead the aggregation kernels prefetch.
const prefetchAhead = 4

// Aggregate sets out[d] = Σ_{e into d} w_e * x[Indices[e]] with w_e = 1 (Sum),
// 1/indegree(d) (Mean) or Weights[e] (Weighted). x has NumSrc rows; out has
// NumDst rows and x.Cols columns. Parallel over destinations. Indices are
// not re-validated here (call g.Validate once when building the block).
func Aggregate(out Matrix, g *CSR, x Matrix, mode Reduce) error {
	if err := checkAgg("Aggregate", g, x, out, mode); err != nil {
		return err
	}
	if t0 := statStart(); t0 != 0 {
		defer statEnd(t0, &aggNs, &aggElems, int64(len(g.Indices))*int64(x.Cols))
	}
	if rowKernel(x.Cols) {
		if rowsKernel(x.Cols) {
			var w []float32
			if mode == Weighted {
				w = g.Weights
			}
			return parallelFor(g.NumDst(), 64, func(lo, hi int) {
				spmmRows(out, lo, hi, g.Indptr, g.Indices, w, x, mode == Mean)
			})
		}
		return parallelFor(g.NumDst(), 64, func(lo, hi int) {
			for d := lo; d < hi; d++ {
				o := out.Row(d)
				clear(o)
				e0, e1 := g.Indptr[d], g.Indptr[d+1]
				var w []float32
				if mode == Weighted {
					w = g.Weights[e0:e1]
				}
				spmmRow(o, x, g.Indices[e0:], int(e1-e0), w, mode == Mean)
			}
		})
	}
	axpy := ks().axpyPF
	ne := int64(len(g.Indices))
	// Source rows are read in random order, so the time goes to memory
	// latency: each axpy prefetches the row needed prefetchAhead edges later.
	next := func(e int64) []float32 { return x.Row(int(g.Indices[min(e+prefetchAhead, ne-1)])) }
	return parallelFor(g.NumDst(), 64, func(lo, hi int) {
		for d := lo; d < hi; d++ {
			o := out.Row(d)
			clear(o)
			e0, e1 := g.Indptr[d], g.Indptr[d+1]
			if mode == Weighted {
				for e := e0; e < e1; e++ {
					axpy(g.Weights[e], x.Row(int(g.Indices[e])), o, next(e))
				}
				continue
			}
			for e := e0; e < e1; e++ {
				axpy(1, x.Row(int(g.Indices[e])), o, next(e))
			}
			if mode == Mean && e1 > e0 {
				inv := 1 / float32(e1-e0)
				for j := range o {
					o[j] *= inv
				}
			}
		}
	})
}

// AggregateGrad adds the gradient of Aggregate with respect to x to dx,
// given the output gradient dy: dx[s] += Σ_{e out of s} w_e * dy[Dst(e)].
// It gathers over the transpose (g.T()), so every source row is written by
// one goroutine: no locks and no races.
func AggregateGrad(dx Matrix, g *CSR, dy Matrix, mode Reduce) error {
	return aggregateGrad("AggregateGrad", dx, g, dy, mode, dx.Rows)
}

// AggregateGradSet is AggregateGrad that sets dx to the gradient instead
// of adding to it (each row is cleared just before its sources are
// gathered, while it is in cache): for a gradient not yet written, it
// saves zero-filling dx in a separate pass.
func AggregateGradSet(dx Matrix, g *CSR, dy Matrix, mode Reduce) error {
	return aggregateGrad("AggregateGradSet", dx, g, dy, mode, 0)
}

// AggregateGradSetFrom adds the gradient to dx's rows before from, as
// AggregateGrad does, and sets the rest, as AggregateGradSet does: for a
// gradient whose first rows alone were written (by a layer's backward
// through its destinations' rows).
func AggregateGradSetFrom(dx Matrix, g *CSR, dy Matrix, mode Reduce, from int) error {
	return aggregateGrad("AggregateGradSetFrom", dx, g, dy, mode, from)
}

// aggregateGrad adds the gradient to rows s < from of dx and sets the
// others.
func aggregateGrad(op string, dx Matrix, g *CSR, dy Matrix, mode Reduce, from int) error {
	rows, _, err := aggregateGradRows(op, dx, g, dy, mode, from)
	if err != nil {
		return err
	}
	if t0 := statStart(); t0 != 0 {
		defer statEnd(t0, &aggNs, &aggElems, int64(len(g.Indices))*int64(dy.Cols))
	}
	return parallelFor(g.NumSrc, 64, rows)
}

// AggregateGradRowsFunc returns a function that does AggregateGradSetFrom's
// work for rows [lo, hi) of dx only, on the calling goroutine: for a
// consumer that takes dx a block of rows at a time while they are in
// cache (GemmTNMultiReLUBitsRows), instead of dx going through memory
// whole. Calls on disjoint ranges may run at once; the kernel statistics
// count their values as aggregated, their time as their caller's.
func AggregateGradRowsFunc(dx Matrix, g *CSR, dy Matrix, mode Reduce, from int) (func(lo, hi int), error) {
	rows, t, err := aggregateGradRows("AggregateGradRows", dx, g, dy, mode, from)
	if err != nil {
		return nil, err
	}
	return func(lo, hi int) {
		if statsOn.Load() {
			aggElems.Add(int64(t.Indptr[hi]-t.Indptr[lo]) * int64(dy.Cols))
		}
		rows(lo, hi)
	}, nil
}

// aggregateGradRows checks the operands of aggregateGrad and returns its
// work on rows [lo, hi), and g's transpose it gathers over (built first,
// with its weights).
func aggregateGradRows(op string, dx Matrix, g *CSR, dy Matrix, mode Reduce, from int) (func(lo, hi int), *Transposed, error) {
	if err := checkAgg(op, g, dx, dy, mode); err != nil {
		return nil, nil, err
	}
	t := g.T()
	if rowKernel(dy.Cols) {
		var tw []float32
		if mode != Sum {
			var err error
			if tw, err = g.transposedWeights(t, mode); err != nil {
				return nil, nil, err
			}
		}
		rows := rowsKernel(dy.Cols)
		return func(lo, hi int) {
			if rows && hi > from {
				// The rows set (not added to) in one kernel call.
				spmmRows(dx, max(lo, from), hi, t.Indptr, t.Dst, tw, dy, false)
				hi = max(lo, from)
			}
			for s := lo; s < hi; s++ {
				o := dx.Row(s)
				if s >= from {
					clear(o)
				}
				q0, q1 := t.Indptr[s], t.Indptr[s+1]
				var w []float32
				if tw != nil {
					w = tw[q0:q1]
				}
				spmmRow(o, dy, t.Dst[q0:], int(q1-q0), w, false)
			}
		}, t, nil
	}
	axpy := ks().axpyPF
	nq := int64(len(t.Dst))
	return func(lo, hi int) {
		for s := lo; s < hi; s++ {
			o := dx.Row(s)
			if s >= from {
				clear(o)
			}
			for q := t.Indptr[s]; q < t.Indptr[s+1]; q++ {
				d := int(t.Dst[q])
				pf := dy.Row(int(t.Dst[min(q+prefetchAhead, nq-1)]))
				axpy(g.edgeWeight(mode, d, t.Edge[q]), dy.Row(d), o, pf)
			}
		}
	}, t, nil
}

// GATAggregate is the attention aggregation of GAT with the given number of
// heads. h (NumSrc × heads*F) holds the projected source features, head k
// in columns [k*F, (k+1)*F); el (NumSrc × heads) and er (NumDst × heads) are
// the per-node source and destination attention terms (a_l·h_s and a_r·h_d).
// For each destination d, head k and in-edge e from s:
//
//	score_e = LeakyReLU(el[s,k] + er[d,k], slope)
//	alpha_e = softmax of score over the in-edges of d
//	out[d, head k] = Σ_e alpha_e * h[s, head k]
//
// alpha (len NumEdges*heads, edge-major: alpha[e*heads+k]) receives the
// attention coefficients, which GATAggregateGrad needs. g.Weights is ignored.
func GATAggregate(out Matrix, alpha []float32, g *CSR, h, el, er Matrix, heads int, slope float32) error {
	return GATAggregateKeep(out, alpha, nil, g, h, el, er, heads, slope)
}

// GATAggregateKeep is GATAggregate with attention dropout: keep (nil, or
// len NumEdges*heads like alpha) multiplies each attention coefficient in
// the weighted sum (mask/(1-p) for dropout p), while alpha receives the
// coefficients before the multiplication, as GATAggregateGradKeep needs.
func GATAggregateKeep(out Matrix, alpha, keep []float32, g *CSR, h, el, er Matrix, heads int, slope float32) error {
	if err := checkGAT("GATAggregate", g, h, el, er, out, alpha, heads); err != nil {
		return err
	}
	if keep != nil && len(keep) != len(alpha) {
		return fmt.Errorf("%w: GATAggregate: keep has %d elements, want %d", ErrShape, len(keep), len(alpha))
	}
	if t0 := statStart(); t0 != 0 {
		defer statEnd(t0, &aggNs, &aggElems, int64(len(g.Indices))*int64(h.Cols))
	}
	f := h.Cols / heads
	axpy := ks().axpy
	return parallelFor(g.NumDst(), 64, func(lo, hi int) {
		for d := lo; d < hi; d++ {
			o := out.Row(d)
			clear(o)
			e0, e1 := g.Indptr[d], g.Indptr[d+1]
			if e0 == e1 {
				continue
			}
			for k := 0; k < heads; k++ {
				erk := er.At(d, k)
				m := float32(math.Inf(-1))
				for e := e0; e < e1; e++ {
					z := leaky(el.At(int(g.Indices[e]), k)+erk, slope)
					alpha[e*int64(heads)+int64(k)] = z
					m = max(m, z)
				}
				var sum float64
				for e := e0; e < e1; e++ {
					p := &alpha[e*int64(heads)+int64(k)]
					v := math.Exp(float64(*p - m))
					*p = float32(v)
					sum += v
				}
				inv := float32(1 / sum)
				ok := o[k*f : (k+1)*f]
				for e := e0; e < e1; e++ {
					i := e*int64(heads) + int64(k)
					alpha[i] *= inv
					a := alpha[i]
					if keep != nil {
						a *= keep[i]
					}
					axpy(a, h.Row(int(g.Indices[e]))[k*f:(k+1)*f], ok)
				}
			}
		}
	})
}

// GATAggregateGrad adds to dh, del and der the gradients of GATAggregate's
// output with respect to h, el and er, given the output gradient dy and the
// alpha computed by the forward pass. Destination-side terms are gathered
// per destination and source-side terms per source over the transpose, so
// there are no concurrent writes to a row.
func GATAggregateGrad(dh, del, der Matrix, g *CSR, h, el, er Matrix, alpha []float32, dy Matrix, heads int, slope float32) error {
	return GATAggregateGradKeep(dh, del, der, g, h, el, er, alpha, nil, dy, heads, slope)
}

// GATAggregateGradKeep is GATAggregateGrad for GATAggregateKeep: alpha are
// the coefficients before, keep the multipliers of, attention dropout.
func GATAggregateGradKeep(dh, del, der Matrix, g *CSR, h, el, er Matrix, alpha, keep []float32, dy Matrix, heads int, slope float32) error {
	hm, elm, erm := h, el, er
	if err := checkGAT("GATAggregateGrad", g, hm, elm, erm, dy, alpha, heads); err != nil {
		return err
	}
	if keep != nil && len(keep) != len(alpha) {
		return fmt.Errorf("%w: GATAggregateGrad: keep has %d elements, want %d", ErrShape, len(keep), len(alpha))
	}
	if t0 := statStart(); t0 != 0 {
		defer statEnd(t0, &aggNs, &aggElems, int64(len(g.Indices))*int64(hm.Cols))
	}
	if err := sameShapes("GATAggregateGrad", dh, hm); err != nil {
		return err
	}
	if err := sameShapes("GATAggregateGrad", del, elm); err != nil {
		return err
	}
	if err := sameShapes("GATAggregateGrad", der, erm); err != nil {
		return err
	}
	f := hm.Cols / heads
	dz := New(1, len(alpha)).Data
	dot := ks().dot
	axpy := ks().axpy
	// Phase 1, per destination: dα_e = dy[d,k]·h[s,k]; softmax and LeakyReLU
	// backward give dz_e; der[d,k] += Σ_e dz_e.
	err := parallelFor(g.NumDst(), 64, func(lo, hi int) {
		for d := lo; d < hi; d++ {
			e0, e1 := g.Indptr[d], g.Indptr[d+1]
			gy := dy.Row(d)
			for k := 0; k < heads; k++ {
				var s float32
				for e := e0; e < e1; e++ {
					i := e*int64(heads) + int64(k)
					da := dot(gy[k*f:(k+1)*f], hm.Row(int(g.Indices[e]))[k*f:(k+1)*f])
					if keep != nil {
						da *= keep[i]
					}
					dz[i] = da
					s += alpha[i] * da
				}
				erk := erm.At(d, k)
				var acc float32
				for e := e0; e < e1; e++ {
					i := e*int64(heads) + int64(k)
					z := elm.At(int(g.Indices[e]), k) + erk
					dz[i] = alpha[i] * (dz[i] - s) * leakyDeriv(z, slope)
					acc += dz[i]
				}
				der.Data[d*heads+k] += acc
			}
		}
	})
	if err != nil {
		return err
	}
	// Phase 2, per source: dh[s,k] += Σ α_e dy[d,k]; del[s,k] += Σ dz_e.
	t := g.T()
	return parallelFor(g.NumSrc, 64, func(lo, hi int) {
		for s := lo; s < hi; s++ {
			o := dh.Row(s)
			for q := t.Indptr[s]; q < t.Indptr[s+1]; q++ {
				d, e := int(t.Dst[q]), t.Edge[q]
				gy := dy.Row(d)
				for k := 0; k < heads; k++ {
					i := e*int64(heads) + int64(k)
					a := alpha[i]
					if keep != nil {
						a *= keep[i]
					}
					axpy(a, gy[k*f:(k+1)*f], o[k*f:(k+1)*f])
					del.Data[s*heads+k] += dz[i]
				}
			}
		}
	})
}

func checkGAT(op string, g *CSR, h, el, er, out Matrix, alpha []float32, heads int) error {
	if heads <= 0 || h.Cols%heads != 0 {
		return fmt.Errorf("%w: %s: %d columns do not split into %d heads", ErrShape, op, h.Cols, heads)
	}
	if err := checkAgg(op, g, h, out, Sum); err != nil {
		return err
	}
	if el.Rows != g.NumSrc || el.Cols != heads || er.Rows != g.NumDst() || er.Cols != heads ||
		len(el.Data) != el.Rows*el.Cols || len(er.Data) != er.Rows*er.Cols {
		return fmt.Errorf("%w: %s: el %d×%d and er %d×%d, want %d×%d and %d×%d",
			ErrShape, op, el.Rows, el.Cols, er.Rows, er.Cols, g.NumSrc, heads, g.NumDst(), heads)
	}
	if len(alpha) != len(g.Indices)*heads {
		return fmt.Errorf("%w: %s: alpha has %d elements, want edges×heads = %d", ErrShape, op, len(alpha), len(g.Indices)*heads)
	}
	return nil
}

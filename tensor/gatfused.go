package tensor

import (
	"fmt"
	"math"

	"github.com/graphmill/graphmill/internal/rng"
)

// A GAT layer's attention in two kernels instead of a chain of ops.
//
// GATForward computes the attention terms el = h·aSrc and er = h·aDst per
// head (one sequential pass over h), then, per destination, the scores,
// their softmax, the attention dropout (node-keyed factors drawn right
// there) and the weighted sum of the source rows: one random read of each
// in-edge's source row. GATBackward does, per destination, the dot
// products dy·h, the softmax's and the LeakyReLU's backward, and writes one
// record per edge (the coefficient that multiplied the row and the score's
// gradient, side by side so the transposed pass reads one cache line per
// edge for eight heads); then, per source, gathers dh over the transpose
// and adds the attention terms' backward (el's into dh and aSrc's
// gradient, and er's for the destinations) while the row is in cache.
// Every buffer is the caller's (a step's Workspace); nothing is allocated.

// gatStackHeads is the number of heads whose per-destination accumulators
// live on the stack; more heads allocate them per chunk.
const gatStackHeads = 32

// gatBlock is the rows of one partial sum of the attention vectors'
// gradients: fixed blocks summed in order keep the result independent of
// the number of threads.
const gatBlock = 1024

// gatAhead is how many edges ahead the GAT kernels prefetch the rows they
// will read.
const gatAhead = 4

// GATBackwardScratch returns the float32 values of scratch GATBackward
// needs for a block of numSrc sources, numDst destinations and edges
// in-edges, with heads heads over cols columns.
func GATBackwardScratch(numSrc, numDst, edges, heads, cols int) int {
	blocks := (numSrc + gatBlock - 1) / gatBlock
	return 2*edges*heads + numDst*heads + blocks*(2*cols+heads)
}

// GATForward computes a GAT layer's attention over the block g for the
// projected features h (NumSrc × heads*F, head k in columns [k*F, (k+1)*F);
// the destinations are the first NumDst rows of h) and the attention
// vectors aSrc and aDst (heads × F). It sets el (NumSrc × heads) and er
// (NumDst × heads) to the attention terms h·aSrc and h·aDst per head, alpha
// (NumEdges*heads, edge-major) to the coefficients softmax(LeakyReLU(el[s]
// + er[d], slope)) over each destination's in-edges, and out (NumDst ×
// heads*F) to Σ alpha·keep·h[s] per head: GATAggregateKeep after two
// HeadDots, in one kernel.
//
// keep is nil (no attention dropout) or NumEdges*heads dropout factors. With
// keys (one per destination) and p > 0 the kernel draws them itself, keyed
// by (seed, keys[d]) exactly as DropoutMaskSegments does; without keys the
// caller fills keep beforehand (e.g. DropoutMask).
func GATForward(out, el, er Matrix, alpha, keep []float32, g *CSR, h, aSrc, aDst Matrix, slope float32, keys []int32, p float64, seed uint64) error {
	heads, f, err := checkGATFused("GATForward", g, h, aSrc, aDst, el, er, out, alpha, keep)
	if err != nil {
		return err
	}
	if keys != nil && p > 0 {
		if len(keys) != g.NumDst() || keep == nil {
			return fmt.Errorf("%w: GATForward: %d keys for %d destinations (and keep %d values)", ErrShape, len(keys), g.NumDst(), len(keep))
		}
		if !(p < 1) {
			return fmt.Errorf("tensor: GATForward: dropout probability %v not in [0, 1)", p)
		}
	}
	if t0 := statStart(); t0 != 0 {
		defer statEnd(t0, &aggNs, &aggElems, int64(len(g.Indices))*int64(h.Cols))
	}
	nd := g.NumDst()
	dot := ks().dot
	if err := parallelFor(g.NumSrc, 256, func(lo, hi int) {
		for s := lo; s < hi; s++ {
			hs := h.Row(s)
			for k := 0; k < heads; k++ {
				el.Data[s*heads+k] = dot(hs[k*f:(k+1)*f], aSrc.Data[k*f:(k+1)*f])
				if s < nd {
					er.Data[s*heads+k] = dot(hs[k*f:(k+1)*f], aDst.Data[k*f:(k+1)*f])
				}
			}
		}
	}); err != nil {
		return err
	}
	dc := newDropCode(p)
	ne := int64(len(g.Indices))
	drawKeys := keys != nil && p > 0
	H := int64(heads)
	return parallelFor(nd, 64, func(lo, hi int) {
		var mb, cb [gatStackHeads]float32
		var sb [gatStackHeads]float64
		m, c, sum := mb[:], cb[:], sb[:]
		if heads > gatStackHeads {
			m, c, sum = make([]float32, heads), make([]float32, heads), make([]float64, heads)
		}
		m, c, sum = m[:heads], c[:heads], sum[:heads]
		var r rng.Rand
		for d := lo; d < hi; d++ {
			o := out.Row(d)
			clear(o)
			e0, e1 := g.Indptr[d], g.Indptr[d+1]
			if e0 == e1 {
				continue
			}
			if drawKeys {
				r.Seed(seed ^ uint64(uint32(keys[d]))*0x9e3779b97f4a7c15)
				segmentFactors(keep[e0*H:e1*H], &r, dc)
			}
			erd := er.Data[d*heads : (d+1)*heads]
			for k := range m {
				m[k] = float32(math.Inf(-1))
				sum[k] = 0
			}
			for e := e0; e < e1; e++ {
				prefetch(&el.Data[int(g.Indices[min(e+2*gatAhead, ne-1)])*heads])
				s := int(g.Indices[e])
				els := el.Data[s*heads : (s+1)*heads]
				a := alpha[e*H : (e+1)*H]
				for k, v := range els {
					z := leaky(v+erd[k], slope)
					a[k] = z
					m[k] = max(m[k], z)
				}
			}
			for e := e0; e < e1; e++ {
				a := alpha[e*H : (e+1)*H]
				for k, z := range a {
					v := math.Exp(float64(z - m[k]))
					a[k] = float32(v)
					sum[k] += v
				}
			}
			for k := range m {
				m[k] = float32(1 / sum[k]) // m now holds the normalisers
			}
			for e := e0; e < e1; e++ {
				a := alpha[e*H : (e+1)*H]
				for k := range a {
					a[k] *= m[k]
					c[k] = a[k]
				}
				if keep != nil {
					for k, v := range keep[e*H : (e+1)*H] {
						c[k] *= v
					}
				}
				pf := h.Row(int(g.Indices[min(e+gatAhead, ne-1)]))
				headAxpy(c, h.Row(int(g.Indices[e])), o, pf, pf, f)
			}
		}
	})
}

// segmentFactors fills ms with the dropout factors the stream r draws
// (dc's lanes): one segment of DropoutMaskSegments, and the attention
// dropout drawn inside the GAT kernels.
func segmentFactors(ms []float32, r *rng.Rand, dc dropCode) {
	m, lm, thr, w := dc.walk()
	fs := dc.factors
	var v uint64
	for j := range ms {
		if j&m == 0 {
			v = r.Uint64()
		}
		k := kept(v&lm, thr)
		v >>= w
		ms[j] = fs[k]
	}
}

// GATBackward computes the gradients of GATForward's out given dy (NumDst ×
// heads*F): it sets dh (NumSrc × heads*F) to h's gradient, or adds to it
// with acc, and adds the attention vectors' gradients to daSrc and daDst
// (heads × F; a zero-size matrix skips one). el, er, alpha and keep are
// what GATForward used and produced; scratch has GATBackwardScratch values
// (contents arbitrary).
func GATBackward(dh Matrix, acc bool, daSrc, daDst Matrix, g *CSR, h, aSrc, aDst, el, er Matrix, alpha, keep []float32, dy Matrix, scratch []float32, slope float32) error {
	heads, f, err := checkGATFused("GATBackward", g, h, aSrc, aDst, el, er, dy, alpha, keep)
	if err != nil {
		return err
	}
	if err := sameShapes("GATBackward", dh, h); err != nil {
		return err
	}
	for _, da := range []Matrix{daSrc, daDst} {
		if len(da.Data) != 0 && !da.SameShape(aSrc) {
			return fmt.Errorf("%w: GATBackward: attention gradient %d×%d, want %d×%d", ErrShape, da.Rows, da.Cols, aSrc.Rows, aSrc.Cols)
		}
	}
	ns, nd, ne := g.NumSrc, g.NumDst(), len(g.Indices)
	if need := GATBackwardScratch(ns, nd, ne, heads, h.Cols); len(scratch) < need {
		return fmt.Errorf("%w: GATBackward: scratch of %d values, want %d", ErrShape, len(scratch), need)
	}
	if t0 := statStart(); t0 != 0 {
		defer statEnd(t0, &aggNs, &aggElems, 2*int64(ne)*int64(h.Cols))
	}
	H := int64(heads)
	ne1 := int64(ne - 1)
	rec := scratch[:2*ne*heads] // per edge: alpha·keep per head, then dz per head
	der := scratch[2*ne*heads : 2*ne*heads+nd*heads]
	part := scratch[2*ne*heads+nd*heads:]
	// Phase 1, per destination: dα = keep·(dy[d]·h[s]) per head, the
	// softmax's and LeakyReLU's backward give dz; der[d] = Σ dz.
	err = parallelFor(nd, 64, func(lo, hi int) {
		var sb, db [gatStackHeads]float32
		sk, dr := sb[:], db[:]
		if heads > gatStackHeads {
			sk, dr = make([]float32, heads), make([]float32, heads)
		}
		sk, dr = sk[:heads], dr[:heads]
		for d := lo; d < hi; d++ {
			e0, e1 := g.Indptr[d], g.Indptr[d+1]
			gy := dy.Row(d)
			clear(sk)
			clear(dr)
			for e := e0; e < e1; e++ {
				prefetch(&el.Data[int(g.Indices[e])*heads]) // read by the loop below
				da := rec[e*2*H+H : (e+1)*2*H]
				headDot(da, gy, h.Row(int(g.Indices[e])), h.Row(int(g.Indices[min(e+gatAhead, ne1)])), f)
				a := alpha[e*H : (e+1)*H]
				if keep != nil {
					for k, v := range keep[e*H : (e+1)*H] {
						da[k] *= v
					}
				}
				for k, v := range da {
					sk[k] += a[k] * v
				}
			}
			erd := er.Data[d*heads : (d+1)*heads]
			for e := e0; e < e1; e++ {
				s := int(g.Indices[e])
				els := el.Data[s*heads : (s+1)*heads]
				r := rec[e*2*H : (e+1)*2*H]
				a := alpha[e*H : (e+1)*H]
				for k, v := range els {
					dz := a[k] * (r[heads+k] - sk[k]) * leakyDeriv(v+erd[k], slope)
					r[heads+k] = dz
					dr[k] += dz
					r[k] = a[k]
				}
				if keep != nil {
					for k, v := range keep[e*H : (e+1)*H] {
						r[k] *= v
					}
				}
			}
			copy(der[d*heads:(d+1)*heads], dr)
		}
	})
	if err != nil {
		return err
	}
	// Phase 2, per source, in fixed blocks: dh[s] = Σ alpha·keep·dy[d]
	// over the out-edges, plus del[s]·aSrc and (a destination) der[s]·aDst;
	// the blocks' partial attention-vector gradients are summed in order.
	t := g.T()
	nq := int64(len(t.Dst))
	cols := h.Cols
	blocks := (ns + gatBlock - 1) / gatBlock
	pw := 2*cols + heads
	err = parallelFor(blocks, 1, func(lo, hi int) {
		for b := lo; b < hi; b++ {
			p := part[b*pw : (b+1)*pw]
			clear(p)
			pS, pD, dl := p[:cols], p[cols:2*cols], p[2*cols:]
			for s := b * gatBlock; s < min((b+1)*gatBlock, ns); s++ {
				o := dh.Row(s)
				if !acc {
					clear(o)
				}
				clear(dl)
				for q := t.Indptr[s]; q < t.Indptr[s+1]; q++ {
					r := rec[t.Edge[q]*2*H : (t.Edge[q]+1)*2*H]
					qa := min(q+gatAhead, nq-1)
					headAxpy(r[:heads], dy.Row(int(t.Dst[q])), o, dy.Row(int(t.Dst[qa])), rec[t.Edge[qa]*2*H:], f)
					for k, v := range r[heads:] {
						dl[k] += v
					}
				}
				hs := h.Row(s)
				headAxpy(dl, aSrc.Data, o, aSrc.Data, o, f)
				headAxpy(dl, hs, pS, hs, hs, f)
				if s < nd {
					drs := der[s*heads : (s+1)*heads]
					headAxpy(drs, aDst.Data, o, aDst.Data, o, f)
					headAxpy(drs, hs, pD, hs, hs, f)
				}
			}
		}
	})
	if err != nil {
		return err
	}
	for b := 0; b < blocks; b++ {
		p := part[b*pw : (b+1)*pw]
		if len(daSrc.Data) != 0 {
			addTo(daSrc.Data, p[:cols])
		}
		if len(daDst.Data) != 0 {
			addTo(daDst.Data, p[cols:2*cols])
		}
	}
	return nil
}

func addTo(dst, src []float32) {
	src = src[:len(dst)]
	for i, v := range src {
		dst[i] += v
	}
}

// headAxpy adds c[k]·x[head k] to o[head k] for each head (f columns
// each), prefetching the row pf (as long as x) and the line at pf2[0]
// (the rows a later call will read).
func headAxpy(c, x, o, pf, pf2 []float32, f int) {
	n := len(c)
	if f%8 == 0 && n > 0 && headKernels() {
		_, _, _, _ = x[n*f-1], o[n*f-1], pf[n*f-1], pf2[0]
		headAxpyAVX2(n, f/8, &c[0], &x[0], &o[0], &pf[0], &pf2[0])
		return
	}
	axpy := ks().axpy
	for k, a := range c {
		axpy(a, x[k*f:(k+1)*f], o[k*f:(k+1)*f])
	}
}

// headDot sets out[k] = x[head k]·y[head k] for each head, prefetching the
// row pf (as long as y).
func headDot(out, x, y, pf []float32, f int) {
	n := len(out)
	if f%8 == 0 && n > 0 && headKernels() {
		_, _, _ = x[n*f-1], y[n*f-1], pf[n*f-1]
		headDotAVX2(n, f/8, &x[0], &y[0], &out[0], &pf[0])
		return
	}
	dot := ks().dot
	for k := range out {
		out[k] = dot(x[k*f:(k+1)*f], y[k*f:(k+1)*f])
	}
}

func checkGATFused(op string, g *CSR, h, aSrc, aDst, el, er, out Matrix, alpha, keep []float32) (heads, f int, err error) {
	heads = aSrc.Rows
	if heads <= 0 || !aDst.SameShape(aSrc) || len(aSrc.Data) != h.Cols || len(aDst.Data) != h.Cols {
		return 0, 0, fmt.Errorf("%w: %s: attention vectors %d×%d and %d×%d for %d columns", ErrShape, op, aSrc.Rows, aSrc.Cols, aDst.Rows, aDst.Cols, h.Cols)
	}
	if err := checkGAT(op, g, h, el, er, out, alpha, heads); err != nil {
		return 0, 0, err
	}
	if g.NumDst() > g.NumSrc {
		return 0, 0, fmt.Errorf("%w: %s: %d destinations but %d sources (the destinations are the first sources)", ErrShape, op, g.NumDst(), g.NumSrc)
	}
	if keep != nil && len(keep) != len(alpha) {
		return 0, 0, fmt.Errorf("%w: %s: keep has %d elements, want %d", ErrShape, op, len(keep), len(alpha))
	}
	return heads, h.Cols / heads, nil
}

package tensor

// The aggregation's row kernel: one call per destination (or, backward,
// per source) walks its edges, adding each weighted source row to the
// output row with a fused multiply-add per element in edge order, exactly
// as one axpy per edge does (so results are bitwise those of the per-edge
// loop), holding the output row (or a part of it) in registers, and
// prefetches the row eight edges ahead (across rows: the indices after
// the current row's are read ahead too). Rows whose width
// is not a multiple of 8 end in a masked vector, also a fused
// multiply-add per element (where axpy's scalar tail rounds the product
// and the sum apart): without it, rows of 100 features (a common input
// width) took one axpy call per edge and ran 1.4x as long as rows of 104
// (AMD EPYC Zen 5, 25 random sources each).

// rowKernel reports whether the row kernel handles rows of cols columns.
func rowKernel(cols int) bool { return cols > 0 && headKernels() }

// spmm512Cols is the widest part of a row the AVX-512 row kernel holds in
// registers (16 of 16); wider rows take a pass over the edges per part.
const spmm512Cols = 256

// spmmAVX2Cols is the widest part of a row the AVX2 row kernel holds in
// registers: 12 vectors of 8, and a tail of up to 7 in a thirteenth
// register (so up to 103 columns in the last part); wider rows take a pass
// over the edges per part.
const spmmAVX2Cols = 96

// tailMasks[r] selects the first r lanes of a vector of eight.
var tailMasks = func() (m [8][8]int32) {
	for r := range m {
		for l := range r {
			m[r][l] = -1
		}
	}
	return m
}()

// spmmRow adds Σ_{e<n} w[e]·x[idx[e]] to o (w nil: weight 1), then, with
// mean and n > 0, multiplies o by 1/n. idx may run past n: the rest are
// the indices read next, prefetched ahead.
func spmmRow(o []float32, x Matrix, idx []int32, n int, w []float32, mean bool) {
	if n == 0 {
		return
	}
	var scale *float32
	if mean {
		inv := 1 / float32(n)
		scale = &inv
	}
	_, _ = idx[n-1], o[x.Cols-1]
	wp, step := &oneWeight[0], 0
	if w != nil {
		_ = w[n-1]
		wp, step = &w[0], 4
	}
	if x.Cols == 16 {
		spmmRow16AVX2(n, &x.Data[0], x.Cols*4, &idx[0], wp, step, &o[0], len(idx), scale)
		return
	}
	if k := ks().spmmRow; k != nil {
		// The row in registers, 256 columns at a time. (Rows of 16 keep
		// the AVX2 kernel above, its two registers: the general loop's
		// per-edge work made it 1.3x as long there, Cora's GCN hidden
		// width; 0.51x on rows of 7, 0.82x of 32, 0.75x of 64, 0.63x of
		// 100 in cache.)
		ws := oneWeight
		if w != nil {
			ws = w
		}
		for c := 0; c < x.Cols; c += spmm512Cols {
			part := min(spmm512Cols, x.Cols-c)
			k(n, part/16, x.Data[c:], x.Cols*4, idx, ws, step, o[c:], len(idx), 1<<(part%16)-1, mean)
		}
		return
	}
	// The row in registers, at most 103 columns at a time (0.51x the time
	// of a load, fused multiply-add and store of the row per edge on rows
	// of 7, 0.86x of 32, 0.82x of 64, 0.64-0.68x of 100, 0.88x of 256).
	for c, part := 0, 0; c < x.Cols; c += part {
		part = x.Cols - c
		if part >= spmmAVX2Cols+8 {
			part = spmmAVX2Cols // the rest still needs a part
		}
		var tail *int32
		if r := part % 8; r != 0 {
			tail = &tailMasks[r][0]
		}
		spmmRowAVX2(n, part/8, &x.Data[c], x.Cols*4, &idx[0], wp, step, &o[c], len(idx), tail, scale)
	}
}

// rowsKernel reports whether spmmRows takes rows of cols values: 16 with
// AVX2 (a row in two registers), fewer with AVX-512 (one, masked).
func rowsKernel(cols int) bool {
	return cols == 16 || cols > 0 && cols < 16 && ks().spmmRows != nil
}

// oneWeight is the weight of every edge of an unweighted aggregation.
var oneWeight = []float32{1}

// spmmRows sets rows [lo, hi) of o (cols values, rowsKernel(cols)) to what
// clearing each and spmmRow(o.Row(d), x, idx[indptr[d]:], n,
// w[indptr[d]:indptr[d+1]] (nil: unweighted), mean) give, bitwise, in one
// kernel call: on rows of a few edges (Cora's) the per-row call, clear and
// slicing took longer than the kernel (rows of 16: 15 ns a row in all, in
// cache). indptr[hi] must be at most len(idx) (and len(w) when w is not
// nil).
func spmmRows(o Matrix, lo, hi int, indptr []int64, idx []int32, w []float32, x Matrix, mean bool) {
	if hi <= lo {
		return
	}
	end := indptr[hi]
	_ = o.Data[hi*o.Cols-1]
	if end == 0 {
		clear(o.Data[lo*o.Cols : hi*o.Cols])
		return
	}
	_ = idx[end-1]
	wp, step := &oneWeight[0], 0
	if w != nil {
		_ = w[end-1]
		wp, step = &w[0], 4
	}
	m := 0
	if mean {
		m = 1
	}
	if x.Cols == 16 {
		spmmRows16AVX2(hi-lo, &indptr[lo], &idx[0], wp, step, &x.Data[0], x.Cols*4, &o.Data[lo*o.Cols], o.Cols*4, len(idx), m)
		return
	}
	ws := oneWeight
	if w != nil {
		ws = w
	}
	ks().spmmRows(hi-lo, indptr[lo:], idx, ws, step, x.Data, x.Cols*4, o.Data[lo*o.Cols:], o.Cols*4, len(idx), m, 1<<x.Cols-1)
}

// transposedWeights returns the weight of every edge of g in the order of
// its transpose t for the reduction mode (Weighted: g.Weights; Mean: one
// over the destination's in-degree), built once per transpose.
func (g *CSR) transposedWeights(t *Transposed, mode Reduce) ([]float32, error) {
	if t.wValid && t.wMode == mode && len(t.w) == len(t.Dst) {
		return t.w, nil
	}
	t.w = resize(t.w, len(t.Dst))
	// The slices in locals, and weights copied in a loop of their own: a
	// loop through t and g reloaded their fields after every store (Cora's
	// dropped-out features, 49k entries: 2.4 ns an entry).
	tw, dst, edge := t.w, t.Dst, t.Edge
	if err := parallelFor(len(dst), 1<<14, func(lo, hi int) {
		if mode == Weighted {
			gw := g.Weights
			for q, e := range edge[lo:hi] {
				tw[lo+q] = gw[e]
			}
			return
		}
		for q := lo; q < hi; q++ {
			tw[q] = g.edgeWeight(mode, int(dst[q]), edge[q])
		}
	}); err != nil {
		return nil, err
	}
	t.wMode, t.wValid = mode, true
	return t.w, nil
}

package tensor

import (
	"cmp"
	"fmt"
	"math"

	"github.com/graphmill/graphmill/internal/rng"
)

// Mostly-zero matrices (bag-of-words features: Cora's are 98.7 % zeros)
// have a sparse twin: the CSR of their nonzero entries over their rows
// (NumSrc = columns, the values in Weights). Dropout over the twin draws
// the factors Dropout and DropoutRows draw at those entries only, and a
// product with it (Aggregate with Weighted) skips the zeros: a sparse
// matrix times a dense one is the aggregation kernel's SpMM.

// NonZeros returns the CSR of x's entries that are not +0.0 (a -0.0 or a
// NaN is kept, so that products and dropout give what x itself gives).
func NonZeros(x Matrix) *CSR {
	c := &CSR{Indptr: make([]int64, x.Rows+1), NumSrc: x.Cols}
	n := 0
	for _, v := range x.Data {
		if math.Float32bits(v) != 0 {
			n++
		}
	}
	c.Indices, c.Weights = make([]int32, 0, n), make([]float32, 0, n)
	for i := 0; i < x.Rows; i++ {
		for j, v := range x.Row(i) {
			if math.Float32bits(v) != 0 {
				c.Indices = append(c.Indices, int32(j))
				c.Weights = append(c.Weights, v)
			}
		}
		c.Indptr[i+1] = int64(len(c.Indices))
	}
	return c
}

// Density returns the fraction of c's entries among rows × cols.
func (c *CSR) Density() float64 {
	n := float64(c.NumDst()) * float64(c.NumSrc)
	if n == 0 {
		return 0
	}
	return float64(len(c.Indices)) / n
}

// DropoutNonZeros returns c (the NonZeros of a matrix x) with the values
// Dropout(dst, x, p, seed) gives at its entries (keys nil), or
// DropoutRows(dst, x, p, seed, keys): the same draws, taken at the
// nonzero entries only. The structure is shared with c, and so is its
// transpose (CSR.T) once c has made one: the backward of a product with
// the output transposes it every step.
func DropoutNonZeros(c *CSR, p float64, seed uint64, keys []int32) (*CSR, error) {
	return DropoutNonZerosInto(c, p, seed, keys, make([]float32, len(c.Weights)), nil)
}

// DropoutNonZerosInto is DropoutNonZeros with the output's weights written
// to weights (len(c.Weights) values) and, when tweights is not nil (as
// long), its transpose's weights (built by the backward's products) kept
// in tweights: storage a caller reuses from step to step (a tape's
// workspace) instead of two fresh arrays a call (GCN on Cora: 460 KB an
// epoch).
func DropoutNonZerosInto(c *CSR, p float64, seed uint64, keys []int32, weights, tweights []float32) (*CSR, error) {
	if !(p >= 0 && p < 1) {
		return nil, fmt.Errorf("tensor: DropoutNonZeros: probability %v not in [0, 1)", p)
	}
	rows, cols := c.NumDst(), c.NumSrc
	if keys != nil && len(keys) != rows {
		return nil, fmt.Errorf("tensor: DropoutNonZeros: %d keys for %d rows", len(keys), rows)
	}
	if len(weights) != len(c.Weights) || (tweights != nil && len(tweights) != len(c.Weights)) {
		return nil, fmt.Errorf("%w: DropoutNonZeros: storage for %d and %d weights, want %d", ErrShape, len(weights), len(tweights), len(c.Weights))
	}
	dc := newDropCode(p)
	_, lm, thr, w := dc.walk()
	out := &CSR{Indptr: c.Indptr, Indices: c.Indices, NumSrc: c.NumSrc, Weights: weights, same: cmp.Or(c.same, c), tw: tweights}
	// The lane of element (i, j) starts at bit o·w of its stream (a row's,
	// or a chunk's of the flat matrix), o its offset there and w the lane
	// width: bit o·w%64 of draw o·w/64. The
	// stream's state is a counter, so each entry's draw is taken straight
	// from the stream's start, skipped forward: no branch on whether the
	// entry shares the previous one's draw, which at p = 1/2 (64 lanes a
	// draw) it does about half the time, unpredictably.
	// The slices in locals and the keyed and flat cases in loops of their
	// own: through c, each entry reloaded them (its store might alias c's
	// fields) and the loop spilled its registers (Cora's 49k nonzeros,
	// one thread: 6.0 ns an entry, 4.3-4.7 so).
	indptr, ind, in, ow := c.Indptr, c.Indices, c.Weights, out.Weights
	factors := dc.factors
	draw := func(base rng.Rand, bit uint) float32 {
		base.Skip(uint64(bit >> 6))
		return factors[kept(base.Uint64()>>(bit&63)&lm, thr)]
	}
	if keys != nil {
		var base rng.Rand
		for i := 0; i < rows; i++ {
			base.Seed(rowSeed(seed, keys[i]))
			lo, hi := indptr[i], indptr[i+1]
			for e, o := range ind[lo:hi] {
				q := lo + int64(e)
				ow[q] = in[q] * draw(base, uint(o)*w)
			}
		}
		return out, nil
	}
	var base rng.Rand // the current stream, at its start
	stream := -1
	for i := 0; i < rows; i++ {
		lo, hi := indptr[i], indptr[i+1]
		for e, o := range ind[lo:hi] {
			flat := uint(i*cols) + uint(o)
			if st := int(flat / dropoutChunk); st != stream {
				base.Seed(rng.Derive(seed, uint64(st)))
				stream = st
			}
			q := lo + int64(e)
			ow[q] = in[q] * draw(base, flat%dropoutChunk*w)
		}
	}
	return out, nil
}

// Densify sets dst (rows × NumSrc of c) to c's entries, zero elsewhere.
func Densify(dst Matrix, c *CSR) error {
	if dst.Rows != c.NumDst() || dst.Cols != c.NumSrc {
		return fmt.Errorf("%w: Densify: %d×%d for a %d×%d sparse matrix", ErrShape, dst.Rows, dst.Cols, c.NumDst(), c.NumSrc)
	}
	// A row at a time, cleared and then written while in cache (a clear
	// of the whole matrix first left every write a cache miss), on the
	// kernel threads.
	return parallelFor(dst.Rows, max(1, (1<<16)/max(1, dst.Cols)), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			row := dst.Data[i*dst.Cols : (i+1)*dst.Cols]
			clear(row)
			for e := c.Indptr[i]; e < c.Indptr[i+1]; e++ {
				row[c.Indices[e]] = c.Weights[e]
			}
		}
	})
}

// SetNonZeros sets dst's entries at c's positions to c's values and
// leaves the others as they are: Densify for a dst already zero outside
// c's pattern (such as a matrix that only ever received entries of that
// pattern), without a pass over all of it.
func SetNonZeros(dst Matrix, c *CSR) error {
	if dst.Rows != c.NumDst() || dst.Cols != c.NumSrc {
		return fmt.Errorf("%w: SetNonZeros: %d×%d for a %d×%d sparse matrix", ErrShape, dst.Rows, dst.Cols, c.NumDst(), c.NumSrc)
	}
	indptr, ind, w := c.Indptr, c.Indices, c.Weights // (not reloaded through c after each store)
	for i := 0; i < dst.Rows; i++ {
		row := dst.Data[i*dst.Cols : (i+1)*dst.Cols]
		lo, hi := indptr[i], indptr[i+1]
		for e, j := range ind[lo:hi] {
			row[j] = w[lo+int64(e)]
		}
	}
	return nil
}

// TransposeInto sets dst (cols × rows) to xᵀ.
func TransposeInto(dst, x Matrix) error {
	if dst.Rows != x.Cols || dst.Cols != x.Rows {
		return fmt.Errorf("%w: TransposeInto: %d×%d for the transpose of %d×%d", ErrShape, dst.Rows, dst.Cols, x.Rows, x.Cols)
	}
	for i := 0; i < x.Rows; i++ {
		for j, v := range x.Row(i) {
			dst.Data[j*dst.Cols+i] = v
		}
	}
	return nil
}

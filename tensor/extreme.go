package tensor

import (
	"fmt"
	"math"
	"unsafe"
)

// Extreme is the element-wise maximum (or minimum) of a destination's
// in-edges' source rows, as PyG's max and min aggregations: a destination
// without edges gets 0. It may be folded in several calls, one per owner of
// source rows (a SAR shard folds the rows of one rank at a time and frees
// them), and remembers, per output element, the owner and source row that
// won, which its gradient reads.
type Extreme struct {
	Min bool
	// Out is the result (NumDst × cols).
	Out Matrix
	// pos and owner are the winning source row and its owner per element
	// (owner -1: no edge yet); their storage is counted in Allocated.
	pos, owner []int32
}

// int32s returns a slice of n int32 backed by a counted matrix.
func int32s(n int) []int32 {
	if n == 0 {
		return nil
	}
	m := New(1, n)
	return unsafe.Slice((*int32)(unsafe.Pointer(&m.Data[0])), n)
}

// NewExtreme starts a max (or min) aggregation of rows×cols outputs.
func NewExtreme(rows, cols int, isMin bool) *Extreme {
	e := &Extreme{Min: isMin, Out: New(rows, cols), pos: int32s(rows * cols), owner: int32s(rows * cols)}
	inf := float32(math.Inf(-1))
	if isMin {
		inf = float32(math.Inf(1))
	}
	for i := range e.Out.Data {
		e.Out.Data[i] = inf
		e.owner[i] = -1
	}
	return e
}

// Fold takes the edges of g (destinations: Out's rows) whose sources are
// the rows of x, all owned by owner.
func (e *Extreme) Fold(g *CSR, x Matrix, owner int32) error {
	if x.Rows != g.NumSrc || g.NumDst() != e.Out.Rows || x.Cols != e.Out.Cols {
		return fmt.Errorf("%w: Extreme.Fold: block %d→%d, sources %d×%d, output %d×%d", ErrShape, g.NumSrc, g.NumDst(), x.Rows, x.Cols, e.Out.Rows, e.Out.Cols)
	}
	cols := x.Cols
	return parallelFor(g.NumDst(), 64, func(lo, hi int) {
		for d := lo; d < hi; d++ {
			o := e.Out.Row(d)
			pos, own := e.pos[d*cols:(d+1)*cols], e.owner[d*cols:(d+1)*cols]
			for k := g.Indptr[d]; k < g.Indptr[d+1]; k++ {
				s := g.Indices[k]
				r := x.Row(int(s))
				for j, v := range r {
					if (!e.Min && v > o[j]) || (e.Min && v < o[j]) {
						o[j], pos[j], own[j] = v, s, owner
					}
				}
			}
		}
	})
}

// Finish sets the outputs of destinations without edges to 0.
func (e *Extreme) Finish() {
	for i, o := range e.owner {
		if o < 0 {
			e.Out.Data[i] = 0
		}
	}
}

// Grad adds to dx (the rows of owner's sources) the output gradient dy of
// every element whose winner is one of them.
func (e *Extreme) Grad(dx, dy Matrix, owner int32) error {
	if !dy.SameShape(e.Out) || dx.Cols != dy.Cols {
		return fmt.Errorf("%w: Extreme.Grad: output gradient %d×%d for %d×%d, source gradient %d×%d", ErrShape, dy.Rows, dy.Cols, e.Out.Rows, e.Out.Cols, dx.Rows, dx.Cols)
	}
	cols := dy.Cols
	// Parallel over column ranges: a source row may win for many
	// destinations, but each column is written by one goroutine.
	return parallelFor(cols, 8, func(lo, hi int) {
		for d := 0; d < dy.Rows; d++ {
			for j := lo; j < hi; j++ {
				i := d*cols + j
				if e.owner[i] == owner {
					dx.Data[int(e.pos[i])*cols+j] += dy.Data[i]
				}
			}
		}
	})
}

package tensor

import (
	"fmt"

	"github.com/graphmill/graphmill/internal/hugemem"
)

// Workspace is a step-scoped arena of matrices: the activations,
// gradients and scratch of one training step are carved from one reused
// slab instead of being allocated afresh (a fresh large allocation is
// zeroed by the runtime, page-faulted in by the kernel on first touch —
// about 11 µs per 4 KiB page on cloud VMs — and later reclaimed by the
// garbage collector). Reset hands all of it back at once.
//
//	ws := tensor.NewWorkspace(0)
//	for step := range steps {
//		ws.Reset()               // everything Get returned before is now invalid
//		h := ws.Get(rows, cols)  // contents arbitrary: the next op overwrites it
//		g := ws.Zeroed(rows, cols) // for an op that accumulates
//		...
//	}
//
// A step that needs more than the slab holds gets overflow chunks; the
// next Reset replaces slab and chunks by one slab with room for the
// whole step plus a quarter (batches vary in size), so after the first steps (or after Reserve
// with the memory planner's figure) a steady-state step allocates
// nothing. The slab is in transparent huge pages (hugemem.Make): the
// aggregations' random reads of a layer's rows then miss the TLB less:
// bench train --quick took a median 4 % less CPU time an epoch over 13
// alternated pairs of 16-epoch runs (less in 11), its aggregation less in
// 12 (AMD EPYC Zen 5).
// Matrices are aligned to 64 bytes. A Workspace is used by one
// goroutine at a time. Every Get counts in Allocated, as New does, so the
// memory planner's tests see the same figures either way.
type Workspace struct {
	slab   []float32
	off    int         // next free element of slab
	extra  [][]float32 // overflow chunks of this step
	used   int         // elements handed out this step (with alignment)
	peak   int         // the largest step so far
	grows  int
	resets int
}

// wsAlign is the alignment of workspace matrices in float32 elements (64 bytes).
const wsAlign = 16

// NewWorkspace returns a workspace with room for elems float32 values
// (0: it sizes itself on the first step).
func NewWorkspace(elems int) *Workspace {
	w := &Workspace{}
	w.Reserve(elems)
	return w
}

// Reserve makes sure the slab holds at least elems values (rounded up),
// reallocating it if not. Call it before a step (not during one) with the
// planner's figure for the largest step, so even the first step finds its
// memory ready.
func (w *Workspace) Reserve(elems int) {
	if elems <= len(w.slab) {
		return
	}
	if w.off > 0 || len(w.extra) > 0 {
		// Matrices of the current step live in the slab: keep it, and let
		// the next Reset grow.
		w.peak = max(w.peak, elems)
		return
	}
	w.slab = slab(roundUp(elems, 1<<14))
	w.grows++
}

// slab allocates a workspace slab of n values.
func slab(n int) []float32 { return hugemem.Make[float32](n, n) }

func roundUp(n, to int) int { return (n + to - 1) / to * to }

// Get returns a rows×cols matrix valid until the next Reset. Its contents
// are arbitrary (whatever the last step left): use it only for an output
// that is written in full before it is read. On a nil Workspace it is New.
func (w *Workspace) Get(rows, cols int) Matrix {
	if w == nil {
		return New(rows, cols)
	}
	if rows < 0 || cols < 0 {
		panic(fmt.Sprintf("tensor.Workspace.Get: negative size %d×%d", rows, cols))
	}
	n := rows * cols
	allocated.Add(int64(n) * 4)
	if n == 0 {
		return Matrix{Rows: rows, Cols: cols, Data: []float32{}}
	}
	a := roundUp(n, wsAlign)
	w.used += a
	var d []float32
	if w.off+a <= len(w.slab) {
		d = w.slab[w.off : w.off+n : w.off+n]
		w.off += a
	} else {
		// Overflow: a chunk of its own (sized generously so a step that
		// outgrows the slab makes few of them); the next Reset coalesces.
		c := make([]float32, max(a, len(w.slab)/4, 1<<14))
		d = c[:n:n]
		if len(c) > a {
			// The rest of the chunk becomes the slab for what follows.
			w.extra = append(w.extra, w.slab)
			w.slab, w.off = c, a
		} else {
			w.extra = append(w.extra, c)
		}
	}
	return Matrix{Rows: rows, Cols: cols, Data: d}
}

// Zeroed returns a zeroed rows×cols matrix valid until the next Reset, for
// an output that is accumulated into. On a nil Workspace it is New.
func (w *Workspace) Zeroed(rows, cols int) Matrix {
	if w == nil {
		return New(rows, cols)
	}
	m := w.Get(rows, cols)
	clear(m.Data)
	return m
}

// Reset invalidates every matrix handed out since the last Reset and makes
// their memory available again. After a step that overflowed the slab, the
// slab is replaced by one that holds the whole step with room to spare.
func (w *Workspace) Reset() {
	w.peak = max(w.peak, w.used)
	w.resets++
	if len(w.extra) > 0 || w.peak > len(w.slab) {
		w.extra = nil
		w.slab = nil // let the collector take the old memory before the new slab is made
		w.slab = slab(roundUp(w.peak+w.peak/4, 1<<14))
		w.grows++
	}
	w.off, w.used = 0, 0
}

// Cap returns the number of float32 values the slab holds.
func (w *Workspace) Cap() int { return len(w.slab) }

// Used returns the values handed out since the last Reset (with alignment).
func (w *Workspace) Used() int { return w.used }

// Peak returns the most values any step has used.
func (w *Workspace) Peak() int { return max(w.peak, w.used) }

// Grows returns how many times the slab was (re)allocated: it stays put
// once the workspace has seen its largest step.
func (w *Workspace) Grows() int { return w.grows }

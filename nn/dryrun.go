package nn

import (
	"fmt"
	"sync"

	"github.com/graphmill/graphmill/tensor"
	"github.com/graphmill/graphmill/tensor/autograd"
)

// The memory plan of a layer that has no plan method (every layer
// written outside nn, and nn's layers written only with the public ops)
// comes from the ops themselves: the layer is run, forward and backward,
// on five small blocks, and the bytes its ops allocate (tensor.Allocated
// counts every matrix they make) are fitted as
//
//	c0 + cSrc·Src + cDst·Dst + cEdges·Edges + cLoops·LoopEdges
//
// Every matrix an op makes has one of those as rows and a width fixed by
// the layer, so the fit is exact for a layer whose ops do not change with
// the block's size. The small blocks keep the real block's proportions
// (the choices some ops make, such as aggregating before or after a
// product, follow the proportions), and the tests check the plan against
// a real step byte for byte on random shapes for every registered kind.

// dryKey identifies one fitted plan.
type dryKey struct {
	layer, in       int
	train, grad     bool
	src, dst, edges int // the scaled-down base shape
	loops, h0Cols   int
}

// dryFit is c0 + c·(Src, Dst, Edges, LoopEdges).
type dryFit struct{ c0, src, dst, edges, loops int64 }

func (f dryFit) at(s BlockShape) int64 {
	return f.c0 + f.src*int64(s.Src) + f.dst*int64(s.Dst) + f.edges*int64(s.Edges) + f.loops*int64(s.LoopEdges)
}

// dryRunner runs a model's layers on small blocks: a copy of the model,
// so that nothing a layer keeps (batch normalisation's running
// statistics) changes in the real one.
type dryRunner struct {
	mu   sync.Mutex
	m    *Model
	fits map[dryKey]dryFit
}

// dryBase is the number of sources the small blocks have at most.
const dryBase = 64

// dryRun returns the bytes forwardLayer of layer l allocates (forward
// and, in training, backward, less the gradients of its inputs, which the
// layers below count) on a block of shape s from an input of width in.
func (m *Model) dryRun(l int, s BlockShape, in int, train, grad bool) int64 {
	m.dryOnce.Do(func() {
		c, err := NewModel(m.Config, m.deg)
		if err != nil {
			panic(fmt.Sprintf("nn: the copy of a model for its memory plan: %v", err))
		}
		m.dry = &dryRunner{m: c, fits: map[dryKey]dryFit{}}
	})
	d := m.dry
	d.mu.Lock()
	defer d.mu.Unlock()
	base := scaleShape(s)
	h0Cols := 0
	if m.NeedsH0(l) {
		h0Cols = m.Layers[0].OutDim()
	}
	k := dryKey{layer: l, in: in, train: train, grad: grad, src: base.Src, dst: base.Dst, edges: base.Edges, loops: base.LoopEdges, h0Cols: h0Cols}
	f, ok := d.fits[k]
	if !ok {
		f = d.fit(l, base, in, h0Cols, train, grad)
		d.fits[k] = f
	}
	return f.at(s)
}

// scaleShape returns a block shape of at most dryBase sources in about
// s's proportions, with at least one destination and edge per
// destination where s has them.
func scaleShape(s BlockShape) BlockShape {
	if s.Src <= dryBase {
		return s
	}
	f := float64(dryBase) / float64(s.Src)
	sc := func(v int) int {
		if v == 0 {
			return 0
		}
		return max(1, int(float64(v)*f+0.5))
	}
	b := BlockShape{Src: dryBase, Dst: min(sc(s.Dst), dryBase)}
	b.Edges = sc(s.Edges)
	selfLoops := max(0, s.Edges+s.Dst-s.LoopEdges) // edges that are self-loops
	b.LoopEdges = b.Edges + b.Dst - min(sc(selfLoops), b.Dst, b.Edges)
	return b
}

// fit measures layer l on five blocks around base and solves for the
// coefficients.
func (d *dryRunner) fit(l int, base BlockShape, in, h0Cols int, train, grad bool) dryFit {
	base.Src = max(base.Src, base.Dst, 1)
	selfLoops := base.Edges + base.Dst - base.LoopEdges
	mk := func(src, dst, edges, loops int) int64 {
		return d.measure(l, syntheticBlock(src, dst, edges, loops), in, h0Cols, train, grad)
	}
	s, ds, e, k := base.Src, base.Dst, base.Edges, selfLoops
	m0 := mk(s, ds, e, k)
	var f dryFit
	f.src = mk(s+1, ds, e, k) - m0 // ΔSrc
	// An edge more that is a self-loop on a destination without one (or
	// one fewer that is) changes Edges and not LoopEdges.
	if k < ds {
		f.edges = mk(s, ds, e+1, k+1) - m0
	} else {
		f.edges = m0 - mk(s, ds, e-1, k-1)
	}
	f.loops = mk(s, ds, e+1, k) - m0 - f.edges         // ΔEdges, ΔLoopEdges
	f.dst = mk(s+1, ds+1, e, k) - m0 - f.src - f.loops // ΔSrc, ΔDst, ΔLoopEdges (its self-loop)
	f.c0 = m0 - f.at(BlockShape{Src: s, Dst: ds, Edges: e, LoopEdges: e + ds - k})
	return f
}

// syntheticBlock returns a block of src sources and dst destinations with
// edges edges, selfLoops of which are self-loops (on the first
// destinations), the others spread over the sources.
func syntheticBlock(src, dst, edges, selfLoops int) *Block {
	indptr := make([]int64, dst+1)
	indices := make([]int32, 0, edges)
	for d := 0; d < dst; d++ {
		n := edges / max(dst, 1)
		if d < edges%max(dst, 1) {
			n++
		}
		for i := 0; i < n; i++ {
			if i == 0 && d < selfLoops {
				indices = append(indices, int32(d))
				continue
			}
			v := int32((d*7 + i*13 + 1) % src)
			if v == int32(d) {
				v = int32((int(v) + 1) % src)
			}
			if v == int32(d) { // src == 1: no other source
				v = 0
			}
			indices = append(indices, v)
		}
		indptr[d+1] = int64(len(indices))
	}
	ids := make([]int32, src)
	for i := range ids {
		ids[i] = int32(i)
	}
	// Weights of 1 let a layer aggregating by edge weights run (the
	// bytes do not depend on their values).
	w := make([]float32, len(indices))
	for i := range w {
		w[i] = 1
	}
	b := &Block{CSR: &tensor.CSR{Indptr: indptr, Indices: indices, Weights: w, NumSrc: src}, NumDst: dst, Src: ids}
	b.deg = make([]float32, src)
	for i := range b.deg {
		b.deg[i] = float32(1 + i%5)
	}
	return b
}

// measure runs forwardLayer of layer l on b, with backward in training,
// and returns the bytes allocated less the input gradients.
func (d *dryRunner) measure(l int, b *Block, in, h0Cols int, train, grad bool) int64 {
	m := d.m
	x := tensor.New(b.NumSrc(), in)
	for i := range x.Data {
		x.Data[i] = float32((i*37)%11) * 0.1
	}
	var h0m tensor.Matrix
	if h0Cols > 0 {
		h0m = tensor.New(b.NumDst, h0Cols)
		for i := range h0m.Data {
			h0m.Data[i] = float32((i*17)%7) * 0.1
		}
	}
	run := func() int64 {
		if !train {
			tp := autograd.NewInferenceTape()
			var h0 *autograd.Var
			if h0Cols > 0 {
				h0 = tp.Const(h0m)
			}
			before := tensor.Allocated()
			m.forwardLayer(tp, l, b, tp.Const(x), h0, false, 1, false, tensor.RowDropout{})
			return tensor.Allocated() - before
		}
		tp := autograd.NewTape()
		xv := tp.Const(x)
		if grad {
			xv = tp.Input("x", x)
		}
		var h0 *autograd.Var
		if h0Cols > 0 {
			h0 = tp.Input("h0", h0m)
		}
		before := tensor.Allocated()
		y := m.forwardLayer(tp, l, b, xv, h0, true, 1, false, tensor.RowDropout{})
		seed := tensor.Matrix{Rows: y.Value.Rows, Cols: y.Value.Cols, Data: make([]float32, len(y.Value.Data))}
		for i := range seed.Data {
			seed.Data[i] = 1
		}
		if err := tp.BackwardFrom(y, seed); err != nil {
			panic(fmt.Sprintf("nn: the memory plan's dry run of layer %d: %v", l, err))
		}
		n := tensor.Allocated() - before
		if grad {
			n -= 4 * int64(len(x.Data)) // x's gradient: the layer below's
		}
		if h0Cols > 0 {
			n -= 4 * int64(len(h0m.Data)) // h0's gradient: layer 0's
		}
		return n
	}
	if train {
		run() // parameter gradients are allocated once, here
	}
	return run()
}

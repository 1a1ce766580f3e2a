package nn

import (
	"math/rand/v2"
	"testing"

	"github.com/graphmill/graphmill/tensor"
	"github.com/graphmill/graphmill/tensor/autograd"
)

// modelPair returns two GCN or GAT models with the same weights.
func modelPair(t *testing.T, kind Kind, in int, deg []float32) (*Model, *Model) {
	t.Helper()
	cfg := Config{Kind: kind, In: in, Hidden: 8, Out: 3, Layers: 2, Dropout: 0.5, Heads: 2, OutHeads: 1, AttnDropout: 0.3, Seed: 3}
	a, err := NewModel(cfg, deg)
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewModel(cfg, deg)
	if err != nil {
		t.Fatal(err)
	}
	return a, b
}

// trainOnce runs a training step's forward and backward and returns the
// logits and the parameters' gradients.
func trainOnce(t *testing.T, m *Model, blocks []*Block, x tensor.Matrix, labels []int32, seed uint64) (tensor.Matrix, []tensor.Matrix) {
	t.Helper()
	autograd.ZeroGrad(m.Params()...)
	tp := autograd.NewTape()
	logits := m.Forward(tp, blocks, tp.Const(x), true, seed)
	if err := tp.Backward(tp.CrossEntropy(logits, labels)); err != nil {
		t.Fatal(err)
	}
	var gs []tensor.Matrix
	for _, p := range m.Params() {
		gs = append(gs, p.Grad.Clone())
	}
	return logits.Value.Clone(), gs
}

// sameStep fails unless two steps' logits and gradients are bitwise equal.
func sameStep(t *testing.T, step int, la, lb tensor.Matrix, ga, gb []tensor.Matrix) {
	t.Helper()
	for i, m := range append([]tensor.Matrix{la}, ga...) {
		o := append([]tensor.Matrix{lb}, gb...)[i]
		for j, v := range m.Data {
			if o.Data[j] != v {
				t.Fatalf("step %d: matrix %d (0: logits, then gradients) differs at %d: %v, want %v", step, i, j, o.Data[j], v)
			}
		}
	}
}

// randomRowsLabels returns n rows of in random features and labels of 3 classes.
func randomRowsLabels(r *rand.Rand, n, in int) (tensor.Matrix, []int32) {
	x := tensor.New(n, in)
	for i := range x.Data {
		x.Data[i] = float32(r.NormFloat64())
	}
	labels := make([]int32, n)
	for i := range labels {
		labels[i] = int32(r.IntN(3))
	}
	return x, labels
}

// randomBlockCSR is a block of nDst destinations over nSrc sources, degrees 0–4.
func randomBlockCSR(r *rand.Rand, nDst, nSrc int) *tensor.CSR {
	c := &tensor.CSR{Indptr: make([]int64, nDst+1), NumSrc: nSrc}
	for d := 0; d < nDst; d++ {
		for j := r.IntN(5); j > 0; j-- {
			c.Indices = append(c.Indices, int32(r.IntN(nSrc)))
		}
		c.Indptr[d+1] = int64(len(c.Indices))
	}
	return c
}

func identity(n int) []int32 {
	s := make([]int32, n)
	for i := range s {
		s[i] = int32(i)
	}
	return s
}

// TestReuseBlocks checks that a model reusing a registered graph's derived
// arrays gives bitwise the same logits and gradients as one that builds
// them every step, that it does reuse them for a fresh block over the same
// arrays, and that blocks over other arrays or sources are left alone.
func TestReuseBlocks(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const n, in = 60, 12
	g := randomBlockCSR(r, n, n)
	deg := make([]float32, n)
	for d := range deg {
		deg[d] = float32(g.Indptr[d+1] - g.Indptr[d])
	}
	src := identity(n)
	x, labels := randomRowsLabels(r, n, in)
	block := func(indptr []int64, src []int32) *Block {
		return &Block{CSR: &tensor.CSR{Indptr: indptr, Indices: g.Indices, NumSrc: n}, NumDst: n, Src: src}
	}
	for _, kind := range []Kind{GCN, GAT} {
		t.Run(string(kind), func(t *testing.T) {
			plain, reusing := modelPair(t, kind, in, deg)
			reusing.ReuseBlocks(g.Indptr, g.Indices)
			var first *tensor.CSR
			for s := uint64(0); s < 3; s++ {
				bp, br := block(g.Indptr, src), block(g.Indptr, src)
				lp, gp := trainOnce(t, plain, []*Block{bp}, x, labels, s)
				lr, gr := trainOnce(t, reusing, []*Block{br}, x, labels, s)
				sameStep(t, int(s), lp, lr, gp, gr)
				if s == 0 {
					first = br.loops
				} else if br.loops != first {
					t.Errorf("step %d: the self-looped CSR was built again", s)
				}
			}
			// Equal arrays that are not the registered ones, and the
			// registered ones with other sources, are not served.
			other := block(append([]int64(nil), g.Indptr...), src)
			trainOnce(t, reusing, []*Block{other}, x, labels, 9)
			if other.loops == first {
				t.Error("a block over other arrays got the kept CSR")
			}
			moved := block(g.Indptr, identity(n))
			trainOnce(t, reusing, []*Block{moved}, x, labels, 9)
			if moved.loops == first {
				t.Error("a block with other sources got the kept CSR")
			}
		})
	}
}

// TestScratchBlocks checks that building the derived arrays of training
// blocks in kept scratch gives bitwise the logits and gradients of fresh
// arrays, step after step on blocks of changing size (one per layer), and
// reuses the memory.
func TestScratchBlocks(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	const nAll, in = 80, 10
	deg := make([]float32, nAll)
	for i := range deg {
		deg[i] = float32(r.IntN(5))
	}
	for _, kind := range []Kind{GCN, GAT} {
		t.Run(string(kind), func(t *testing.T) {
			plain, scr := modelPair(t, kind, in, deg)
			scr.ScratchBlocks(true)
			var firstIdx *int32
			for s, nd := range []int{40, 25, 30} {
				ns, mid := nd+15, nd+5
				c0, c1 := randomBlockCSR(r, mid, ns), randomBlockCSR(r, nd, mid)
				src := make([]int32, ns)
				for i := range src {
					src[i] = int32(r.IntN(nAll))
				}
				x, _ := randomRowsLabels(r, ns, in)
				_, labels := randomRowsLabels(r, nd, 1)
				blocks := func() []*Block {
					return []*Block{
						{CSR: &tensor.CSR{Indptr: c0.Indptr, Indices: c0.Indices, NumSrc: ns}, NumDst: mid, Src: src},
						{CSR: &tensor.CSR{Indptr: c1.Indptr, Indices: c1.Indices, NumSrc: mid}, NumDst: nd, Src: src[:mid]},
					}
				}
				lp, gp := trainOnce(t, plain, blocks(), x, labels, uint64(s))
				bs := blocks()
				ls, gs := trainOnce(t, scr, bs, x, labels, uint64(s))
				sameStep(t, s, lp, ls, gp, gs)
				b := bs[1]
				if b.scratch == nil {
					t.Fatalf("step %d: the training block got no scratch", s)
				}
				if s == 0 {
					firstIdx = &b.loops.Indices[:1][0]
				} else if &b.loops.Indices[:1][0] != firstIdx {
					t.Errorf("step %d: the self-looped indices were allocated afresh", s)
				}
			}
		})
	}
}

package nn

import (
	"math/rand/v2"
	"testing"

	"github.com/graphmill/graphmill/tensor"
	"github.com/graphmill/graphmill/tensor/autograd"
)

// TestReuseBlocks checks that a model reusing a registered graph's derived
// arrays gives bitwise the same logits and gradients as one that builds
// them every step, that it does reuse them for a fresh block over the same
// arrays, and that blocks over other arrays or sources are left alone.
func TestReuseBlocks(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const n, in = 60, 12
	indptr := make([]int64, n+1)
	var indices []int32
	for d := 0; d < n; d++ {
		for j := r.IntN(6); j > 0; j-- {
			indices = append(indices, int32(r.IntN(n)))
		}
		indptr[d+1] = int64(len(indices))
	}
	deg := make([]float32, n)
	for d := range deg {
		deg[d] = float32(indptr[d+1] - indptr[d])
	}
	src := make([]int32, n)
	for i := range src {
		src[i] = int32(i)
	}
	x := tensor.New(n, in)
	for i := range x.Data {
		x.Data[i] = float32(r.NormFloat64())
	}
	labels := make([]int32, n)
	for i := range labels {
		labels[i] = int32(r.IntN(3))
	}
	for _, kind := range []Kind{GCN, GAT} {
		t.Run(string(kind), func(t *testing.T) {
			cfg := Config{Kind: kind, In: in, Hidden: 8, Out: 3, Layers: 2, Dropout: 0.5, Heads: 2, OutHeads: 1, AttnDropout: 0.3, Seed: 3}
			plain, err := NewModel(cfg, deg)
			if err != nil {
				t.Fatal(err)
			}
			reusing, _ := NewModel(cfg, deg)
			reusing.ReuseBlocks(indptr, indices)
			step := func(m *Model, b *Block, seed uint64) (tensor.Matrix, []tensor.Matrix) {
				autograd.ZeroGrad(m.Params()...)
				tp := autograd.NewTape()
				logits := m.Forward(tp, []*Block{b}, tp.Const(x), true, seed)
				if err := tp.Backward(tp.CrossEntropy(logits, labels)); err != nil {
					t.Fatal(err)
				}
				var gs []tensor.Matrix
				for _, p := range m.Params() {
					gs = append(gs, p.Grad.Clone())
				}
				return logits.Value.Clone(), gs
			}
			block := func() *Block {
				return &Block{CSR: &tensor.CSR{Indptr: indptr, Indices: indices, NumSrc: n}, NumDst: n, Src: src}
			}
			var first *tensor.CSR
			for s := uint64(0); s < 3; s++ {
				bp, br := block(), block()
				lp, gp := step(plain, bp, s)
				lr, gr := step(reusing, br, s)
				if relDiffMax(lp, lr) != 0 {
					t.Fatalf("step %d: logits differ", s)
				}
				for i := range gp {
					if relDiffMax(gp[i], gr[i]) != 0 {
						t.Fatalf("step %d: gradient %d differs", s, i)
					}
				}
				if s == 0 {
					first = br.loops
				} else if br.loops != first {
					t.Errorf("step %d: the self-looped CSR was built again", s)
				}
			}
			// Equal arrays that are not the registered ones, and the
			// registered ones with other sources, are not served.
			other := &Block{CSR: &tensor.CSR{Indptr: append([]int64(nil), indptr...), Indices: indices, NumSrc: n}, NumDst: n, Src: src}
			step(reusing, other, 9)
			if other.loops == first {
				t.Error("a block over other arrays got the kept CSR")
			}
			src2 := append([]int32(nil), src...)
			moved := &Block{CSR: &tensor.CSR{Indptr: indptr, Indices: indices, NumSrc: n}, NumDst: n, Src: src2}
			step(reusing, moved, 9)
			if moved.loops == first {
				t.Error("a block with other sources got the kept CSR")
			}
		})
	}
}

func relDiffMax(a, b tensor.Matrix) float32 {
	var d float32
	for i, v := range a.Data {
		d = max(d, abs32(v-b.Data[i]))
	}
	return d
}

func abs32(v float32) float32 {
	if v < 0 {
		return -v
	}
	return v
}

// TestScratchBlocks checks that building the derived arrays of training
// blocks in kept scratch gives bitwise the logits and gradients of fresh
// arrays, step after step on blocks of changing size, and reuses the memory.
func TestScratchBlocks(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	const nAll, in = 80, 10
	deg := make([]float32, nAll)
	for i := range deg {
		deg[i] = float32(r.IntN(5))
	}
	for _, kind := range []Kind{GCN, GAT} {
		t.Run(string(kind), func(t *testing.T) {
			cfg := Config{Kind: kind, In: in, Hidden: 8, Out: 3, Layers: 2, Dropout: 0.5, Heads: 2, OutHeads: 1, AttnDropout: 0.3, Seed: 3}
			plain, err := NewModel(cfg, deg)
			if err != nil {
				t.Fatal(err)
			}
			scr, _ := NewModel(cfg, deg)
			scr.ScratchBlocks(true)
			var firstIdx *int32
			for s, nd := range []int{40, 25, 30} {
				ns, mid := nd+15, nd+5
				mkCSR := func(nDst, nSrc int) *tensor.CSR {
					c := &tensor.CSR{Indptr: make([]int64, nDst+1), NumSrc: nSrc}
					for d := 0; d < nDst; d++ {
						for j := r.IntN(5); j > 0; j-- {
							c.Indices = append(c.Indices, int32(r.IntN(nSrc)))
						}
						c.Indptr[d+1] = int64(len(c.Indices))
					}
					return c
				}
				c0, c1 := mkCSR(mid, ns), mkCSR(nd, mid)
				src := make([]int32, ns)
				for i := range src {
					src[i] = int32(r.IntN(nAll))
				}
				x := tensor.New(ns, in)
				for i := range x.Data {
					x.Data[i] = float32(r.NormFloat64())
				}
				labels := make([]int32, nd)
				for i := range labels {
					labels[i] = int32(r.IntN(3))
				}
				run := func(m *Model) (*Block, tensor.Matrix, []tensor.Matrix) {
					b0 := &Block{CSR: &tensor.CSR{Indptr: c0.Indptr, Indices: c0.Indices, NumSrc: ns}, NumDst: mid, Src: src}
					b := &Block{CSR: &tensor.CSR{Indptr: c1.Indptr, Indices: c1.Indices, NumSrc: mid}, NumDst: nd, Src: src[:mid]}
					autograd.ZeroGrad(m.Params()...)
					tp := autograd.NewTape()
					logits := m.Forward(tp, []*Block{b0, b}, tp.Const(x), true, uint64(s))
					if err := tp.Backward(tp.CrossEntropy(logits, labels)); err != nil {
						t.Fatal(err)
					}
					var gs []tensor.Matrix
					for _, p := range m.Params() {
						gs = append(gs, p.Grad.Clone())
					}
					return b, logits.Value.Clone(), gs
				}
				_, lp, gp := run(plain)
				b, ls, gs := run(scr)
				if relDiffMax(lp, ls) != 0 {
					t.Fatalf("step %d: logits differ", s)
				}
				for i := range gp {
					if relDiffMax(gp[i], gs[i]) != 0 {
						t.Fatalf("step %d: gradient %d differs", s, i)
					}
				}
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

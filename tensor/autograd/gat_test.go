package autograd

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/graphmill/graphmill/tensor"
)

// gatGraph is a random block of nd destinations over ns sources (the
// destinations first), degrees 0..maxDeg, with repeated edges.
func gatGraph(r *rand.Rand, nd, ns, maxDeg int) *tensor.CSR {
	g := &tensor.CSR{Indptr: make([]int64, nd+1), NumSrc: ns}
	for d := 0; d < nd; d++ {
		deg := r.IntN(maxDeg + 1)
		for j := 0; j < deg; j++ {
			g.Indices = append(g.Indices, int32(r.IntN(ns)))
		}
		g.Indptr[d+1] = int64(len(g.Indices))
	}
	return g
}

// TestGATAttentionMatchesOpChain checks the fused GAT attention op against
// the op chain it replaces (two HeadDots, Rows and GATAggregateDropoutKeyed):
// outputs and the gradients of h and both attention vectors agree to
// float32 rounding (the fused kernels add in another order), with and
// without attention dropout (keyed by node and by position: the same
// factors), on random graphs with several heads, on one thread and two,
// with and without a workspace.
func TestGATAttentionMatchesOpChain(t *testing.T) {
	defer tensor.SetThreads(tensor.Threads())
	cases := []struct {
		nd, ns, maxDeg, heads, f int
		p                        float64
		keyed, ws                bool
		threads                  int
	}{
		{5, 7, 4, 1, 8, 0, false, false, 1},
		{40, 40, 9, 8, 8, 0, false, true, 2},
		{40, 40, 9, 8, 8, 0.6, false, true, 2},
		{30, 90, 12, 8, 8, 0.6, true, true, 2},
		{30, 90, 12, 3, 5, 0.5, true, false, 1},
		{1500, 2500, 6, 2, 16, 0.3, false, true, 2}, // several blocks of the transposed pass
		{50, 60, 7, 1, 16, 0.6, true, true, 2},
		{40, 40, 9, 40, 2, 0.2, true, false, 2}, // more heads than the stack buffers
	}
	for i, c := range cases {
		t.Run(fmt.Sprintf("%d_h%d_f%d_p%v_keyed%v", i, c.heads, c.f, c.p, c.keyed), func(t *testing.T) {
			tensor.SetThreads(c.threads)
			r := rand.New(rand.NewPCG(uint64(i), 7))
			g := gatGraph(r, c.nd, c.ns, c.maxDeg)
			hv := randM(r, c.ns, c.heads*c.f)
			as, ad := randM(r, c.heads, c.f), randM(r, c.heads, c.f)
			gy := randM(r, c.nd, c.heads*c.f)
			var keys []int32
			if c.keyed {
				keys = make([]int32, c.nd)
				for d := range keys {
					keys[d] = int32(r.IntN(1 << 20))
				}
			}
			const seed = 99
			run := func(fused bool) (out, dh, das, dad tensor.Matrix) {
				tp := NewTape()
				if c.ws {
					tp.Workspace = tensor.NewWorkspace(0)
				}
				h := tp.Input("h", hv.Clone())
				aS, aD := NewParam("as", as.Clone()), NewParam("ad", ad.Clone())
				// h is an op's output in a model: scale it by one so its
				// gradient is set (not added) by the first contribution.
				hh := tp.Scale(h, 1)
				var o *Var
				if fused {
					o = tp.GATAttention(g, hh, aS, aD, 0.2, c.p, seed, keys)
				} else {
					el := tp.HeadDot(hh, aS)
					hd := hh
					if c.nd != c.ns {
						hd = tp.Rows(hh, 0, c.nd)
					}
					er := tp.HeadDot(hd, aD)
					o = tp.GATAggregateDropoutKeyed(g, hh, el, er, c.heads, 0.2, c.p, seed, keys)
				}
				if err := tp.BackwardFrom(o, gy); err != nil {
					t.Fatal(err)
				}
				return o.Value.Clone(), h.Grad.Clone(), aS.Grad.Clone(), aD.Grad.Clone()
			}
			o0, dh0, das0, dad0 := run(false)
			o1, dh1, das1, dad1 := run(true)
			for _, m := range []struct {
				name string
				a, b tensor.Matrix
			}{{"out", o0, o1}, {"dh", dh0, dh1}, {"daSrc", das0, das1}, {"daDst", dad0, dad1}} {
				if d := relDiff(m.a, m.b); !(d < 2e-5) {
					t.Errorf("%s: fused differs from the op chain by %g (relative to its largest value)", m.name, d)
				}
			}
			if c.p > 0 && relDiff(o0, zeroDropoutOut(t, g, hv, as, ad, keys, c.heads)) < 1e-3 {
				t.Errorf("dropout %v changed nothing", c.p)
			}
		})
	}
}

// zeroDropoutOut is the fused op's output without dropout.
func zeroDropoutOut(t *testing.T, g *tensor.CSR, hv, as, ad tensor.Matrix, keys []int32, heads int) tensor.Matrix {
	t.Helper()
	tp := NewInferenceTape()
	return tp.GATAttention(g, tp.Const(hv), tp.Const(as), tp.Const(ad), 0.2, 0, 0, keys).Value
}

// relDiff is max |a-b| over max |a|.
func relDiff(a, b tensor.Matrix) float64 {
	if !a.SameShape(b) {
		return math.Inf(1)
	}
	var m, d float64
	for i, v := range a.Data {
		m = max(m, math.Abs(float64(v)))
		d = max(d, math.Abs(float64(v-b.Data[i])))
	}
	if m == 0 {
		return d
	}
	return d / m
}

// TestGATAttentionInference checks the op on an inference tape equals the
// training tape's output without dropout.
func TestGATAttentionInference(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	g := gatGraph(r, 20, 30, 5)
	hv, as, ad := randM(r, 30, 16), randM(r, 2, 8), randM(r, 2, 8)
	tp := NewTape()
	o := tp.GATAttention(g, tp.Input("h", hv), NewParam("as", as), NewParam("ad", ad), 0.2, 0, 0, nil)
	inf := NewInferenceTape()
	oi := inf.GATAttention(g, inf.Const(hv), inf.Const(as), inf.Const(ad), 0.2, 0.6, 5, nil)
	if d := relDiff(o.Value, oi.Value); d != 0 {
		t.Errorf("inference output differs by %g", d)
	}
}

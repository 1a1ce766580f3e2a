package nn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/graphmill/graphmill/internal/rng"
	"github.com/graphmill/graphmill/tensor"
	"github.com/graphmill/graphmill/tensor/autograd"
)

// unfusedForward is the layer chain as it was before fusion (separate
// MatMul, Rows copy, Add, AddBias and ReLU ops; dropout as a stored mask
// multiplied in): the reference the fused layers are checked against.
func unfusedForward(tp *autograd.Tape, m *Model, blocks []*Block, x *autograd.Var, seed uint64) *autograd.Var {
	h := x
	for l, layer := range m.Layers {
		b := blocks[0]
		if len(blocks) > 1 {
			b = blocks[l]
		}
		if p := m.Config.Dropout; p > 0 {
			mask := tensor.New(h.Value.Rows, h.Value.Cols)
			scratch := tensor.New(h.Value.Rows, h.Value.Cols)
			if err := tensor.Dropout(scratch, mask, h.Value, p, rng.Derive(seed, uint64(2*l))); err != nil {
				panic(err)
			}
			h = tp.Mul(h, tp.Const(mask))
		}
		switch c := layer.(type) {
		case *SAGEConv:
			neigh := aggregateLinear(tp, b, b.CSR, h, c.LinL, tensor.Mean)
			root := h
			if b.NumDst != h.Value.Rows {
				root = tp.Rows(h, 0, b.NumDst)
			}
			h = tp.AddBias(tp.Add(neigh, linear(tp, root, c.LinR)), c.BiasL)
		case *GCNConv:
			h = tp.AddBias(aggregateLinear(tp, b, gcnCSR(b, m.deg), h, c.Lin, tensor.Weighted), c.Bias)
		default:
			panic(fmt.Sprintf("no reference for %T", layer))
		}
		if l < len(m.Layers)-1 {
			h = tp.ReLU(h)
		}
	}
	return h
}

// TestFusedLayersMatchUnfused checks the fused SAGEConv and GCNConv steps
// (one Dense op per layer: products accumulated into one output, bias and
// ReLU in the GEMM epilogue, the root rows read in place, a mask-free
// dropout whose backward draws the mask again, all on a reused workspace)
// against the unfused op chain. What is bitwise equal and what only to
// float32 rounding:
//   - logits and loss: bitwise (the same products and additions in the
//     same order; widths here stay within one GEMM depth block);
//   - gradients of weights and of the first layer's bias: to 1e-5 of the
//     largest entry (the bias gradient is summed in chunks of rows; deep
//     weight gradients are computed as a transposed product).
func TestFusedLayersMatchUnfused(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	deg := make([]float32, 5000)
	for i := range deg {
		deg[i] = float32(r.IntN(9))
	}
	ws := tensor.NewWorkspace(0)
	for _, kind := range []Kind{SAGE, GCN} {
		for trial := 0; trial < 4; trial++ {
			in, hidden, out := 5+r.IntN(100), 4+r.IntN(60), 2+r.IntN(8)
			c := Config{Kind: kind, In: in, Hidden: hidden, Out: out, Layers: 2 + trial%2, Dropout: []float64{0, 0.5}[trial%2], Seed: uint64(trial)}
			m, err := NewModel(c, deg)
			if err != nil {
				t.Fatal(err)
			}
			blocks := randomBlocks(r, len(m.Layers), 20+r.IntN(300))
			x, labels := randomInputs(r, blocks, in, out)
			run := func(fused bool) (logits tensor.Matrix, loss float32, grads []tensor.Matrix) {
				params := m.Params()
				autograd.ZeroGrad(params...)
				tp := autograd.NewTape()
				var lg *autograd.Var
				if fused {
					ws.Reset()
					tp.Workspace = ws
					lg = m.Forward(tp, blocks, tp.Const(x), true, 9)
				} else {
					lg = unfusedForward(tp, m, blocks, tp.Const(x), 9)
				}
				l := tp.CrossEntropy(lg, labels)
				if err := tp.Backward(l); err != nil {
					t.Fatal(err)
				}
				for _, p := range params {
					grads = append(grads, p.Grad.Clone())
				}
				return lg.Value.Clone(), l.Scalar(), grads
			}
			for rep := 0; rep < 2; rep++ { // the second fused run reuses a dirty workspace
				wl, wloss, wg := run(false)
				gl, gloss, gg := run(true)
				name := fmt.Sprintf("%s trial %d rep %d (in %d hidden %d dropout %g)", kind, trial, rep, in, hidden, c.Dropout)
				for i := range wl.Data {
					if wl.Data[i] != gl.Data[i] {
						t.Fatalf("%s: logit %d = %v fused, %v unfused", name, i, gl.Data[i], wl.Data[i])
					}
				}
				if wloss != gloss {
					t.Fatalf("%s: loss %v fused, %v unfused", name, gloss, wloss)
				}
				names, _ := m.NamedParams()
				for k := range wg {
					var scale float64
					for _, v := range wg[k].Data {
						scale = max(scale, math.Abs(float64(v)))
					}
					for i := range wg[k].Data {
						if d := math.Abs(float64(wg[k].Data[i] - gg[k].Data[i])); !(d <= 1e-5*scale+1e-12) {
							t.Fatalf("%s: gradient of %s [%d] = %v fused, %v unfused", name, names[k], i, gg[k].Data[i], wg[k].Data[i])
						}
					}
				}
			}
		}
	}
}

// TestFusedNextDropout checks the next layer's node-keyed input dropout
// fused into a hidden layer's output (nextDropout) against the same model
// with the dropout drawn as its own op (ForwardStacked with below given,
// which turns the fusion off): logits, loss and every gradient bitwise.
func TestFusedNextDropout(t *testing.T) {
	r := rand.New(rand.NewPCG(6, 6))
	deg := make([]float32, 1<<20)
	for i := range deg {
		deg[i] = float32(r.IntN(9))
	}
	for _, kind := range []Kind{SAGE, GCN} {
		for trial := 0; trial < 3; trial++ {
			in, hidden, out := 5+r.IntN(100), 4+r.IntN(300), 2+r.IntN(8)
			layers := 2 + trial%2
			m, err := NewModel(Config{Kind: kind, In: in, Hidden: hidden, Out: out, Layers: layers, Dropout: 0.5, Seed: uint64(trial)}, deg)
			if err != nil {
				t.Fatal(err)
			}
			blocks := randomBlocks(r, layers, 20+r.IntN(300))
			for _, b := range blocks {
				b.NodeDropout = true
				for i := range b.Src {
					b.Src[i] = int32(r.IntN(1 << 20))
				}
			}
			// Each block's sources are the node ids of the rows the layer
			// below computed, its destinations first.
			for l := len(blocks) - 1; l > 0; l-- {
				copy(blocks[l-1].Src, blocks[l].Src)
			}
			x, labels := randomInputs(r, blocks, in, out)
			run := func(fused bool) (tensor.Matrix, float32, []tensor.Matrix) {
				params := m.Params()
				autograd.ZeroGrad(params...)
				tp := autograd.NewTape()
				var below []tensor.Matrix
				if !fused {
					below = make([]tensor.Matrix, layers) // empty: nothing stacked, no fusion
				}
				lg, _ := m.ForwardStacked(tp, blocks, tp.Const(x), below, true, 3, false)
				l := tp.CrossEntropy(lg, labels)
				if err := tp.Backward(l); err != nil {
					t.Fatal(err)
				}
				var grads []tensor.Matrix
				for _, p := range params {
					grads = append(grads, p.Grad.Clone())
				}
				return lg.Value.Clone(), l.Scalar(), grads
			}
			wl, wloss, wg := run(false)
			gl, gloss, gg := run(true)
			name := fmt.Sprintf("%s trial %d (in %d hidden %d layers %d)", kind, trial, in, hidden, layers)
			for i := range wl.Data {
				if math.Float32bits(wl.Data[i]) != math.Float32bits(gl.Data[i]) {
					t.Fatalf("%s: logit %d = %v fused, %v separate", name, i, gl.Data[i], wl.Data[i])
				}
			}
			if wloss != gloss {
				t.Fatalf("%s: loss %v fused, %v separate", name, gloss, wloss)
			}
			names, _ := m.NamedParams()
			for k := range wg {
				for i := range wg[k].Data {
					if math.Float32bits(wg[k].Data[i]) != math.Float32bits(gg[k].Data[i]) {
						t.Fatalf("%s: gradient of %s [%d] = %v fused, %v separate", name, names[k], i, gg[k].Data[i], wg[k].Data[i])
					}
				}
			}
		}
	}
}

// randomInputs returns input features for blocks[0]'s sources (in
// columns) and labels in [0, out) for the last block's destinations.
func randomInputs(r *rand.Rand, blocks []*Block, in, out int) (tensor.Matrix, []int32) {
	x := tensor.New(blocks[0].CSR.NumSrc, in)
	for i := range x.Data {
		x.Data[i] = r.Float32() - 0.5
	}
	labels := make([]int32, blocks[len(blocks)-1].NumDst)
	for i := range labels {
		labels[i] = int32(r.IntN(out))
	}
	return x, labels
}

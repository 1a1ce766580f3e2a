package nn

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/graphmill/graphmill/tensor"
	"github.com/graphmill/graphmill/tensor/autograd"
)

// randomBlocks makes one random block per layer with the sampled-block
// convention (each block's sources are the next block's... destinations
// prefix), including some self-loops.
func randomBlocks(r *rand.Rand, layers, seeds int) []*Block {
	blocks := make([]*Block, layers)
	dst := seeds
	for l := layers - 1; l >= 0; l-- {
		src := dst + r.IntN(3*dst+1)
		indptr := make([]int64, dst+1)
		var indices []int32
		for d := 0; d < dst; d++ {
			k := r.IntN(6)
			for i := 0; i < k; i++ {
				indices = append(indices, int32(r.IntN(src)))
			}
			indptr[d+1] = int64(len(indices))
		}
		ids := make([]int32, src)
		for i := range ids {
			ids[i] = int32(i)
		}
		b, err := NewBlock(indptr, append([]int32{}, indices...), ids, dst)
		if err != nil {
			panic(err)
		}
		b.CSR.Weights = make([]float32, len(indices)) // for AggWeighted
		for i := range b.CSR.Weights {
			b.CSR.Weights[i] = r.Float32() + 0.1
		}
		blocks[l] = b
		dst = src
	}
	return blocks
}

// TestStepBytesExact checks the memory model against the counter of every
// matrix the kernels and autograd allocate, for every model kind, in
// training and inference, on sampled-style blocks and a shared block.
func TestStepBytesExact(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	deg := make([]float32, 10000)
	for i := range deg {
		deg[i] = float32(r.IntN(9))
	}
	for _, kind := range Kinds() {
		for trial := 0; trial < 6; trial++ {
			in, hidden, out := 3+r.IntN(40), 2+r.IntN(30), 2+r.IntN(6)
			c := Config{Kind: kind, In: in, Hidden: hidden, Out: out, Layers: 2 + trial%2, Dropout: 0.3, Heads: 1 + r.IntN(3), OutHeads: 1 + r.IntN(2), AttnDropout: 0.2, Seed: uint64(trial)}
			m, err := NewModel(c, deg)
			if err != nil {
				t.Fatal(err)
			}
			blocks := randomBlocks(r, len(m.Layers), 5+r.IntN(40))
			if trial%3 == 2 { // one block shared by every layer (full-graph style)
				blocks = blocks[:1]
				b := blocks[0]
				b.NumDst = b.CSR.NumSrc
				for len(b.CSR.Indptr) < b.NumDst+1 {
					b.CSR.Indptr = append(b.CSR.Indptr, b.CSR.Indptr[len(b.CSR.Indptr)-1])
				}
			}
			checkStepBytes(t, r, m, blocks, fmt.Sprintf("%s trial %d", kind, trial))
		}
	}
}

// TestStepBytesExactFusedReLUGrad: a GraphSAGE first layer large enough
// for its ReLU's backward to fold into the weight gradients
// (tensor.ReLUGradFused: no matrix for it), and a GCN one the same size,
// which keeps the matrix.
func TestStepBytesExactFusedReLUGrad(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	deg := make([]float32, 10000)
	for i := range deg {
		deg[i] = float32(1 + r.IntN(9))
	}
	for _, kind := range []Kind{SAGE, GCN} {
		m, err := NewModel(Config{Kind: kind, In: 100, Hidden: 256, Out: 7, Layers: 2, Dropout: 0.3, Seed: 1}, deg)
		if err != nil {
			t.Fatal(err)
		}
		blocks := randomBlocks(r, 2, 1100)
		if s := ShapeOf(blocks[0]); !aggregateFirst(s, 100, 256) || !tensor.ReLUGradFused(s.Dst, 256, []int{100, 100}) {
			t.Fatalf("first block %+v does not take the fused path", s)
		}
		checkStepBytes(t, r, m, blocks, string(kind))
	}
}

// checkStepBytes runs a training and an inference step of m on blocks and
// compares the bytes they allocate with m.StepBytes.
func checkStepBytes(t *testing.T, r *rand.Rand, m *Model, blocks []*Block, name string) {
	t.Helper()
	in, out := m.Config.In, m.Config.Out
	shapes := make([]BlockShape, len(blocks))
	for i, b := range blocks {
		shapes[i] = ShapeOf(b)
	}
	x := tensor.New(blocks[0].CSR.NumSrc, in)
	for i := range x.Data {
		x.Data[i] = r.Float32()
	}
	labels := make([]int32, blocks[len(blocks)-1].NumDst)
	for i := range labels {
		labels[i] = int32(r.IntN(out))
	}
	step := func(train bool) int64 {
		before := tensor.Allocated()
		if !train {
			tp := autograd.NewInferenceTape()
			m.Forward(tp, blocks, tp.Const(x), false, 1)
			return tensor.Allocated() - before
		}
		tp := autograd.NewTape()
		loss := tp.CrossEntropy(m.Forward(tp, blocks, tp.Const(x), true, 1), labels)
		if err := tp.Backward(loss); err != nil {
			t.Fatal(err)
		}
		return tensor.Allocated() - before
	}
	step(true) // parameter gradients are allocated once, here
	for _, train := range []bool{true, false} {
		got, want := step(train), m.StepBytes(shapes, train)
		if got != want {
			t.Fatalf("%s train=%v shapes %+v: allocated %d bytes, model says %d", name, train, shapes, got, want)
		}
	}
}

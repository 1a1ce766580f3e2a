package nn_test

import (
	"context"
	"fmt"

	"github.com/graphmill/graphmill/graph"
	"github.com/graphmill/graphmill/nn"
	"github.com/graphmill/graphmill/tensor"
	"github.com/graphmill/graphmill/tensor/autograd"
)

// Train a 2-layer GCN on the whole of a small graph: two triangles joined
// by one edge, one class per triangle, with the class in the features.
func Example() {
	src := []int32{0, 1, 2, 3, 4, 5, 2}
	dst := []int32{1, 2, 0, 4, 5, 3, 3}
	g, err := graph.Build(context.Background(), 6, src, dst, nil, graph.BuildOptions{Symmetrize: true})
	if err != nil {
		panic(err)
	}
	deg := make([]float32, g.NumNodes) // GCN normalises by the in-degrees
	for v, d := range g.InDegrees() {
		deg[v] = float32(d)
	}
	m, err := nn.NewModel(nn.Config{Kind: nn.GCN, In: 2, Hidden: 4, Out: 2, Layers: 2, Seed: 1}, deg)
	if err != nil {
		panic(err)
	}
	names, params := m.NamedParams() // PyTorch Geometric's names and layouts
	for i, name := range names {
		fmt.Println(name, params[i].Value.Rows, "x", params[i].Value.Cols)
	}
	fmt.Println("parameters:", m.NumParams())

	x, _ := tensor.FromSlice(6, 2, []float32{1, 0, 1, 0, 1, 0, 0, 1, 0, 1, 0, 1})
	labels := []int32{0, 0, 0, 1, 1, 1}
	blocks := []*nn.Block{nn.FullGraph(g)} // one block, reused by both layers
	opt, err := nn.NewOptimizer(nn.OptimConfig{Name: "adam", LR: 0.05})
	if err != nil {
		panic(err)
	}
	var first, last float32
	for step := range 100 {
		autograd.ZeroGrad(m.Params()...)
		tp := autograd.NewTape()
		logits := m.Forward(tp, blocks, tp.Const(x), true, uint64(step))
		loss := tp.CrossEntropy(logits, labels)
		if err := tp.Backward(loss); err != nil {
			panic(err)
		}
		opt.Step(m.Params())
		if step == 0 {
			first = loss.Scalar()
		}
		last = loss.Scalar()
	}
	tp := autograd.NewTape()
	logits := m.Forward(tp, blocks, tp.Const(x), false, 0) // inference: no dropout
	pred := make([]int32, 6)
	tensor.RowArgmax(pred, logits.Value)
	fmt.Println("loss fell tenfold:", last < first/10)
	fmt.Println("predictions:", pred)
	// Output:
	// convs.0.lin.weight 4 x 2
	// convs.0.bias 1 x 4
	// convs.1.lin.weight 2 x 4
	// convs.1.bias 1 x 2
	// parameters: 22
	// loss fell tenfold: true
	// predictions: [0 0 0 1 1 1]
}

// EdgeGate is a layer written outside nn with its public ops only: each
// destination takes the element-wise maximum and the mean of its
// in-neighbours' transformed rows and adds its own. Such a layer runs
// unchanged on full graphs, sampled blocks, GNNAutoScale batches and SAR
// shards, and the memory planner counts it by dry runs of its ops.
type EdgeGate struct{ Lin, Root *nn.Linear }

func (l *EdgeGate) Forward(tp *autograd.Tape, b *nn.Block, x *autograd.Var, _ bool, _ uint64) *autograd.Var {
	h := l.Lin.Forward(tp, x) // every source row
	agg := tp.Add(b.Aggregate(tp, h, nn.AggMax), b.Aggregate(tp, h, nn.AggMean))
	return tp.Add(agg, l.Root.Forward(tp, b.DstRows(tp, x)))
}

func (l *EdgeGate) Params() []*autograd.Var { return append(l.Lin.Params(), l.Root.Params()...) }

func (l *EdgeGate) OutDim() int { return l.Root.W.Value.Rows }

// Write a layer of your own and register it as a model kind: NewModel,
// graphmill's training modes and the memory bound then take it like the
// built-in kinds.
func ExampleRegister() {
	nn.Register(nn.Spec{
		Kind: "edge-gate", Help: "max and mean of the neighbours plus the root",
		Build: func(ini *nn.Init, c *nn.Config, _ []float32) ([]nn.Layer, error) {
			return nn.StackLayers(c, func(l, in, out int) nn.Layer {
				// Names within the layer: the model adds "convs.{l}.".
				return &EdgeGate{Lin: ini.Linear("lin.", in, out, true), Root: ini.Linear("root.", in, out, false)}
			}), nil
		},
	})
	m, err := nn.NewModel(nn.Config{Kind: "edge-gate", In: 8, Hidden: 16, Out: 3, Layers: 2, Dropout: 0.5}, nil)
	if err != nil {
		panic(err)
	}
	names, _ := m.NamedParams() // PyG's names: what checkpoints hold
	fmt.Println(names)
	fmt.Println("parameters:", m.NumParams())
	// The bytes a training step on a block of 1,000 sources, 200
	// destinations and 5,000 edges allocates, from dry runs of its ops.
	s := nn.BlockShape{Src: 1000, Dst: 200, Edges: 5000, LoopEdges: 5200}
	fmt.Println("plans a step:", m.StepBytes([]nn.BlockShape{s, {Src: 200, Dst: 50, Edges: 1000, LoopEdges: 1050}}, true) > 0)
	// Output:
	// [convs.0.lin.weight convs.0.lin.bias convs.0.root.weight convs.1.lin.weight convs.1.lin.bias convs.1.root.weight]
	// parameters: 371
	// plans a step: true
}

package nn

import "github.com/graphmill/graphmill/tensor"

// Memory model: the trainer must know a batch's activation and gradient
// memory before running it, to split batches that would exceed a bound.
// graphmill owns every tensor, so the count is exact: the planner below
// walks the same op sequence as the layers' Forward methods and adds up the
// matrices each op allocates (outputs, dropout masks, attention
// coefficients, gradients of intermediates, backward temporaries). The
// tests check it against tensor.Allocated, the counter of every matrix
// made, on random shapes of every model kind.

// BlockShape is the size of one layer's block.
type BlockShape struct {
	Src, Dst, Edges int
	// LoopEdges is the number of edges after giving every destination
	// exactly one self-loop (GCN, GAT and APPNP use it).
	LoopEdges int
}

// ShapeOf returns the shape of a block.
func ShapeOf(b *Block) BlockShape {
	c := b.CSR
	loops := len(c.Indices) + b.NumDst
	for d := 0; d < b.NumDst; d++ {
		for e := c.Indptr[d]; e < c.Indptr[d+1]; e++ {
			if c.Indices[e] == int32(d) {
				loops--
			}
		}
	}
	return BlockShape{Src: c.NumSrc, Dst: b.NumDst, Edges: len(c.Indices), LoopEdges: loops}
}

// pv is a planned value: its shape and whether it needs a gradient.
type pv struct {
	rows, cols int
	grad       bool
}

// planner adds up the bytes of the matrices a step allocates.
type planner struct {
	train bool
	bytes int64
}

func (p *planner) alloc(r, c int) { p.bytes += 4 * int64(r) * int64(c) }

// out allocates an op's output and, in training, its gradient.
func (p *planner) out(r, c int, grad bool) pv {
	p.alloc(r, c)
	grad = grad && p.train
	if grad {
		p.alloc(r, c)
	}
	return pv{r, c, grad}
}

func (p *planner) dropout(x pv, prob float64) pv {
	if !p.train || prob == 0 {
		return x
	}
	return p.out(x.rows, x.cols, x.grad) // no mask: backward draws it again
}

// dense plans a fused Dense op (autograd.Tape.Dense) with rows×cols
// output: the output, its gradient and, with a ReLU, in training, either
// the gradient before the activation (a matrix its backward makes) or,
// where that is folded into the weight gradients (fused,
// tensor.ReLUGradFused), the bits of the ReLU's mask.
func (p *planner) dense(rows, cols int, relu, fused bool) pv {
	o := p.out(rows, cols, true)
	switch {
	case !p.train || !relu:
	case fused:
		p.alloc(1, (rows*tensor.PositiveStride(cols)+3)/4)
	default:
		p.alloc(rows, cols)
	}
	return o
}

func (p *planner) linear(x pv, out int) pv    { return p.out(x.rows, out, true) }
func (p *planner) same(x pv) pv               { return p.out(x.rows, x.cols, x.grad) }
func (p *planner) rows(x pv, n int) pv        { return p.out(n, x.cols, x.grad) }
func (p *planner) aggregate(x pv, dst int) pv { return p.out(dst, x.cols, x.grad) }
func (p *planner) add(a, b pv) pv             { return p.out(a.rows, a.cols, a.grad || b.grad) }
func (p *planner) bias(x pv) pv               { return p.out(x.rows, x.cols, true) }

// aggregateLinear plans nn's aggregateLinear.
func (p *planner) aggregateLinear(x pv, s BlockShape, in, out int) pv {
	if aggregateFirst(s, in, out) {
		return p.linear(p.aggregate(x, s.Dst), out)
	}
	return p.aggregate(p.linear(x, out), s.Dst)
}

func (p *planner) rowsIf(x pv, n int) pv {
	if x.rows == n {
		return x
	}
	return p.rows(x, n)
}

// gat plans tp.GATAttention over h: its output, the attention terms, the
// coefficients, the dropout factors and, in training, the backward
// kernel's scratch.
func (p *planner) gat(h pv, s BlockShape, heads int, prob float64) pv {
	o := p.out(s.Dst, h.cols, true)
	p.alloc(h.rows, heads)        // el
	p.alloc(s.Dst, heads)         // er
	p.alloc(1, s.LoopEdges*heads) // alpha
	if p.train && prob > 0 {
		p.alloc(1, s.LoopEdges*heads) // the attention dropout factors
	}
	if p.train {
		p.alloc(1, tensor.GATBackwardScratch(h.rows, s.Dst, s.LoopEdges, heads, h.cols))
	}
	return o
}

func (p *planner) loss(logits pv) {
	p.alloc(1, logits.rows) // the rows' log-sum-exps
	p.out(1, 1, true)       // the cross-entropy
	p.alloc(1, 1)           // Backward's seed
}

// planLayer plans ForwardLayerH0 of layer l on a block of shape s: the
// dropout on its input, the layer itself (its plan method; NewModel
// refused layers without one) and the activation.
func (m *Model) planLayer(p *planner, l int, s BlockShape, x pv) pv {
	layer, ok := m.Layers[l].(planned)
	if !ok {
		// Planned from its ops by dry runs (dryrun.go): dropout,
		// layer and activation together.
		p.bytes += m.dryRun(l, s, x.cols, p.train, x.grad)
		return pv{s.Dst, m.Layers[l].OutDim(), p.train}
	}
	if m.spec.Teleport && l > 0 {
		return layer.plan(p, s, x) // the teleport terms are planned by the caller
	}
	x = p.dropout(x, m.Config.Dropout)
	if m.fusesReLU(l) {
		return layer.(reluFused).planReLU(p, s, x)
	}
	h := layer.plan(p, s, x)
	if l < len(m.Layers)-1 && !m.spec.Teleport {
		h = p.same(h) // activation
	}
	return h
}

// IndexBytes returns the bytes of the index arrays the model's layers
// derive from a block of shape s (self-looped and weighted copies cached on
// the block, and in training the transpose backward needs): the largest of
// its layers', since layers of one model share what they derive from a
// block. An upper bound.
func (m *Model) IndexBytes(s BlockShape, train bool) int64 {
	var b int64
	for _, l := range m.Layers {
		if pl, ok := l.(planned); ok {
			b = max(b, pl.indexBytes(s, train))
			continue
		}
		// A layer planned by dry runs may derive anything a block op
		// derives: the self-looped copy, its GCN weights and both
		// transposes.
		e := int64(s.LoopEdges)
		b = max(b, selfLoopBytes(s)+4*e+transposeBytes(s, e, train)+transposeBytes(s, int64(s.Edges), train))
	}
	return b
}

// selfLoopBytes is the self-looped copy of a block's edges.
func selfLoopBytes(s BlockShape) int64 { return 8*int64(s.Dst+1) + 4*int64(s.LoopEdges) }

// transposeBytes is the transpose of edges edges over a block's sources,
// built for backward in training.
func transposeBytes(s BlockShape, edges int64, train bool) int64 {
	if !train {
		return 0
	}
	return 8*int64(s.Src+1) + 12*edges
}

// aggregateFirst reports whether aggregating in-dim features over a block
// of shape s and then transforming the Dst results is cheaper than
// transforming all Src rows and aggregating out-dim features.
func aggregateFirst(s BlockShape, in, out int) bool {
	e := int64(s.Edges)
	return e*int64(in)+int64(s.Dst)*int64(in)*int64(out) <= int64(s.Src)*int64(in)*int64(out)+e*int64(out)
}

// StepBytes returns the bytes of the matrices that Forward on blocks of
// these shapes (one per layer, or one shared by all layers), followed in
// training by CrossEntropy and Backward, allocates (where a block has more
// sources than the layer below computed rows, the rest are taken to be
// stacked below them, as ForwardStacked does with GNNAutoScale's history
// rows): activations, dropout
// masks, attention coefficients, gradients of intermediates and backward
// temporaries. Parameter gradients (allocated once per model) and the
// block's own index arrays are not included. Where a hidden layer applies
// the next layer's node-keyed dropout itself (sampled training, see
// nextDropout) the step makes one dropout matrix (and its gradient) fewer
// than planned here: the figure is then an upper bound.
func (m *Model) StepBytes(shapes []BlockShape, train bool) int64 {
	p := &planner{train: train}
	in := m.Config.In
	var x pv
	var h0 pv
	for l := range m.Layers {
		s := shapes[0]
		if len(shapes) > 1 {
			s = shapes[l]
		}
		if l == 0 {
			x = pv{s.Src, in, false}
		} else if x.rows < s.Src {
			// The sources past the rows layer l-1 computed are stacked
			// below them (GNNAutoScale's history rows, ConcatRows).
			x = p.out(s.Src, x.cols, x.grad)
		}
		y := m.planLayer(p, l, s, x)
		if m.NeedsH0(l) {
			hd := p.rowsIf(h0, s.Dst) // Block.Initial
			if m.spec.Teleport {
				y = p.add(y, p.same(hd)) // (1-α)Âx + αh0
			}
		}
		if l == 0 {
			h0 = y
		}
		x = y
	}
	if train {
		p.loss(x)
	}
	return p.bytes
}

// InferLayerBytes returns the bytes of the matrices ForwardLayerH0 of layer
// l allocates in inference on a block of shape s (for APPNP's propagation
// layers, given h0's destination rows as they are).
func (m *Model) InferLayerBytes(l int, s BlockShape) int64 {
	p := &planner{}
	in := m.Config.In
	if l > 0 {
		in = m.Layers[l-1].OutDim()
	}
	y := m.planLayer(p, l, s, pv{s.Src, in, false})
	if m.NeedsH0(l) && m.spec.Teleport {
		p.add(y, p.same(pv{s.Dst, y.cols, false}))
	}
	return p.bytes
}

package train

import (
	"context"
	"fmt"

	"github.com/graphmill/graphmill/nn"
	"github.com/graphmill/graphmill/tensor"
	"github.com/graphmill/graphmill/tensor/autograd"
)

// Parallel is the process group data-parallel training runs in (cmd/graphmill
// adapts a dist.Comm to it). With Config.Parallel set, sampled training
// runs data-parallel: rank 0's initial weights are broadcast, every rank
// trains on its share of each global batch (Config.BatchSize seeds per
// rank), the gradients are all-reduced in buckets while backward is still
// running, and every rank takes the same optimiser step. The result is the
// weights one process gets with batches of Size()×BatchSize seeds.
type Parallel interface {
	Rank() int
	Size() int
	// Broadcast copies rank 0's data to every rank.
	Broadcast(ctx context.Context, data []float32) error
	// AllReduceSum sums data over the ranks in place, with the same bits
	// on every rank.
	AllReduceSum(ctx context.Context, data []float32) error
}

// gradBucketBytes is the size of a gradient bucket: the all-reduce of a
// bucket starts as soon as backward has finished every gradient in it.
var gradBucketBytes = 256 << 10

// gradSync all-reduces a model's gradients for data-parallel training.
type gradSync struct {
	ctx     context.Context
	p       Parallel
	params  []*autograd.Var
	buckets [][]int // parameter indices, in the order backward finishes them
	bucket  map[*autograd.Var]int
	flat    [][]float32 // per bucket; the last has 3 more slots: labelled, loss sum, correct

	pending []int // per bucket: gradients not final yet
	next    int   // next bucket to launch
	weight  float32
	jobs    chan int
	results chan error
}

// stats are the slots the last bucket carries after the gradients.
const stats = 3

func newGradSync(ctx context.Context, p Parallel, m *nn.Model) *gradSync {
	g := &gradSync{ctx: ctx, p: p, params: m.Params(), bucket: map[*autograd.Var]int{}, jobs: make(chan int, 64), results: make(chan error, 64)}
	// Backward finishes the last layer's parameters first: buckets are
	// cut in reverse parameter order.
	var cur []int
	size := 0
	for i := len(g.params) - 1; i >= 0; i-- {
		cur = append(cur, i)
		size += 4 * len(g.params[i].Value.Data)
		if size >= gradBucketBytes || i == 0 {
			g.buckets = append(g.buckets, cur)
			cur, size = nil, 0
		}
	}
	g.flat = make([][]float32, len(g.buckets))
	g.pending = make([]int, len(g.buckets))
	for b, idx := range g.buckets {
		n := 0
		for _, i := range idx {
			n += len(g.params[i].Value.Data)
			g.bucket[g.params[i]] = b
		}
		if b == len(g.buckets)-1 {
			n += stats
		}
		g.flat[b] = make([]float32, n)
	}
	go func() {
		for b := range g.jobs {
			g.results <- g.p.AllReduceSum(g.ctx, g.flat[b])
		}
	}()
	return g
}

func (g *gradSync) close() { close(g.jobs) }

// broadcast makes every rank start from rank 0's weights.
func (g *gradSync) broadcast() error {
	n := 0
	for _, p := range g.params {
		n += len(p.Value.Data)
	}
	buf := make([]float32, 0, n)
	for _, p := range g.params {
		buf = append(buf, p.Value.Data...)
	}
	if err := g.p.Broadcast(g.ctx, buf); err != nil {
		return fmt.Errorf("broadcasting the initial weights: %w", err)
	}
	for _, p := range g.params {
		copy(p.Value.Data, buf[:len(p.Value.Data)])
		buf = buf[len(p.Value.Data):]
	}
	return nil
}

// Begin starts a step whose local gradients are means over labelled
// destinations.
func (g *gradSync) Begin(labelled int) {
	g.weight, g.next = float32(labelled), 0
	for b, idx := range g.buckets {
		g.pending[b] = len(idx)
	}
}

// Ready is the tape's GradReady hook: it launches every bucket whose
// gradients are all final, in bucket order (the same on every rank), but
// keeps the last for finish.
func (g *gradSync) Ready(v *autograd.Var) {
	b, ok := g.bucket[v]
	if !ok {
		return
	}
	g.pending[b]--
	for g.next < len(g.buckets)-1 && g.pending[g.next] <= 0 {
		g.launch(g.next)
		g.next++
	}
}

// launch copies a bucket's gradients, weighted by the local labelled
// count (so the sum over ranks is the gradient of the summed loss), and
// queues its all-reduce.
func (g *gradSync) launch(b int) {
	flat := g.flat[b]
	off := 0
	for _, i := range g.buckets[b] {
		p := g.params[i]
		n := len(p.Value.Data)
		if len(p.Grad.Data) == n {
			for k, v := range p.Grad.Data {
				flat[off+k] = v * g.weight
			}
		} else {
			clear(flat[off : off+n])
		}
		off += n
	}
	g.jobs <- b
}

// Finish launches the remaining buckets (the last with this rank's
// labelled count, loss sum and correct count), waits for every
// all-reduce, and leaves in each gradient the mean over all ranks'
// labelled destinations. It returns the global counts.
func (g *gradSync) Finish(lossSum float64, correct int) (labelled int, loss float64, right int, err error) {
	last := len(g.buckets) - 1
	tail := g.flat[last][len(g.flat[last])-stats:]
	tail[0], tail[1], tail[2] = g.weight, float32(lossSum), float32(correct)
	for ; g.next <= last; g.next++ {
		g.launch(g.next)
	}
	for range g.buckets {
		if e := <-g.results; e != nil && err == nil {
			err = e
		}
	}
	if err != nil {
		return 0, 0, 0, fmt.Errorf("all-reducing gradients: %w", err)
	}
	total := tail[0]
	if total == 0 {
		return 0, 0, 0, nil
	}
	inv := 1 / total
	for b, idx := range g.buckets {
		flat := g.flat[b]
		off := 0
		for _, i := range idx {
			p := g.params[i]
			n := len(p.Value.Data)
			if len(p.Grad.Data) != n {
				p.Grad = tensor.New(p.Value.Rows, p.Value.Cols)
			}
			for k := range p.Grad.Data {
				p.Grad.Data[k] = flat[off+k] * inv
			}
			off += n
		}
	}
	return int(total), float64(tail[1]), int(tail[2]), nil
}

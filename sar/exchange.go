package sar

import (
	"context"
	"fmt"
	"math"
	"strings"
	"sync/atomic"
	"unsafe"

	"github.com/graphmill/graphmill/dist"
	"github.com/graphmill/graphmill/internal/par"
	"github.com/graphmill/graphmill/tensor"
	"github.com/graphmill/graphmill/tensor/autograd"
)

// Mode is how a layer's aggregation reaches the rows other ranks own.
type Mode string

// The aggregation modes.
const (
	// SAR (sequential aggregation and rematerialisation): the other ranks'
	// rows arrive one rank at a time, are aggregated into the running
	// result and freed; the backward pass of sum, mean and GCN
	// aggregation sends gradients only (closed form), and GAT's fetches
	// the rows again.
	SAR Mode = "sar"
	// SA (sequential aggregation): as SAR, but GAT keeps the fetched rows
	// for its backward pass (more memory, less traffic). Sum, mean and GCN
	// aggregation never need them, so for those SA is SAR.
	SA Mode = "sa"
	// OneShot fetches every rank's rows in one all-to-all per layer (the
	// fastest, and the most memory: all boundary rows at once).
	OneShot Mode = "one-shot"
)

// Modes lists the modes.
var Modes = []Mode{SAR, SA, OneShot}

// ParseMode parses a mode name ("one_shot" and "oneshot" also name
// OneShot, as SAR's own flag spells it).
func ParseMode(s string) (Mode, error) {
	switch strings.ToLower(s) {
	case "sar":
		return SAR, nil
	case "sa":
		return SA, nil
	case "one-shot", "one_shot", "oneshot", "one_shot_aggregation":
		return OneShot, nil
	}
	return "", fmt.Errorf("unknown SAR mode %q: want sar, sa or one-shot", s)
}

// Message tags of the point-to-point exchanges.
const (
	tagForward uint32 = 0x5a40 + iota
	tagBackward
	tagScores
)

// counter is a dist.Comm that counts the bytes this rank sends: exactly
// for point-to-point messages and all-to-all-v (payload, headers not
// counted), and at the bandwidth-optimal ring's cost, 2(N-1)/N of the
// buffer, for all-reduce (the backend picks its own algorithm).
type counter struct {
	dist.Comm
	exchange, reduce atomic.Int64
}

func (c *counter) Send(ctx context.Context, to int, tag uint32, data []byte) error {
	c.exchange.Add(int64(len(data)))
	return c.Comm.Send(ctx, to, tag, data)
}

func (c *counter) AllToAllV(ctx context.Context, send [][]byte) ([][]byte, error) {
	for q, b := range send {
		if q != c.Rank() {
			c.exchange.Add(int64(len(b)))
		}
	}
	return c.Comm.AllToAllV(ctx, send)
}

func (c *counter) AllReduce(ctx context.Context, data any, op dist.Op) error {
	n := int64(c.Size())
	if n > 1 {
		var b int64
		switch d := data.(type) {
		case []float32:
			b = 4 * int64(len(d))
		case []float64:
			b = 8 * int64(len(d))
		case []int64:
			b = 8 * int64(len(d))
		}
		c.reduce.Add(2 * (n - 1) * b / n)
	}
	return c.Comm.AllReduce(ctx, data, op)
}

// f32Bytes views a float32 slice as bytes.
func f32Bytes(v []float32) []byte {
	if len(v) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), 4*len(v))
}

// bytesMatrix views (or, when misaligned, copies) a received message as a
// rows×cols matrix.
func bytesMatrix(b []byte, rows, cols int, from int) (tensor.Matrix, error) {
	if len(b) != 4*rows*cols {
		return tensor.Matrix{}, fmt.Errorf("sar: rank %d sent %d bytes where %d rows of %d values (%d bytes) were expected (do all ranks run the same model on the same dataset?)", from, len(b), rows, cols, 4*rows*cols)
	}
	if rows*cols == 0 {
		return tensor.Matrix{Rows: rows, Cols: cols}, nil
	}
	if uintptr(unsafe.Pointer(&b[0]))%4 != 0 {
		v := make([]float32, rows*cols)
		copy(f32Bytes(v), b)
		return tensor.Matrix{Rows: rows, Cols: cols, Data: v}, nil
	}
	return tensor.Matrix{Rows: rows, Cols: cols, Data: unsafe.Slice((*float32)(unsafe.Pointer(&b[0])), rows*cols)}, nil
}

// pack copies the rows idx of x into one buffer.
func pack(x tensor.Matrix, idx []int32) []float32 {
	out := make([]float32, len(idx)*x.Cols)
	par.For(workers(len(idx)), len(idx), func(_, lo, hi int) {
		for i := lo; i < hi; i++ {
			copy(out[i*x.Cols:(i+1)*x.Cols], x.Row(int(idx[i])))
		}
	})
	return out
}

// workers is the number of goroutines for n rows of work.
func workers(n int) int { return max(1, min(tensor.Threads(), n/256)) }

// accumulate adds Σ_e w_e rows[src_e] to out[d] for every destination d.
func accumulate(out tensor.Matrix, c *tensor.CSR, rows tensor.Matrix) {
	par.For(workers(c.NumDst()), c.NumDst(), func(_, lo, hi int) {
		for d := lo; d < hi; d++ {
			o := out.Row(d)
			for e := c.Indptr[d]; e < c.Indptr[d+1]; e++ {
				tensor.Axpy(c.Weights[e], rows.Row(int(c.Indices[e])), o)
			}
		}
	})
}

// accumulateT adds the transpose: dx[s] += Σ_{e out of s} w_e g[dst_e].
func accumulateT(dx tensor.Matrix, c *tensor.CSR, g tensor.Matrix) {
	t := c.T()
	par.For(workers(c.NumSrc), c.NumSrc, func(_, lo, hi int) {
		for s := lo; s < hi; s++ {
			o := dx.Row(s)
			for q := t.Indptr[s]; q < t.Indptr[s+1]; q++ {
				tensor.Axpy(c.Weights[t.Edge[q]], g.Row(int(t.Dst[q])), o)
			}
		}
	})
}

// scatterAdd adds row i of g to row idx[i] of dx (idx holds distinct rows).
func scatterAdd(dx tensor.Matrix, idx []int32, g tensor.Matrix) {
	par.For(workers(len(idx)), len(idx), func(_, lo, hi int) {
		for i := lo; i < hi; i++ {
			tensor.Axpy(1, g.Row(i), dx.Row(int(idx[i])))
		}
	})
}

// linAgg is a weighted sum over the shard's in-edges (sum, mean and GCN
// aggregation): one weighted CSR per owning rank.
type linAgg struct {
	name string
	csr  []*tensor.CSR // over the shard's edges
	// byTopo caches the weighted CSRs of message flow graphs.
	byTopo map[*topo][]*tensor.CSR
}

// on returns the aggregation's weighted CSRs over topo t.
func (a *linAgg) on(t *topo) []*tensor.CSR {
	if t.base == nil {
		return a.csr
	}
	if c, ok := a.byTopo[t]; ok {
		return c
	}
	c := make([]*tensor.CSR, len(t.csr))
	for q, tc := range t.csr {
		w := make([]float32, len(tc.Indices))
		for i, b := range t.base[q] {
			w[i] = a.csr[q].Weights[b]
		}
		c[q] = &tensor.CSR{Indptr: tc.Indptr, Indices: tc.Indices, Weights: w, NumSrc: tc.NumSrc}
		c[q].T()
	}
	if a.byTopo == nil {
		a.byTopo = map[*topo][]*tensor.CSR{}
	}
	a.byTopo[t] = c
	return c
}

// newLinAgg builds the aggregation over edges e (see Shard.edges) with
// weight w(dst, owner, edge index in e[owner], source position).
func newLinAgg(name string, e []ownerEdges, w func(d, q int, i int64, j int32) float32) *linAgg {
	a := &linAgg{name: name, csr: make([]*tensor.CSR, len(e))}
	for q, o := range e {
		ws := make([]float32, len(o.src))
		nd := len(o.indptr) - 1
		for d := 0; d < nd; d++ {
			for i := o.indptr[d]; i < o.indptr[d+1]; i++ {
				ws[i] = w(d, q, i, o.src[i])
			}
		}
		a.csr[q] = &tensor.CSR{Indptr: o.indptr, Indices: o.src, Weights: ws, NumSrc: o.nsrc}
		a.csr[q].T() // built once, before any goroutine reads it
	}
	return a
}

// gcnAgg is GCN's normalised aggregation with self-loops,
// 1/sqrt((deg(d)+1)(deg(s)+1)) with global in-degrees (as nn.GCNConv).
func (s *Shard) gcnAgg() *linAgg {
	if s.gcn == nil {
		e := s.edges(true)
		s.gcn = newLinAgg("GCN", e, func(d, q int, _ int64, j int32) float32 {
			dd := float64(s.InDeg[d]) + 1
			ds := float64(e[q].srcDeg[j]) + 1
			return float32(1 / math.Sqrt(dd*ds))
		})
	}
	return s.gcn
}

// meanAgg is the mean over in-edges (GraphSAGE).
func (s *Shard) meanAgg() *linAgg {
	if s.mean == nil {
		s.mean = newLinAgg("mean", s.edges(false), func(d, _ int, _ int64, _ int32) float32 {
			return 1 / float32(s.InDeg[d])
		})
	}
	return s.mean
}

// edges returns the shard's in-edges; with loops, every inner node's
// self-loop edges are replaced by exactly one self-loop, first in its row
// (as nn.Block.WithSelfLoops).
func (s *Shard) edges(loops bool) []ownerEdges {
	if !loops {
		return s.own
	}
	if s.loops != nil {
		return s.loops
	}
	e := append([]ownerEdges(nil), s.own...)
	o := s.own[s.Rank]
	l := ownerEdges{nsrc: o.nsrc, srcGlobal: o.srcGlobal, srcDeg: o.srcDeg, indptr: make([]int64, len(o.indptr))}
	l.src = make([]int32, 0, len(o.src)+len(o.indptr)-1)
	for d := 0; d+1 < len(o.indptr); d++ {
		l.src = append(l.src, int32(d))
		for i := o.indptr[d]; i < o.indptr[d+1]; i++ {
			if o.src[i] != int32(d) {
				l.src = append(l.src, o.src[i])
			}
		}
		l.indptr[d+1] = int64(len(l.src))
	}
	e[s.Rank] = l
	s.loops = e
	return e
}

// exchanger runs the distributed aggregations of one step.
type exchanger struct {
	ctx  context.Context
	s    *Shard
	comm dist.Comm
	mode Mode
	// fetched tracks the bytes of rows from other ranks held at once
	// (peakFetched: the step's largest).
	fetched, peakFetched int64
	// note samples the heap while fetched rows are held.
	note func()
	// mfg runs the step on message flow graphs (Engine.MFG).
	mfg bool
	// minBytes is the analytic minimum of what the step's ops sent
	// (noteMin).
	minBytes int64
}

func (x *exchanger) hold(b int64) {
	x.fetched += b
	x.peakFetched = max(x.peakFetched, x.fetched)
}

// aggregate returns a(h): every output row's weighted sum over its
// in-edges of the rows h of their sources, fetched from the ranks owning
// them by the exchanger's mode. Its backward sends gradients only.
func (x *exchanger) aggregate(tp *autograd.Tape, a *linAgg, h *autograd.Var, t *topo) (*autograd.Var, error) {
	csr := a.on(t)
	out, err := x.aggFwd(csr, h.Value, t)
	if err != nil {
		return nil, err
	}
	return tp.Custom("SAR-"+a.name, out, func(g tensor.Matrix, grads []tensor.Matrix) error {
		if grads[0].Data == nil {
			return nil
		}
		return x.aggBwd(csr, g, t, grads[0])
	}, h), nil
}

// aggFwd computes the weighted sums (csr: the aggregation's CSRs over t)
// of the rows h, fetching other ranks' rows.
func (x *exchanger) aggFwd(csr []*tensor.CSR, h tensor.Matrix, t *topo) (tensor.Matrix, error) {
	out := tensor.New(t.outRows(), h.Cols)
	accumulate(out, csr[x.s.Rank], h)
	err := x.fetchRows(h, t, func(q int, rows tensor.Matrix) {
		accumulate(out, csr[q], rows)
	})
	return out, err
}

// aggBwd adds the transposed sums of the output gradient g to dx (the
// rows of h), sending the gradients of fetched rows to their owners and
// adding what comes back for this rank's rows.
func (x *exchanger) aggBwd(csr []*tensor.CSR, g tensor.Matrix, t *topo, dx tensor.Matrix) error {
	accumulateT(dx, csr[x.s.Rank], g)
	return x.returnGrads(x.s.Size, g.Cols, t, func(q int) tensor.Matrix {
		gq := tensor.New(csr[q].NumSrc, g.Cols)
		accumulateT(gq, csr[q], g)
		return gq
	}, func(rows []int32, gr tensor.Matrix) { scatterAdd(dx, rows, gr) })
}

// fetchRows brings every other rank's rows of h that this rank's edges
// read, calling use(q, rows) for each rank q (rows in the order of
// own[q]'s source positions), and frees them after use in sar and sa
// modes.
func (x *exchanger) fetchRows(h tensor.Matrix, t *topo, use func(q int, rows tensor.Matrix)) error {
	n, me := x.s.Size, x.s.Rank
	cols := h.Cols
	if n == 1 {
		return nil
	}
	if x.mode == OneShot {
		bufs := make([][]byte, n)
		for q := range bufs {
			if q != me {
				bufs[q] = f32Bytes(pack(h, t.send[q]))
			}
		}
		got, err := x.comm.AllToAllV(x.ctx, bufs)
		if err != nil {
			return err
		}
		bufs = nil
		var held int64
		for q := range got {
			if q != me {
				held += int64(len(got[q]))
			}
		}
		x.hold(held)
		for q := range got {
			if q == me {
				continue
			}
			rows, err := bytesMatrix(got[q], t.fetched(q), cols, q)
			if err != nil {
				return err
			}
			use(q, rows)
		}
		x.note()
		x.hold(-held)
		return nil
	}
	for step := 1; step < n; step++ {
		to, from := (me+step)%n, (me-step+n)%n
		if len(t.send[to]) > 0 {
			if err := x.comm.Send(x.ctx, to, tagForward, f32Bytes(pack(h, t.send[to]))); err != nil {
				return err
			}
		}
		if t.fetched(from) > 0 {
			b, err := x.comm.Recv(x.ctx, from, tagForward)
			if err != nil {
				return err
			}
			rows, err := bytesMatrix(b, t.fetched(from), cols, from)
			if err != nil {
				return err
			}
			x.hold(int64(len(b)))
			use(from, rows)
			x.note()
			x.hold(-int64(len(b)))
		}
	}
	return nil
}

// returnGrads sends every other rank q the gradient grad(q) of the rows
// fetched from it (cols wide) and passes what the others send back for
// this rank's rows to add(rows, g): row i of g belongs to inner row
// rows[i].
func (x *exchanger) returnGrads(n, cols int, t *topo, grad func(q int) tensor.Matrix, add func(rows []int32, g tensor.Matrix)) error {
	me := x.s.Rank
	if n == 1 {
		return nil
	}
	if x.mode == OneShot {
		bufs := make([][]byte, n)
		for q := range bufs {
			if q != me && t.fetched(q) > 0 {
				bufs[q] = f32Bytes(grad(q).Data)
			}
		}
		got, err := x.comm.AllToAllV(x.ctx, bufs)
		if err != nil {
			return err
		}
		for q := range got {
			if q == me || len(t.send[q]) == 0 {
				continue
			}
			g, err := bytesMatrix(got[q], len(t.send[q]), cols, q)
			if err != nil {
				return err
			}
			add(t.send[q], g)
		}
		return nil
	}
	for step := 1; step < n; step++ {
		to, from := (me+step)%n, (me-step+n)%n
		if t.fetched(from) > 0 {
			if err := x.comm.Send(x.ctx, from, tagBackward, f32Bytes(grad(from).Data)); err != nil {
				return err
			}
		}
		if len(t.send[to]) > 0 {
			b, err := x.comm.Recv(x.ctx, to, tagBackward)
			if err != nil {
				return err
			}
			g, err := bytesMatrix(b, len(t.send[to]), cols, to)
			if err != nil {
				return err
			}
			add(t.send[to], g)
		}
	}
	return nil
}

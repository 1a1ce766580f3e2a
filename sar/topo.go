package sar

import (
	"context"
	"fmt"
	"slices"

	"github.com/graphmill/graphmill/tensor"
)

// topo is the graph one aggregation runs over: output rows (inner nodes
// dst), input rows (inner nodes src, the rows of the layer's input h),
// and per owning rank the in-edges of the output rows (sources: positions
// in src for this rank's own rows, positions among the rows fetched for
// this aggregation for other ranks) and the rows of h to send to it. The
// full graph's topo has every inner node as input and output; a message
// flow graph's (--mfg) has only the receptive field of the training nodes.
type topo struct {
	csr  []*tensor.CSR // per owner, unweighted (Weights nil)
	send [][]int32     // per owner: rows of h it needs
	// src and dst (nil: every inner node) and dst's positions in src.
	src, dst, dstInSrc []int32
	// base maps every edge to its index in the shard's edge set (nil:
	// the identity), for edge weights and attention dropout keys.
	base [][]int64
	ni   int
}

func (t *topo) inRows() int {
	if t.src == nil {
		return t.ni
	}
	return len(t.src)
}

func (t *topo) outRows() int {
	if t.dst == nil {
		return t.ni
	}
	return len(t.dst)
}

// fetched returns the rows fetched from owner q.
func (t *topo) fetched(q int) int { return t.csr[q].NumSrc }

// inner returns the inner index of input row i.
func (t *topo) inner(i int) int32 {
	if t.src == nil {
		return int32(i)
	}
	return t.src[i]
}

// outInner returns the inner index of output row i.
func (t *topo) outInner(i int) int32 {
	if t.dst == nil {
		return int32(i)
	}
	return t.dst[i]
}

// fullTopo returns the whole shard's topo over the edges (with self-loops
// or not).
func (s *Shard) fullTopo(loops bool) *topo {
	k := 0
	if loops {
		k = 1
	}
	if s.full[k] == nil {
		e := s.edges(loops)
		t := &topo{csr: make([]*tensor.CSR, len(e)), send: s.send, ni: s.NumInner()}
		for q, o := range e {
			t.csr[q] = &tensor.CSR{Indptr: o.indptr, Indices: o.src, NumSrc: o.nsrc}
			t.csr[q].T()
		}
		s.full[k] = t
	}
	return s.full[k]
}

// mfgTopos returns the message flow graphs of a steps-deep model whose
// loss reads the training nodes (SAR's construct_mfgs): topo l maps the
// rows of layer l's input to those of its output, where the last output
// is the training nodes and every layer's input is its output's rows and
// their in-neighbours. Building them exchanges the needed rows with their
// owners, one all-to-all per layer. Every rank calls it.
func (s *Shard) mfgTopos(ctx context.Context, loops bool, steps int) ([]*topo, error) {
	key := fmt.Sprintf("%v/%d", loops, steps)
	if t, ok := s.mfg[key]; ok {
		return t, nil
	}
	e := s.edges(loops)
	n, me, ni := s.Size, s.Rank, s.NumInner()
	topos := make([]*topo, steps)
	dst := slices.Clone(s.Train)
	slices.Sort(dst)
	dst = slices.Compact(dst)
	in := make([]bool, ni)
	pos := make([]int32, ni)
	for l := steps - 1; l >= 0; l-- {
		clear(in)
		for _, d := range dst {
			in[d] = true
		}
		// Sources of the output rows' in-edges: own ones join the input,
		// other ranks' are asked for.
		need := make([][]int32, n)
		for q, o := range e {
			var mark map[int32]bool
			if q != me {
				mark = map[int32]bool{}
			}
			for _, d := range dst {
				for i := o.indptr[d]; i < o.indptr[d+1]; i++ {
					j := o.src[i]
					if q == me {
						in[j] = true
					} else if !mark[j] {
						mark[j] = true
						need[q] = append(need[q], j)
					}
				}
			}
			slices.Sort(need[q])
		}
		bufs := make([][]byte, n)
		for q := range bufs {
			bufs[q] = int32Bytes(need[q])
		}
		got, err := s.comm.AllToAllV(ctx, bufs)
		if err != nil {
			return nil, fmt.Errorf("sar: exchanging the receptive field: %w", err)
		}
		asked := make([][]int32, n) // inner rows other ranks need
		for r, b := range got {
			if r == me {
				continue
			}
			for _, j := range bytesInt32(b) {
				if j < 0 || int(j) >= len(s.send[r]) {
					return nil, fmt.Errorf("sar: rank %d asks for boundary row %d of %d", r, j, len(s.send[r]))
				}
				v := s.send[r][j]
				in[v] = true
				asked[r] = append(asked[r], v)
			}
		}
		var src []int32
		for v, ok := range in {
			if ok {
				pos[v] = int32(len(src))
				src = append(src, int32(v))
			}
		}
		t := &topo{csr: make([]*tensor.CSR, n), send: make([][]int32, n), src: src, dst: dst, base: make([][]int64, n), ni: ni}
		t.dstInSrc = make([]int32, len(dst))
		for i, d := range dst {
			t.dstInSrc[i] = pos[d]
		}
		for r := range asked {
			t.send[r] = make([]int32, len(asked[r]))
			for i, v := range asked[r] {
				t.send[r][i] = pos[v]
			}
		}
		for q, o := range e {
			indptr := make([]int64, len(dst)+1)
			var idx []int32
			var base []int64
			for k, d := range dst {
				for i := o.indptr[d]; i < o.indptr[d+1]; i++ {
					j := o.src[i]
					if q == me {
						j = pos[j]
					} else {
						j = int32(must(slices.BinarySearch(need[q], j)))
					}
					idx = append(idx, j)
					base = append(base, i)
				}
				indptr[k+1] = int64(len(idx))
			}
			nsrc := len(need[q])
			if q == me {
				nsrc = len(src)
			}
			t.csr[q] = &tensor.CSR{Indptr: indptr, Indices: idx, NumSrc: nsrc}
			t.csr[q].T()
			t.base[q] = base
		}
		topos[l] = t
		dst = src
	}
	if s.mfg == nil {
		s.mfg = map[string][]*topo{}
	}
	s.mfg[key] = topos
	return topos, nil
}

// must returns the position BinarySearch found (it is always there).
func must(i int, found bool) int {
	if !found {
		panic("sar: a needed row is missing from its owner's list")
	}
	return i
}

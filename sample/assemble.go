package sample

import (
	"errors"
	"fmt"

	"github.com/graphmill/graphmill/batch"
	"github.com/graphmill/graphmill/graph"
)

// Neighbors draws, for every node of dst, the in-neighbours that hop hop
// of a minibatch sampled with key and fanout k (-1: all) at that hop draws
// for it (exactly what SampleInto draws for that node at that hop when
// Config.Fanouts[hop] is k; Config.Fanouts is not used). It appends
// the neighbours' ids (this graph's ids) to out, node after node in dst's
// order, sets counts[i] to the number drawn for dst[i], and returns out.
// It is the owner's half of distributed sampling: a rank draws the
// neighbours of the nodes it owns for a minibatch another rank assembles
// (see Assembler).
func (s *Sampler) Neighbors(dst []int32, key uint64, hop, k int, counts []int32, out []int32) ([]int32, error) {
	if hop < 0 {
		return out, fmt.Errorf("sample: hop %d", hop)
	}
	if k == 0 || k < -1 {
		return out, fmt.Errorf("sample: fanout %d; use a positive count or -1 for all neighbours", k)
	}
	if len(counts) != len(dst) {
		return out, fmt.Errorf("sample: %d counts for %d nodes", len(counts), len(dst))
	}
	n := int32(s.g.NumNodes)
	for i, v := range dst {
		if v < 0 || v >= n {
			return out, fmt.Errorf("sample: node %d (index %d) is not a node id in [0, %d)", v, i, n)
		}
	}
	if len(dst) == 0 {
		return out, nil
	}
	sc := s.pool.get()
	defer s.pool.put(sc)
	sc.excl = sc.excl[:0]
	bound := s.spans(sc, dst, 0, k)
	hb := graph.Block{Indptr: make([]int64, len(dst)+1), Indices: make([]int32, bound), EdgeIDs: make([]int64, bound)}
	e := s.draw(sc, dst, hopKey(key, hop), k, &hb)
	for i := range dst {
		counts[i] = int32(hb.Indptr[i+1] - hb.Indptr[i])
	}
	return append(out, hb.Indices[:e]...), nil
}

// Assembler builds a minibatch hop by hop from neighbour lists drawn
// elsewhere (by Sampler.Neighbors on the ranks owning the nodes), with
// SampleInto's relabelling, so that given the same draws it produces the
// minibatch SampleInto does (EdgeIDs and Weights aside, which it leaves
// nil: a model aggregating by edge weights needs a local sampler): the
// minibatch of a Sampler over a graph of NumNodes nodes with the default
// RelabelAuto, or, with NumNodes 0, with RelabelHash. An Assembler is not
// safe for concurrent use; it reuses its buffers.
//
//	a.Begin(mb, seeds, hops)
//	for h := 0; h < hops; h++ {
//		dst := a.Frontier()                 // destinations of hop h
//		... draw counts[i] neighbours of every dst[i] into srcs ...
//		a.AddHop(counts, srcs)
//	}
//	a.Finish()
type Assembler struct {
	// NumNodes is the number of nodes of the graph the ids are in (0:
	// unknown). Set it before Begin.
	NumNodes int

	hash    idMap
	dm      denseMap
	dense   bool // relabelling with dm (see relabel)
	buckets bucketScratch
	mb      *batch.MiniBatch
	nodes   []int32
	hops    int
	h       int
	numDst  []int
	nseeds  int
}

// Begin starts assembling a minibatch for seeds (distinct ids) with hops
// hops into mb (Reset first, its arrays reused).
func (a *Assembler) Begin(mb *batch.MiniBatch, seeds []int32, hops int) error {
	if len(seeds) == 0 {
		return errors.New("sample: empty seed set")
	}
	if hops < 1 {
		return fmt.Errorf("sample: %d hops", hops)
	}
	dense, err := beginRelabel(RelabelAuto, a.NumNodes, &a.dm, &a.hash, seeds)
	if err != nil {
		return err
	}
	a.dense = dense
	mb.Reset()
	a.mb, a.hops, a.h, a.numDst, a.nseeds = mb, hops, 0, a.numDst[:0], len(seeds)
	a.nodes = append(mb.LocalBuffer(), seeds...)
	mb.SetBlocks(hops)
	return nil
}

// Frontier returns the destinations of the next hop (global ids): the
// seeds, then every node reached so far. It is valid until AddHop.
func (a *Assembler) Frontier() []int32 { return a.nodes }

// AddHop adds the next hop's draws: counts[i] sources for Frontier()[i],
// their global ids concatenated in srcs.
func (a *Assembler) AddHop(counts []int32, srcs []int32) error {
	if a.mb == nil || a.h >= a.hops {
		return errors.New("sample: AddHop past the last hop")
	}
	nd := len(a.nodes)
	if len(counts) != nd {
		return fmt.Errorf("sample: %d counts for %d destinations", len(counts), nd)
	}
	hb := &a.mb.Blocks[a.hops-1-a.h]
	hb.Indptr = grow(hb.Indptr, nd+1)
	hb.Indptr[0] = 0
	e := int64(0)
	for i, c := range counts {
		if c < 0 {
			return fmt.Errorf("sample: negative count %d", c)
		}
		e += int64(c)
		hb.Indptr[i+1] = e
	}
	if e != int64(len(srcs)) {
		return fmt.Errorf("sample: counts add up to %d sources, got %d", e, len(srcs))
	}
	hb.Indices = append(hb.Indices[:0], srcs...)
	hb.EdgeIDs, hb.Weights = nil, nil
	a.numDst = append(a.numDst, nd)
	nodes, err := relabel(&a.dense, &a.dm, &a.hash, &a.buckets, hb.Indices, a.nodes, a.h+1 < a.hops, nil)
	a.nodes = nodes
	if err != nil {
		a.mb = nil // the minibatch is unusable: Finish refuses it
		return err
	}
	a.h++
	return nil
}

// Finish lays out the blocks and the input nodes once every hop was added.
func (a *Assembler) Finish() error {
	mb := a.mb
	if mb == nil || a.h != a.hops {
		return fmt.Errorf("sample: Finish after %d of %d hops", a.h, a.hops)
	}
	L := a.hops
	for h := 0; h < L; h++ {
		b := &mb.Blocks[L-1-h]
		b.NumDst, b.NumSrc = a.numDst[h], len(a.nodes)
		if h+1 < L {
			b.NumSrc = a.numDst[h+1]
		}
	}
	mb.SetInputs(a.nodes, a.nseeds)
	a.mb = nil
	return nil
}

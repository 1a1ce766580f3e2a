package sar

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/graphmill/graphmill/dataset/parts"
	"github.com/graphmill/graphmill/dist"
	"github.com/graphmill/graphmill/feature"
	"github.com/graphmill/graphmill/tensor"
)

// Shard is one rank's share of a partitioned graph: the inner nodes of
// the parts it owns (parts Rank*k .. Rank*k+k-1 of P = k*Size parts, merged
// into one local graph), their features, labels and splits, every in-edge
// of those nodes grouped by the rank owning its source, and the exchange
// plan (which of its rows every other rank needs).
type Shard struct {
	Rank, Size int
	// Name, NumNodes, FeatureDim and NumClasses describe the whole dataset.
	Name                             string
	NumNodes, FeatureDim, NumClasses int
	// Parts lists the parts this rank owns.
	Parts []int
	// GlobalIDs holds the original id of every inner node, InDeg its
	// in-degree in the whole graph; Labels its label (-1: none).
	GlobalIDs, InDeg, Labels []int32
	// Train, Val and Test are inner indices; NumTrain, NumVal and NumTest
	// count each split over all ranks.
	Train, Val, Test          []int32
	NumTrain, NumVal, NumTest int
	// X holds the features of the inner nodes (row-normalised when
	// Normalized).
	X          tensor.Matrix
	Normalized bool

	// own[q] holds the in-edges whose source rank q owns (q == Rank: the
	// rank's own rows); send[q] the inner indices rank q needs from this
	// rank, in the order of q's own[Rank] sources.
	own  []ownerEdges
	send [][]int32
	comm dist.Comm
	// Built on first use: the edges with self-loops, and the weighted
	// aggregations.
	loops                    []ownerEdges
	gcn, mean, sum, weighted *linAgg
	keys                     [][]int64
	full                     [2]*topo
	mfg                      map[string][]*topo
}

// ownerEdges are the in-edges of the inner nodes whose sources one rank
// owns, compressed over destinations; sources are positions among the
// rows fetched from that rank (for the shard's own rank, inner indices).
type ownerEdges struct {
	indptr    []int64
	src       []int32
	nsrc      int
	srcGlobal []int32 // original id of every source position
	srcDeg    []int32 // its in-degree in the whole graph
	// w holds every edge's weight in the dataset (nil: it has none).
	w []float32
}

// NumInner returns the number of nodes the shard owns.
func (s *Shard) NumInner() int { return len(s.GlobalIDs) }

// Boundary returns how many of its rows the shard sends to other ranks
// per exchange (the rows every other rank's inner nodes read).
func (s *Shard) Boundary() int {
	n := 0
	for q, l := range s.send {
		if q != s.Rank {
			n += len(l)
		}
	}
	return n
}

// Fetched returns how many rows the shard receives per exchange.
func (s *Shard) Fetched() int {
	n := 0
	for q, o := range s.own {
		if q != s.Rank {
			n += o.nsrc
		}
	}
	return n
}

// NumEdges returns the number of in-edges of the inner nodes.
func (s *Shard) NumEdges() int {
	n := 0
	for _, o := range s.own {
		n += len(o.src)
	}
	return n
}

// ShardOptions configure Open.
type ShardOptions struct {
	// Normalize row-normalises the features (as train's
	// NormalizeFeatures); it is skipped on every rank when any rank's
	// features hold a negative value.
	Normalize bool
}

// Open reads this rank's parts of the partitioned dataset in dir (P parts
// on comm.Size() ranks, P a multiple of the size) and agrees the exchange
// plan with the other ranks. Every rank calls it.
func Open(ctx context.Context, comm dist.Comm, dir string, o ShardOptions) (*Shard, error) {
	book, err := parts.ReadBook(dir)
	if err != nil {
		return nil, err
	}
	n := comm.Size()
	if book.NumParts%n != 0 {
		return nil, fmt.Errorf("sar: %s has %d parts, which %d ranks cannot share evenly: partition into a multiple of %d parts", dir, book.NumParts, n, n)
	}
	k := book.NumParts / n
	var ps []*parts.Part
	defer func() {
		for _, p := range ps {
			p.Close()
		}
	}()
	for i := 0; i < k; i++ {
		p, err := parts.OpenPart(dir, book, comm.Rank()*k+i)
		if err != nil {
			return nil, err
		}
		ps = append(ps, p)
	}
	return build(ctx, comm, book, ps, o)
}

// build merges the rank's parts into a shard.
func build(ctx context.Context, comm dist.Comm, book *parts.Book, ps []*parts.Part, o ShardOptions) (*Shard, error) {
	n, me := comm.Size(), comm.Rank()
	k := book.NumParts / n
	// partOff[p]: where part p's inner nodes start in its rank's order.
	partOff := make([]int32, book.NumParts)
	for p := range book.Parts {
		if p%k != 0 {
			partOff[p] = partOff[p-1] + int32(book.Parts[p-1].NumInner)
		}
	}
	m0 := ps[0].Meta
	s := &Shard{Rank: me, Size: n, Name: book.Name, NumNodes: book.NumNodes, FeatureDim: m0.FeatureDim, NumClasses: m0.NumClasses, comm: comm}
	for _, p := range ps {
		s.Parts = append(s.Parts, p.Index)
		if p.Meta.FeatureDim != s.FeatureDim || p.Meta.NumClasses != s.NumClasses {
			return nil, fmt.Errorf("sar: part %d has %d features and %d classes, part %d has %d and %d", p.Index, p.Meta.FeatureDim, p.Meta.NumClasses, ps[0].Index, s.FeatureDim, s.NumClasses)
		}
		ni := p.NumInner()
		off := int32(len(s.GlobalIDs))
		s.GlobalIDs = append(s.GlobalIDs, p.GlobalIDs[:ni]...)
		s.InDeg = append(s.InDeg, p.InDegrees[:ni]...)
		if p.Labels != nil {
			s.Labels = append(s.Labels, p.Labels[:ni]...)
		} else {
			s.Labels = append(s.Labels, slices.Repeat([]int32{-1}, ni)...)
		}
		for _, sp := range []struct {
			dst *[]int32
			src []int32
		}{{&s.Train, p.Train}, {&s.Val, p.Val}, {&s.Test, p.Test}} {
			for _, v := range sp.src {
				*sp.dst = append(*sp.dst, off+v)
			}
		}
	}
	// Sources of every in-edge: (owner rank, index in the owner's order).
	type key struct{ rank, idx int32 }
	ni := len(s.GlobalIDs)
	s.own = make([]ownerEdges, n)
	pos := make([]map[int32]int32, n) // remote owner index -> position
	for q := range pos {
		pos[q] = map[int32]int32{}
	}
	var owners []key
	var degs, globals []int32
	var weights []float32
	weighted := ps[0].Graph.Weights != nil
	indptr := make([]int64, ni+1)
	d := 0
	for _, p := range ps {
		g := p.Graph
		if (g.Weights != nil) != weighted {
			return nil, fmt.Errorf("sar: part %d has edge weights and part %d has none (were they written from one dataset?)", p.Index, ps[0].Index)
		}
		nin := int32(p.NumInner())
		for v := 0; v < p.NumInner(); v++ {
			for e := g.Indptr[v]; e < g.Indptr[v+1]; e++ {
				u := g.Indices[e]
				var kq key
				if u < nin {
					kq = key{int32(me), partOff[p.Index] + u}
				} else {
					h := u - nin
					q := p.HaloParts[h]
					kq = key{q / int32(k), partOff[q] + p.HaloLocal[h]}
					if kq.rank != int32(me) {
						pos[kq.rank][kq.idx] = 0
					}
				}
				owners = append(owners, kq)
				if weighted {
					weights = append(weights, g.Weights[e])
				}
				degs = append(degs, p.InDegrees[u])
				globals = append(globals, p.GlobalIDs[u])
			}
			d++
			indptr[d] = int64(len(owners))
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// Remote rows in increasing owner index.
	need := make([][]int32, n)
	for q := range pos {
		if q == me {
			continue
		}
		for idx := range pos[q] {
			need[q] = append(need[q], idx)
		}
		slices.Sort(need[q])
		for i, idx := range need[q] {
			pos[q][idx] = int32(i)
		}
		s.own[q].nsrc = len(need[q])
		s.own[q].srcGlobal = make([]int32, len(need[q]))
		s.own[q].srcDeg = make([]int32, len(need[q]))
	}
	s.own[me].nsrc = ni
	s.own[me].srcGlobal = s.GlobalIDs
	s.own[me].srcDeg = s.InDeg
	for q := range s.own {
		s.own[q].indptr = make([]int64, ni+1)
		if weighted {
			s.own[q].w = []float32{}
		}
	}
	for v := 0; v < ni; v++ {
		for e := indptr[v]; e < indptr[v+1]; e++ {
			kq := owners[e]
			oe := &s.own[kq.rank]
			i := kq.idx
			if int(kq.rank) != me {
				i = pos[kq.rank][kq.idx]
				oe.srcGlobal[i], oe.srcDeg[i] = globals[e], degs[e]
			}
			oe.src = append(oe.src, i)
			if weighted {
				oe.w = append(oe.w, weights[e])
			}
		}
		for q := range s.own {
			s.own[q].indptr[v+1] = int64(len(s.own[q].src))
		}
	}
	owners, degs, globals, weights = nil, nil, nil, nil
	// Tell every owner which of its rows this rank reads.
	bufs := make([][]byte, n)
	for q := range bufs {
		bufs[q] = int32Bytes(need[q])
	}
	got, err := comm.AllToAllV(ctx, bufs)
	if err != nil {
		return nil, fmt.Errorf("sar: exchanging the boundary lists: %w", err)
	}
	s.send = make([][]int32, n)
	for q, b := range got {
		if q == me {
			continue
		}
		l := bytesInt32(b)
		for _, v := range l {
			if v < 0 || int(v) >= ni {
				return nil, fmt.Errorf("sar: rank %d asks for row %d of rank %d, which owns %d nodes (do all ranks read the same partitioned dataset?)", q, v, me, ni)
			}
		}
		s.send[q] = l
	}
	// Split sizes over all ranks.
	empty := int64(0)
	if ni == 0 {
		empty = 1
	}
	counts := []int64{int64(len(s.Train)), int64(len(s.Val)), int64(len(s.Test)), int64(ni), empty}
	if err := comm.AllReduce(ctx, counts, dist.Sum); err != nil {
		return nil, err
	}
	if counts[4] > 0 {
		// Every rank knows, so every rank stops with the same message.
		return nil, fmt.Errorf("sar: %d of %d ranks would hold no node (their parts of %s are empty): partition again into parts that all hold nodes, or run fewer ranks", counts[4], n, book.Name)
	}
	s.NumTrain, s.NumVal, s.NumTest = int(counts[0]), int(counts[1]), int(counts[2])
	if int(counts[3]) != s.NumNodes {
		return nil, fmt.Errorf("sar: the ranks own %d nodes in all, the dataset has %d", counts[3], s.NumNodes)
	}
	if err := s.loadFeatures(ctx, ps, o.Normalize); err != nil {
		return nil, err
	}
	return s, nil
}

// loadFeatures reads the inner rows of every part into X.
func (s *Shard) loadFeatures(ctx context.Context, ps []*parts.Part, normalize bool) error {
	stores := make([]*feature.Store, len(ps))
	defer func() {
		for _, st := range stores {
			if st != nil {
				st.Close()
			}
		}
	}()
	ok := int64(1)
	for i, p := range ps {
		if p.FeatureArray == nil {
			return fmt.Errorf("sar: part %d has no features: training needs them", p.Index)
		}
		st, err := feature.Open(p.Dataset, feature.Options{Workers: 1})
		if err != nil {
			return err
		}
		stores[i] = st
		if normalize && ok == 1 {
			// Normalising reads the halo rows too; that is harmless.
			good, err := st.NormalizeRows(ctx)
			if err != nil {
				return err
			}
			if !good {
				ok = 0
			}
		}
	}
	if normalize {
		flag := []int64{ok}
		if err := s.comm.AllReduce(ctx, flag, dist.Sum); err != nil {
			return err
		}
		s.Normalized = int(flag[0]) == s.Size
		if !s.Normalized {
			// Another rank saw negative features: read them as stored.
			for i, p := range ps {
				stores[i].Close()
				st, err := feature.Open(p.Dataset, feature.Options{Workers: 1})
				if err != nil {
					stores[i] = nil
					return err
				}
				stores[i] = st
			}
		}
	}
	s.X = tensor.New(s.NumInner(), s.FeatureDim)
	row := 0
	for i, p := range ps {
		ni := p.NumInner()
		ids := make([]int32, ni)
		for v := range ids {
			ids[v] = int32(v)
		}
		if err := stores[i].Gather(ctx, ids, s.X.Data[row*s.FeatureDim:(row+ni)*s.FeatureDim]); err != nil {
			return fmt.Errorf("sar: features of part %d: %w", p.Index, err)
		}
		row += ni
	}
	return nil
}

func int32Bytes(v []int32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], uint32(x))
	}
	return b
}

func bytesInt32(b []byte) []int32 {
	v := make([]int32, len(b)/4)
	for i := range v {
		v[i] = int32(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

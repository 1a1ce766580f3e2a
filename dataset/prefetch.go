package dataset

import (
	"cmp"
	"slices"
)

// NeighbourPrefetcher returns a function for sample.Config.BeforeHop that
// reads a graph larger than memory as a disk wants to be read: given the
// nodes whose in-neighbour lists a hop is about to read, it hands the
// kernel the pages of their offsets (indptr) and then of their lists
// (indices), each coalesced into runs, with MADV_WILLNEED, which starts
// the reads without waiting: the hop's page faults then find their pages
// read or in flight, instead of reading one page per faulting thread. It
// also advises random access on both mappings, so that no fault pulls a
// readahead window. It is safe for concurrent use.
func (d *Dataset) NeighbourPrefetcher() func(nodes []int32) {
	if d.indptr == nil || d.indices == nil {
		return func([]int32) {}
	}
	d.indptr.AdviseRandom()
	d.indices.AdviseRandom()
	indptr := d.Graph.Indptr
	return func(nodes []int32) {
		spans := make([][2]int64, 0, len(nodes))
		for _, v := range nodes {
			spans = append(spans, [2]int64{int64(v) * 8, int64(v)*8 + 16})
		}
		willNeed(d.indptr.WillNeed, spans)
		spans = spans[:0]
		for _, v := range nodes {
			if lo, hi := indptr[v], indptr[v+1]; hi > lo {
				spans = append(spans, [2]int64{lo * 4, hi * 4})
			}
		}
		willNeed(d.indices.WillNeed, spans)
	}
}

// willNeed hands the byte ranges of spans, page-rounded, sorted and
// merged where they touch, to will.
func willNeed(will func(off, n int64), spans [][2]int64) {
	const page = 4096
	for i, s := range spans {
		spans[i] = [2]int64{s[0] &^ (page - 1), (s[1] + page - 1) &^ (page - 1)}
	}
	slices.SortFunc(spans, func(a, b [2]int64) int { return cmp.Compare(a[0], b[0]) })
	for i := 0; i < len(spans); {
		lo, hi := spans[i][0], spans[i][1]
		j := i + 1
		for ; j < len(spans) && spans[j][0] <= hi; j++ {
			hi = max(hi, spans[j][1])
		}
		will(lo, hi-lo)
		i = j
	}
}

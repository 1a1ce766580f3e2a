package dataset

import "hash/fnv"

// Fingerprint is a cheap fingerprint of the dataset's contents: the
// graph's node and edge counts and up to 4,096 evenly spaced entries of
// each CSC array, of the labels and of each split, and 64 evenly spaced
// feature rows as stored. Copies of one dataset share it; one of the same
// sizes but other edges, labels, splits or features has another (a
// sampler service and its trainers, data-parallel ranks compare it). It
// is never 0.
func (d *Dataset) Fingerprint() uint64 {
	h := fnv.New64a()
	var b [8]byte
	put := func(v uint64) {
		for i := range b {
			b[i] = byte(v >> (8 * i))
		}
		h.Write(b[:])
	}
	sampled := func(n int, at func(i int) uint64) {
		put(uint64(n))
		for i := 0; i < n; i += max(1, n/4096) {
			put(at(i))
		}
	}
	g := d.Graph
	put(uint64(g.NumNodes))
	sampled(len(g.Indptr), func(i int) uint64 { return uint64(g.Indptr[i]) })
	sampled(len(g.Indices), func(i int) uint64 { return uint64(g.Indices[i]) })
	for _, a := range [][]int32{d.Labels, d.Train, d.Val, d.Test} {
		sampled(len(a), func(i int) uint64 { return uint64(uint32(a[i])) })
	}
	if a, n := d.FeatureArray, d.Meta.NumNodes; a != nil && n > 0 {
		row := len(a.Data) / n
		h.Write([]byte(a.DType))
		for i := 0; i < 64; i++ {
			v := int(int64(i) * int64(n) / 64)
			h.Write(a.Data[v*row : (v+1)*row])
		}
	}
	return h.Sum64() | 1 // never 0, which means "no check"
}

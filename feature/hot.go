package feature

import "math/bits"

// hotSet is a Store's hot cache's node-to-slot map as a rank bitmap: bit
// v says whether node v is cached, and its slot is the number of cached
// nodes below it (the cache is in id order). It takes 0.14 bytes a node
// where an array of slots takes 4: 1.3 MB for 10M nodes against 40 MB,
// so that the lookup every gathered row makes finds its line in the
// cache instead of adding a second memory miss to the row's own.
// Measured (BenchmarkGatherCached, AMD EPYC Zen 5, alternated with the
// array of slots): 100k random rows of 8 floats out of 10M, a tenth
// cached, at 0.59-0.74 of the paired random-row ceiling against
// 0.47-0.55; rows of 128 floats out of 1M the same within noise
// (0.83-0.92 against 0.76-0.90). Counts every 64 nodes instead of 512
// (no popcount loop) measured the same. (Written here: a rank over a
// static bitmap is a few lines, and the succinct data structure
// libraries for Go are unmaintained.)
type hotSet struct {
	bits []uint64 // bit v%64 of bits[v/64]: node v is cached
	base []uint32 // cached nodes below node hotBlock*i
}

// hotBlock is the nodes a hotSet counts once: a cache line of bits, so a
// lookup reads one line of bits (and one count from a table 64 times
// smaller).
const hotBlock = 512

// newHotSet returns the set of n nodes whose bits are set in b
// (len(b) = (n+63)/64, no bit at n or above).
func newHotSet(b []uint64) hotSet {
	words := hotBlock / 64
	h := hotSet{bits: b, base: make([]uint32, (len(b)+words-1)/words)}
	c := 0
	for i, w := range b {
		if i%words == 0 {
			h.base[i/words] = uint32(c)
		}
		c += bits.OnesCount64(w)
	}
	return h
}

// slot returns node v's slot (v in range) and whether it is cached.
func (h *hotSet) slot(v int32) (int, bool) {
	i := uint(v) / 64
	w := h.bits[i]
	if w>>(uint(v)%64)&1 == 0 {
		return 0, false
	}
	c := int(h.base[i/(hotBlock/64)]) + bits.OnesCount64(w&(1<<(uint(v)%64)-1))
	for _, x := range h.bits[i&^(hotBlock/64-1) : i] {
		c += bits.OnesCount64(x)
	}
	return c, true
}

// bytes is the memory the set takes (0 for a nil set).
func (h *hotSet) bytes() int64 {
	if h == nil {
		return 0
	}
	return 8*int64(len(h.bits)) + 4*int64(len(h.base))
}

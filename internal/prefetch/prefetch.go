// Package prefetch asks the memory system for cache lines ahead of use.
// Go has no prefetch intrinsic, and a plain load of a line that misses
// would hold the core's reorder buffer until the data came back; the
// x86 PREFETCHT0 instruction retires at once, so a loop that prefetches
// the lines of its next items while it computes on the current ones
// overlaps its cache misses with its arithmetic. That is the whole point
// of this package: it is assembly on amd64 (without the noasm tag) and
// does nothing elsewhere, where the callers are merely slower.
//
// Each call prefetches a batch of lines, so that the cost of a call from
// Go (a few nanoseconds) is shared by many lines.
package prefetch

// Spans32 prefetches the lines of base[lo:hi] for every pair (lo, hi) of
// offs (lo at even positions), at most 8 lines from lo on: the neighbour
// lists of a CSC's nodes given their ranges. Every range must be within
// base (or base empty: nothing is prefetched).
func Spans32(base []int32, offs []int64) {
	if len(base) == 0 || len(offs) < 2 {
		return
	}
	spans32(&base[0], &offs[0], len(offs)/2)
}

// Rows64 prefetches the lines of base[ids[j]] and base[ids[j]+1] for every
// j: the ranges in a CSC's indptr of a list of node ids. Every id + 1 must
// be within base.
func Rows64(base []int64, ids []int32) {
	if len(base) == 0 || len(ids) == 0 {
		return
	}
	rows64(&base[0], &ids[0], len(ids))
}

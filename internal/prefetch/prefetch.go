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

import "unsafe"

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

// Rows32 prefetches the line of base[ids[j]] for every j: the entries of
// a table indexed by node id (sample's dense relabelling map). Ids are
// not checked (a prefetch never faults).
func Rows32(base []uint32, ids []int32) {
	if len(base) == 0 || len(ids) == 0 {
		return
	}
	rows32(&base[0], &ids[0], len(ids))
}

// Rows prefetches every line of the rows ids[j] of a table of rows of
// rowBytes bytes each, stored from base on: the feature rows a gather is
// about to copy. Ids are not checked: a row outside base is harmless (a
// prefetch never faults), merely useless.
func Rows(base []byte, rowBytes int, ids []int32) {
	if len(base) == 0 || len(ids) == 0 || rowBytes <= 0 {
		return
	}
	rowsBytes(&base[0], rowBytes, &ids[0], len(ids))
}

// RowsAhead returns how many rows of rowBytes bytes a loop should have
// prefetched ahead of the one it copies, and in groups of how many it
// should prefetch them: about 4 KiB ahead (enough to cover a miss's
// latency at the copy's rate), at least one row and at most MaxRowsAhead.
func RowsAhead(rowBytes int) (ahead, group int) {
	ahead = min(max(4096/max(rowBytes, 1), 1), MaxRowsAhead)
	return ahead, max(ahead/2, 1)
}

// MaxRowsAhead is the most rows RowsAhead says to prefetch ahead.
const MaxRowsAhead = 16

// zeroID is the single row index of Bytes.
var zeroID = [1]int32{0}

// Bytes prefetches every line of b.
func Bytes(b []byte) {
	if len(b) == 0 {
		return
	}
	rowsBytes(&b[0], len(b), &zeroID[0], 1)
}

// Floats prefetches every line of f: rows a loop is about to write, whose
// stores would otherwise wait for their lines one by one.
func Floats(f []float32) {
	if len(f) == 0 {
		return
	}
	Bytes(unsafe.Slice((*byte)(unsafe.Pointer(&f[0])), 4*len(f)))
}

// At32 prefetches the line of base[pos[j]] for every j: the sampled
// entries of a CSC's neighbour lists, given their positions. Positions
// are not checked (a prefetch never faults).
func At32(base []int32, pos []int64) {
	if len(base) == 0 || len(pos) == 0 {
		return
	}
	at32(&base[0], &pos[0], len(pos))
}

// Masks32 prefetches, for every j, the lines of base[offs[2j]+t] for each
// set bit t of masks[j]: the entries a draw took from the neighbour list
// starting at offs[2j] (lo at even positions of offs, as for Spans32).
// Positions are not checked (a prefetch never faults).
func Masks32(base []int32, offs []int64, masks []uint64) {
	n := min(len(offs)/2, len(masks))
	if len(base) == 0 || n == 0 {
		return
	}
	masks32(&base[0], &offs[0], &masks[0], n)
}

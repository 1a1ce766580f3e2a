package feature

import (
	"container/heap"
	"math"
	"slices"
	"sync"
)

// never is the next use of a row not used again in the planned batches.
const never = math.MaxInt32

// superbatch is Ginex's cache policy over a Disk's cache: the rows of the
// next batches are known (Plan), and a missed row is admitted in place of
// the cached row used farthest ahead. Rows not used again in the planned
// batches go first, coldest first by the static order the cache was
// filled in (so a short look-ahead does not throw away hot rows it
// happens not to see); a missed row not used again is read but not
// admitted. Batches are numbered from 0 across plans.
type superbatch struct {
	mu sync.Mutex

	slot  []int32 // the cache's node-to-slot map (the Disk's own)
	order []int32 // the static order, hottest first
	// rank and next are by slot: the cached row's position in the static
	// order (a row admitted later ranks below all the rows it started
	// with: never), and its next use, or never.
	rank []int32
	next []int32
	// cursor walks order from the coldest cached row up: the rows the
	// cache started with at positions at or beyond it are candidates only
	// through returned.
	cursor   int
	returned rankHeap // cached rows whose last planned use has passed
	ahead    useHeap  // cached rows used again, farthest first

	// The plan: the ids of the next batches and each id's next use.
	batches [][]int32
	nexts   [][]int32
	pos     int     // the next planned batch to gather
	seq     int32   // the number of batches[0]
	last    []int32 // Plan's scratch: a node's first use in the plan, or never

	admitted, evicted, planned, unplanned int64
}

// newSuperbatch starts the policy over a cache of cached rows, the first
// of order, placed as slot says.
func newSuperbatch(slot []int32, cached int, order []int32) *superbatch {
	sb := &superbatch{slot: slot, order: order, rank: make([]int32, cached), next: make([]int32, cached)}
	for i := range sb.rank {
		sb.rank[i], sb.next[i] = never, never
	}
	for i, n := 0, 0; i < len(order) && n < cached; i++ {
		if sl := slot[order[i]]; sl >= 0 && sb.rank[sl] == never {
			sb.rank[sl] = int32(i)
			n++
			sb.cursor = i + 1
		}
	}
	return sb
}

// nextOf is cached row v's next use.
func (sb *superbatch) nextOf(v int32) int32 { return sb.next[sb.slot[v]] }

// Plan hands a superbatch cache the input rows of the next batches, in
// the order Gather will be called with them (the ids are kept; the
// caller must not modify them). Batches planned before and not yet
// gathered are dropped. It does nothing without a superbatch cache
// (DiskOptions.Superbatch).
func (s *Disk) Plan(batches [][]int32) {
	if sb := s.sb; sb != nil {
		sb.mu.Lock()
		defer sb.mu.Unlock()
		sb.plan(batches)
	}
}

// plan is Plan.
func (sb *superbatch) plan(batches [][]int32) {
	slot := sb.slot
	sb.seq += int32(sb.pos)
	sb.batches, sb.pos = batches, 0
	// Next uses, from a backward pass; last holds each row's first use
	// so far (never elsewhere: the rows touched are reset after).
	if sb.last == nil {
		sb.last = make([]int32, len(slot))
		for i := range sb.last {
			sb.last[i] = never
		}
	}
	last := sb.last
	sb.nexts = make([][]int32, len(batches))
	for t := len(batches) - 1; t >= 0; t-- {
		nx := make([]int32, len(batches[t]))
		for i, v := range batches[t] {
			nx[i] = last[v]
			last[v] = sb.seq + int32(t)
		}
		sb.nexts[t] = nx
	}
	// Every cached row's next use is now its first in the plan, or never
	// (rows used in the last plan returned to never at their last use):
	// what the heaps held is stale but for the returned rows, kept once.
	sb.ahead = sb.ahead[:0]
	seen := make([]uint64, (len(slot)+63)/64)
	kept := sb.returned[:0]
	for _, e := range sb.returned {
		if slot[e.v] >= 0 && sb.nextOf(e.v) == never && seen[e.v/64]&(1<<(e.v%64)) == 0 {
			seen[e.v/64] |= 1 << (e.v % 64)
			kept = append(kept, e)
		}
	}
	sb.returned = kept
	heap.Init(&sb.returned)
	for _, b := range batches {
		for _, v := range b {
			t := last[v]
			if t == never {
				continue // seen already
			}
			last[v] = never
			if sl := slot[v]; sl >= 0 {
				sb.next[sl] = t
				heap.Push(&sb.ahead, use{t, v})
			}
		}
	}
}

// take returns the next uses of ids when ids is the next planned batch
// (and moves past it), or nil.
func (sb *superbatch) take(ids []int32) []int32 {
	if sb.pos < len(sb.batches) && slices.Equal(sb.batches[sb.pos], ids) {
		nx := sb.nexts[sb.pos]
		sb.pos++
		sb.planned++
		return nx
	}
	sb.unplanned++
	return nil
}

// touch records that cached row v was used, next used at nx. A row not
// used again in the plan becomes a candidate for eviction again: the
// cursor finds the rows it started with that it has not passed yet; the
// others (passed over while in use, or admitted since) go on the returned
// heap, which so holds the cold tail only.
func (sb *superbatch) touch(v, nx int32) {
	sl := sb.slot[v]
	sb.next[sl] = nx
	if nx == never {
		if sb.rank[sl] >= int32(sb.cursor) {
			heap.Push(&sb.returned, ranked{sb.rank[sl], v})
		}
	} else {
		heap.Push(&sb.ahead, use{nx, v})
	}
}

// admit decides whether missed row v, next used at nx, takes a place in
// the cache, evicting for it: it returns the slot to fill with the row,
// or -1 (a row not needed again in the plan, or needed later than every
// cached one, is read and not kept).
func (sb *superbatch) admit(v, nx int32) int32 {
	if sb.slot[v] >= 0 { // a repeated id, admitted at its first position
		sb.touch(v, nx)
		return -1
	}
	if nx == never {
		return -1
	}
	u := sb.coldestUnused()
	if u < 0 {
		if u = sb.farthest(); u < 0 || sb.nextOf(u) <= nx {
			return -1
		}
	}
	sl := sb.slot[u]
	sb.slot[u], sb.slot[v] = -1, sl
	sb.rank[sl] = never
	sb.evicted++
	sb.admitted++
	sb.touch(v, nx)
	return sl
}

// admit is superbatch.admit, copying the row's stored bytes b into its
// slot.
func (s *Disk) admit(v, nx int32, b []byte) {
	if sl := s.sb.admit(v, nx); sl >= 0 {
		copy(s.cache[int(sl)*s.rowB:int(sl+1)*s.rowB], b)
	}
}

// coldestUnused returns the coldest cached row not used again in the
// plan, or -1: the colder of the returned rows' top and the static
// order's coldest remaining row.
func (sb *superbatch) coldestUnused() int32 {
	slot := sb.slot
	for sb.returned.Len() > 0 {
		top := sb.returned[0]
		if slot[top.v] >= 0 && sb.nextOf(top.v) == never {
			break
		}
		heap.Pop(&sb.returned) // stale
	}
	for sb.cursor > 0 {
		// The row the cache started with at this position, if it is
		// still there and not used again in the plan.
		v := sb.order[sb.cursor-1]
		if sl := slot[v]; sl >= 0 && sb.rank[sl] == int32(sb.cursor-1) && sb.next[sl] == never {
			break
		}
		sb.cursor-- // evicted, or used in the plan (it returns through returned)
	}
	switch {
	case sb.returned.Len() > 0 && (sb.cursor == 0 || sb.returned[0].rank > int32(sb.cursor-1)):
		return heap.Pop(&sb.returned).(ranked).v
	case sb.cursor > 0:
		sb.cursor--
		return sb.order[sb.cursor]
	}
	return -1
}

// farthest returns the cached row whose next use is farthest, or -1.
func (sb *superbatch) farthest() int32 {
	for sb.ahead.Len() > 0 {
		top := sb.ahead[0]
		if sb.slot[top.v] >= 0 && sb.nextOf(top.v) == top.next {
			return top.v
		}
		heap.Pop(&sb.ahead) // stale
	}
	return -1
}

// use is a cached row and its next use.
type use struct{ next, v int32 }

// useHeap is a max-heap of next uses.
type useHeap []use

func (h useHeap) Len() int           { return len(h) }
func (h useHeap) Less(i, j int) bool { return h[i].next > h[j].next }
func (h useHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *useHeap) Push(x any)        { *h = append(*h, x.(use)) }
func (h *useHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// ranked is a cached row and its rank in the static order.
type ranked struct{ rank, v int32 }

// rankHeap is a max-heap of ranks: the coldest first.
type rankHeap []ranked

func (h rankHeap) Len() int           { return len(h) }
func (h rankHeap) Less(i, j int) bool { return h[i].rank > h[j].rank }
func (h rankHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *rankHeap) Push(x any)        { *h = append(*h, x.(ranked)) }
func (h *rankHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// ReplaySuperbatch runs the superbatch policy (DiskOptions.Superbatch)
// over trace, the input rows of batches in gather order, planned
// superbatch batches at a time, on a cache of rows rows of n nodes
// starting with the first of order, without reading anything: as
// Gather does, each batch's hits are taken first, then its misses in id
// order, and miss is called with each. It returns the hits. Benchmarks
// compare policies with it on a sampled epoch.
func ReplaySuperbatch(trace [][]int32, order []int32, n, rows, ahead int, miss func(batch int, v int32)) (hits int64, err error) {
	var sb *superbatch
	var slot []int32
	if rows > 0 {
		var cached int
		if slot, cached, _, err = cacheSlots(n, 1, int64(rows), order); err != nil {
			return 0, err
		}
		if cached > 0 {
			sb = newSuperbatch(slot, cached, order)
		}
	}
	ahead = max(ahead, 1)
	var missed []uint64
	for s0 := 0; s0 < len(trace); s0 += ahead {
		if sb != nil {
			sb.plan(trace[s0:min(len(trace), s0+ahead)])
		}
		for t := s0; t < min(len(trace), s0+ahead); t++ {
			var next []int32
			if sb != nil {
				next = sb.take(trace[t])
			}
			missed = missed[:0]
			for i, v := range trace[t] {
				if sb != nil && slot[v] >= 0 {
					hits++
					sb.touch(v, next[i])
					continue
				}
				missed = append(missed, uint64(v)<<32|uint64(i))
			}
			slices.Sort(missed)
			for _, k := range missed {
				v, i := int32(k>>32), int(uint32(k))
				miss(t, v)
				if sb != nil {
					sb.admit(v, next[i])
				}
			}
		}
	}
	return hits, nil
}

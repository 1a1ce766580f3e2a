package sample

import "math/bits"

// A hop that a later hop draws for (every hop but the last) numbers its
// new nodes bucket by bucket: the nodes whose ids share id>>shift get
// consecutive local ids, the buckets in increasing order. The next hop
// reads the offsets and neighbour lists of those nodes in local order,
// and so sweeps the graph from its low ids to its high ones, a window of
// ids at a time, instead of jumping at random: offsets share cache lines,
// the lists of a window share DRAM pages and the hardware prefetchers
// follow. Buckets hold 1024 ids, or more where that would make more than
// 4096 buckets (graphs of over 4M nodes): the counting sort's passes then
// stay in the core's first-level cache.
//
// Measured (Xeon with AMX, 2 MiB of L2 a core, 'bench sample', [15,10,5],
// alternated with the first-seen numbering): on the 1M-node, 20M-edge
// synthetic graph (--quick) the last hop drew its 446k edges in 7.5-8.1
// ns an edge against 12.3-13.3, the middle hop's relabelling rose from
// 2.8 to 6.3-7.3 ns an edge, and the minibatch took 0.80 of the time:
// 0.86-0.96 of the read ceiling with one worker, 0.82-0.91 with two
// (0.70-0.77 and 0.63-0.66 before). On the 10M-node, 200M-edge graph
// [15,10,5] 0.61-0.72 against 0.47-0.53 (one worker), [25,10] 0.72-0.87
// against 0.63-0.69. Buckets of 256 ids did as well as 1024 on the
// 1M-node graph, of 2048 a little worse, of 4096 markedly worse
// (0.73-0.81); on the 10M-node graph 4096 did as well as 1024, with a
// cheaper sort (hence at most 4096 buckets). Taking the
// last hop's sources by bucket too (its new nodes are not drawn for) cost
// more than it saved: drawing and relabelling it took 12.1 against 8.6
// ns an edge on the 1M-node graph.
//
// A hop whose ids all lie below 1<<orderMinBits is one bucket, and is
// relabelled in edge order: the offsets of 2^18 nodes take 2 MiB, about
// a core's second-level cache, and sorting does not pay for itself.
// Measured on AMD EPYC Zen 5 (1 MiB of L2 a core), synthetic graphs of
// 20 edges a node in huge pages, ns an edge ordered against not: on Cora
// 5.2 against 3.8 ([25,10]) and 7.4 against 4.9 ([15,10,5]); at 100k
// nodes 6.5 against 6.0 and 8.4 against 7.9; at 256k 6.6 against 6.4
// and 9.1 against 8.3; at 512k 7.0 against 6.5 and 9.5 against 9.1; at
// 1M the same; at 2M (without huge pages) 11.6 against 12.7 and 16.8
// against 18.9.
const (
	bucketBits      = 10 // log2 of the narrowest bucket's ids
	bucketCountBits = 12 // log2 of the most buckets
)

// orderMinBits is log2 of the fewest ids worth ordering (a variable so
// that tests can order small graphs).
var orderMinBits = 18

// bucketShift returns the bucket width (log2 ids) for ids up to maxID:
// one bucket for all of them below 1<<orderMinBits.
func bucketShift(maxID int) uint {
	n := bits.Len(uint(maxID))
	if n <= orderMinBits {
		return uint(orderMinBits)
	}
	return uint(max(bucketBits, n-bucketCountBits))
}

// bucketScratch is the working memory of the bucket ordering.
type bucketScratch struct {
	start, cur []int32 // per bucket: first position, cursor
	keys       []int32 // relabelBuckets: ids in bucket order, then their local ids; renumber: each new node's new local id
	moved      []int32 // renumber: the new nodes in bucket order
	keyed      []int32 // the key ids of the ids (with key ids)
}

// bucketIDs returns the ids whose buckets order ids, and the largest of
// them (a negative id counts as a large one): ids themselves, or with key
// ids (Config.KeyIDs: a packed graph's or a partition's nodes keyed by
// their ids in the original or whole graph) their keys, so that a
// minibatch is numbered as the original graph numbers it (and trains
// bitwise as it does).
func (bs *bucketScratch) bucketIDs(ids, key []int32) ([]int32, uint32) {
	var top uint32
	if key == nil {
		for _, u := range ids {
			top = max(top, uint32(u))
		}
		return ids, top
	}
	bs.keyed = grow(bs.keyed, len(ids))
	for i, u := range ids {
		k := u // an id outside the graph (the hash map does not check) keys itself
		if uint(u) < uint(len(key)) {
			k = key[u]
		}
		bs.keyed[i] = k
		top = max(top, uint32(k))
	}
	return bs.keyed, top
}

// counts sets bs.start to the first position of every bucket of the
// bucket ids kb (width shift, nb buckets; start gets nb+1 entries, the
// last one len(kb)) and bs.cur to a copy of the first nb.
func (bs *bucketScratch) counts(kb []int32, shift uint, nb int) {
	bs.start = grow(bs.start, nb+1)
	st := bs.start
	clear(st)
	for _, u := range kb {
		st[uint32(u)>>shift+1]++
	}
	for b := 1; b <= nb; b++ {
		st[b] += st[b-1]
	}
	bs.cur = append(bs.cur[:0], st[:nb]...)
}

// relabelBuckets is relabel with the ids taken bucket by bucket (in edge
// order within a bucket; buckets of their key ids where key is not nil),
// so that the new nodes are numbered so. It distributes the ids into
// buckets (a stable counting sort), relabels them in that order and puts
// the local ids back in edge order: passes over ids in cache, which cost
// less than renumbering the new nodes afterwards (their entries of the
// array would be written again, far apart: on the 10M-node graph 28.5
// against 22.8 ns an edge for the [15,10,5] middle hop). On the 1M-node
// graph's middle hops it takes 4.5-4.7 ns an id, against 1.8-2.0 for
// relabel in edge order (5.6 with a separate pass checking the ids).
func (m *denseMap) relabelBuckets(bs *bucketScratch, idx, nodes, key []int32) ([]int32, int32, bool) {
	if key == nil && len(m.tab) <= 1<<orderMinBits {
		return m.relabel(idx, nodes) // one bucket, whatever the ids
	}
	kb, top := bs.bucketIDs(idx, nil)
	if uint(top) >= uint(len(m.tab)) {
		return nodes, int32(top), false
	}
	if key != nil {
		kb, top = bs.bucketIDs(idx, key)
	}
	shift := bucketShift(int(top))
	nb := int(top)>>shift + 1
	if nb == 1 {
		return m.relabel(idx, nodes)
	}
	bs.counts(kb, shift, nb)
	bs.keys = grow(bs.keys, len(idx))
	cur, keys := bs.cur, bs.keys
	distribute(keys, cur, idx, kb, shift)
	nodes, bad, ok := m.relabel(keys, nodes)
	if !ok {
		return nodes, bad, false
	}
	copy(cur, bs.start[:nb])
	collect(idx, keys, cur, kb, shift)
	return nodes, 0, true
}

// renumber renumbers the nodes nodes[first:] that a hop added (through
// the hash map, which numbers them by hash partition) bucket by bucket
// (of their key ids where key is not nil), keeping their order within a
// bucket, and rewrites the hop's local ids idx to match.
func (bs *bucketScratch) renumber(nodes []int32, first int, idx, key []int32) {
	added := nodes[first:]
	if len(added) < 2 {
		return
	}
	kb, top := bs.bucketIDs(added, key)
	shift := bucketShift(int(top))
	nb := int(top)>>shift + 1
	if nb == 1 {
		return
	}
	bs.counts(kb, shift, nb)
	// perm[i]: the new local id of added[i]; moved: added, reordered.
	bs.keys = grow(bs.keys, len(added))
	bs.moved = grow(bs.moved, len(added))
	cur, perm, moved := bs.cur, bs.keys, bs.moved
	f := int32(first)
	for i, v := range added {
		b := uint32(kb[i]) >> shift
		j := cur[b]
		perm[i] = f + j
		moved[j] = v
		cur[b] = j + 1
	}
	copy(added, moved)
	for q, u := range idx {
		if u >= f {
			idx[q] = perm[u-f]
		}
	}
}

// distribute writes ids to dst bucket by bucket (the bucket of ids[q] is
// kb[q]>>shift), each at its bucket's cursor in cur, which it advances: a
// stable counting sort's distribution pass. It is a function of its own
// so that the loop keeps every value in a register: inside relabelBuckets
// the compiler spilled the bucket id to the stack and reloaded it every
// iteration: on Zen 1 the pass took 8.6-8.7 ns an id in situ (the
// middle hop of [15,10,5], 1M-node graph) against 5.5-5.8 here.
//
//go:noinline
func distribute(dst, cur, ids, kb []int32, shift uint) {
	kb = kb[:len(ids)]
	shift &= 31
	for q, u := range ids {
		b := uint32(kb[q]) >> shift
		j := cur[b]
		dst[j] = u
		cur[b] = j + 1
	}
}

// collect is distribute's inverse: it sets ids[q] to src's entry at the
// cursor of q's bucket (kb[q]>>shift), and advances the cursor.
//
//go:noinline
func collect(ids, src, cur, kb []int32, shift uint) {
	kb = kb[:len(ids)]
	shift &= 31
	for q := range ids {
		b := uint32(kb[q]) >> shift
		j := cur[b]
		ids[q] = src[j]
		cur[b] = j + 1
	}
}

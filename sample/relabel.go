package sample

import (
	"slices"

	"github.com/graphmill/graphmill/internal/hugemem"
	"github.com/graphmill/graphmill/internal/prefetch"
)

// idMap relabels global node ids to local ids, one hop at a time, with a
// radix-partitioned hash map: the previous nodes (whose local ids are
// their positions) and the hop's sampled sources are first distributed by
// the top bits of their hash into partitions of about 2,000 ids (a stable
// counting sort), then each partition is relabelled with a small
// open-addressing table (64 KiB) that stays in the core's cache; a last
// pass puts the local ids back in edge order. A single table for a whole
// minibatch (hundreds of thousands of ids) would not fit in the core's
// caches, and most probes would miss.
//
// Once the table is in cache, the cost is branch mispredictions: whether
// a sampled id is new or already seen is a coin flip the predictor cannot
// learn. The probe loop therefore has a single exit test (empty slot or
// matching id) and chooses between inserting and reusing without a
// branch, and the common-size table is a fixed-size array so that masked
// slot indices need no bounds checks.
//
// Measured (CPU time per sampled source, 1 worker, 2-core machine under
// load average 1.5-4.5): on the ids of real last hops of fanouts 15,10,5 on
// the 10M-node synthetic graph (540k sources, 108k previous nodes), one
// table for the whole hop probed in edge order 17-20 ns/id (12-14 with
// its slots touched 16 ids ahead of the probes), the earlier version of
// this map (4,000-id partitions, branching probe loop) 11.5-12 ns/id, this
// map 7.5-8 ns/id. On BenchmarkRelabel's random ids of the same shape:
// this map 8.4-10.4, the earlier version 15.6-16.8, the dense
// generation-stamped array (RelabelDense) 20-22 ns/id. Memory is
// proportional to the minibatch, never to the graph.
//
// New nodes are numbered in partition order, then in edge order within a
// partition, which depends only on the ids and the input sizes, so results
// are deterministic.
type idMap struct {
	fast   *fastTable // the table of partitions of at most fastMax ids
	tab    []uint64   // the table of a larger partition (many repeated ids)
	counts []int32    // partition boundaries of the previous nodes
	ecount []int32    // partition boundaries of the sampled sources
	prev   []uint64   // previous nodes, partitioned: id<<32 | local
	keys   []int32    // sampled sources in partition order, then their local ids
	cur    []int32    // a cursor per partition of keys

	dupIdx, dupNodes []int32 // scratch of hasDuplicate
}

// A table entry is (id+1)<<32 | local; 0 is an empty slot.
const (
	hashMul = 0x9E3779B1 // Fibonacci hashing
	idMask  = ^uint64(0xffffffff)
)

// partItems is the target number of ids per partition.
const partItems = 2048

// fastBits is log2 of the number of slots of the fixed-size table.
const fastBits = 13

// fastMax is the largest partition (previous nodes plus sampled sources,
// repeats included) relabelled in the fixed-size table: at most 3/4 full.
const fastMax = 3 << (fastBits - 2)

// fastTable is the fixed-size table of the common case. relabelFast and
// relabelSlice are deliberately two copies of one probe loop: with an
// array of constant size the compiler drops every bounds check and the
// slot mask is a constant, which the loop, the hottest of sampling, needs.
type fastTable [1 << fastBits]uint64

// partitionBits returns log2 of the number of partitions for n ids.
func partitionBits(n int) int {
	b := 0
	for b < 16 && n>>b > partItems {
		b++
	}
	return b
}

// relabel replaces the global ids in idx (the sampled sources of a hop)
// by local ids: the position of the id in nodes if it is there, else a new
// position at the end of nodes, to which the id is appended. nodes holds no
// repeated ids.
func (m *idMap) relabel(idx []int32, nodes []int32) []int32 {
	n := len(nodes) + len(idx)
	pb := partitionBits(n)
	parts := 1 << pb
	sh := uint(32-pb) & 63 // the partition is the top pb bits of the hash
	m.counts = grow(m.counts, parts+1)
	m.ecount = grow(m.ecount, parts+1)
	pc, ec := m.counts, m.ecount
	clear(pc)
	clear(ec)
	hashCounts(pc, nodes, sh)
	hashCounts(ec, idx, sh)
	maxPart := 0
	for p := 1; p <= parts; p++ {
		maxPart = max(maxPart, int(pc[p]+ec[p]))
		pc[p] += pc[p-1]
		ec[p] += ec[p-1]
	}
	m.prev = grow(m.prev, len(nodes))
	m.keys = grow(m.keys, len(idx))
	prev, keys := m.prev, m.keys
	m.cur = append(m.cur[:0], ec[:parts]...) // partition starts
	hashPrev(prev, pc, nodes, sh)
	hashDistribute(keys, ec, idx, sh)
	// pc[p], ec[p] now hold the ends of partition p. The probes write
	// nodes[nn] for every id (new or not), so nodes needs room for all.
	nn := len(nodes)
	nodes = room(nodes, len(idx))
	nodes = nodes[:cap(nodes)]
	// A single small partition gets a table sized to it (clearing the
	// fixed one would cost more than relabelling a small minibatch).
	if maxPart <= fastMax && pb > 0 {
		if m.fast == nil {
			m.fast = new(fastTable)
		}
		// The slot takes the fastBits hash bits below the partition bits.
		ssh := uint(32 - pb - fastBits)
		var plo, elo int32
		for p := 0; p < parts; p++ {
			phi, ehi := pc[p], ec[p]
			if phi > plo || ehi > elo {
				clear(m.fast[:])
				nn = relabelFast(m.fast, prev[plo:phi], keys[elo:ehi], nodes, nn, ssh)
			}
			plo, elo = phi, ehi
		}
	} else {
		bits := 4
		for 1<<bits < 2*maxPart {
			bits++
		}
		if len(m.tab) < 1<<bits {
			m.tab = make([]uint64, 1<<bits)
		}
		var plo, elo int32
		for p := 0; p < parts; p++ {
			phi, ehi := pc[p], ec[p]
			k := int(phi - plo + ehi - elo)
			if k > 0 {
				bits := 4
				for 1<<bits < 2*k {
					bits++
				}
				tab := m.tab[:1<<bits]
				clear(tab)
				nn = relabelSlice(tab, prev[plo:phi], keys[elo:ehi], nodes, nn, uint(32-bits))
			}
			plo, elo = phi, ehi
		}
	}
	nodes = nodes[:nn]
	// keys now holds the local ids in partition order, and idx still the
	// global ids: put the local ids back in edge order, finding each id's
	// place in keys by its partition's cursor (recomputing the hash costs
	// less than storing and reloading every place).
	cur := m.cur[:parts]
	hashCollect(idx, keys, cur, sh)
	return nodes
}

// relabelFast relabels one partition in the fixed-size table tab (empty
// on entry): it inserts the previous nodes prev (id<<32 | local), then
// replaces every id in part by its local id, numbering new ids from nn on
// and writing them to nodes. It returns the new number of nodes. Slots are
// hash bits ssh and up.
func relabelFast(tab *fastTable, prev []uint64, part []int32, nodes []int32, nn int, ssh uint) int {
	const mask = 1<<fastBits - 1
	ssh &= 31
	for _, x := range prev {
		h := uint32(x>>32) * hashMul >> ssh & mask
		for tab[h] != 0 {
			h = (h + 1) & mask
		}
		tab[h] = x + 1<<32
	}
	for j, u := range part {
		key := uint64(uint32(u)+1) << 32
		h := uint32(u) * hashMul >> ssh & mask
		e := tab[h]
		// Both tests are never true at once (key != 0): equal means
		// neither, a slot holding another id.
		for (e == 0) == (e&idMask == key) {
			h = (h + 1) & mask
			e = tab[h]
		}
		v := key | uint64(nn)
		if e != 0 {
			v = e
		}
		tab[h] = v
		nodes[nn] = u // kept only if new
		part[j] = int32(uint32(v))
		nn = max(nn, int(uint32(v))+1)
	}
	return nn
}

// relabelSlice is relabelFast for a table of any power-of-two size (at
// least twice the partition), with slots the top bits (ssh and up) of a
// second multiplicative hash: the first one's top bits are the same for
// every id of a partition.
func relabelSlice(tab []uint64, prev []uint64, part []int32, nodes []int32, nn int, ssh uint) int {
	mask := uint32(len(tab) - 1)
	ssh &= 31
	for _, x := range prev {
		h := uint32(x>>32) * hashMul2 >> ssh & mask
		for tab[h] != 0 {
			h = (h + 1) & mask
		}
		tab[h] = x + 1<<32
	}
	for j, u := range part {
		key := uint64(uint32(u)+1) << 32
		h := uint32(u) * hashMul2 >> ssh & mask
		e := tab[h]
		for (e == 0) == (e&idMask == key) {
			h = (h + 1) & mask
			e = tab[h]
		}
		v := key | uint64(nn)
		if e != 0 {
			v = e
		}
		tab[h] = v
		nodes[nn] = u
		part[j] = int32(uint32(v))
		nn = max(nn, int(uint32(v))+1)
	}
	return nn
}

// hashMul2 is the multiplier of relabelSlice's hash (odd).
const hashMul2 = 0x85EBCA6B

// hasDuplicate reports whether ids holds a repeated id, and one of them.
func (m *idMap) hasDuplicate(ids []int32) (int32, bool) {
	m.dupIdx = append(m.dupIdx[:0], ids...)
	m.dupNodes = m.relabel(m.dupIdx, m.dupNodes[:0])
	if len(m.dupNodes) == len(ids) {
		return 0, false
	}
	tmp := slices.Clone(ids)
	slices.Sort(tmp)
	for i := 1; i < len(tmp); i++ {
		if tmp[i] == tmp[i-1] {
			return tmp[i], true
		}
	}
	return 0, false
}

// denseMap is a generation-stamped array with one 4-byte entry per graph
// node, gen<<24 | local, valid only when its generation is the current
// one, so that starting a new minibatch costs nothing (every 255
// minibatches the array is cleared). Local ids must stay below 1<<24
// (denseMaxLocal): a minibatch that could pass that relabels with the hash
// map instead (see Sampler.relabel).
//
// New nodes are numbered in first-seen (edge) order (relabelBuckets, for
// the hops a later hop draws for, takes the ids by bucket). The loop has no
// unpredictable branch (new or not is chosen without one) and prefetches
// the entries of the ids denseAhead ahead, so the misses of an array
// larger than the core's caches overlap instead of stalling it one at a
// time. Measured (Xeon, Ice Lake, one core; BenchmarkRelabel, ids shaped
// like the last hop of fanouts 15,10,5, two quiet runs): on a 1M-node id
// space 8.2-11.2 ns/id against the hash map's 12.8-13.1, on 10M 16.8-20.3
// against 13.5-17.1 (with the other core busy, on 4M: 16.5-27.4 against
// 21.4-42.5): faster while the array is within a few times the last-level
// cache, which is why RelabelAuto uses it only up to DenseRelabelNodes.
// With AVX-512 (F and CD) a vector kernel relabels sixteen ids at a time,
// the same way (relabelVec): 2.3-2.4x faster; with AVX2, eight at a time:
// 1.8x faster. CPUs that run 256-bit vectors as two halves take the loop
// in assembly instead (relabel1).
type denseMap struct {
	tab []uint32
	gen uint32
}

// relabelWidth is the lanes of the assembly kernel denseMap.relabel uses:
// relabelWidths' first, 0 for none (tests change it to compare).
var relabelWidth = func() int {
	if len(relabelWidths) == 0 {
		return 0
	}
	return relabelWidths[0]
}()

const (
	// denseMaxLocal bounds the local ids of a denseMap's minibatch.
	denseMaxLocal = 1 << 24
	// denseAhead is how many ids ahead relabel prefetches entries.
	denseAhead = 32
)

// denseSwitch is the minibatch size (nodes so far plus a hop's sampled
// ids) from which a minibatch leaves the dense array for the hash map:
// denseMaxLocal, lowered by tests.
var denseSwitch = denseMaxLocal

// begin starts a minibatch over numNodes nodes. The array is read at
// random, so it is in huge pages where it can be (hugemem.Table): in 4
// KiB pages the 40 MB array of a 10M-node graph missed the TLB on most
// lookups. Measured (Xeon with AMX, 'bench sample', 10M nodes, alternated
// with 4 KiB pages): the last hop of [15,10,5] relabelled at 7.8 and 9.3
// ns an edge against 9.0 and 10.6, its middle hop at 9.9 and 11.1 against
// 11.4 and 12.5, and the minibatch took 0.92-0.94 of the time; [25,10]
// relabelled at 8.0 against 8.9 and 9.1.
func (m *denseMap) begin(numNodes int) {
	if len(m.tab) != numNodes {
		m.tab = hugemem.Table[uint32](numNodes)
		m.gen = 0
	}
	m.gen++
	if m.gen == 256 {
		clear(m.tab)
		m.gen = 1
	}
}

// insertSeeds numbers the seeds 0, 1, ... and reports a repeated one.
func (m *denseMap) insertSeeds(seeds []int32) (int32, bool) {
	tab, g := m.tab, m.gen<<24
	for i, v := range seeds {
		if tab[v]>>24 == m.gen {
			return v, true
		}
		tab[v] = g | uint32(i)
	}
	return 0, false
}

// relabel replaces the global ids in idx by local ids (see idMap.relabel:
// here new ids are numbered in edge order). nodes needs capacity for
// len(nodes)+len(idx), below denseMaxLocal. An id outside the array stops
// it: it returns that id and false, and idx and nodes are then partly
// relabelled.
func (m *denseMap) relabel(idx []int32, nodes []int32) ([]int32, int32, bool) {
	tab, gen := m.tab, m.gen
	g := gen << 24
	nn := len(nodes)
	nodes = nodes[:cap(nodes)]
	nn, start := relabelVec(tab, idx, nodes, nn, gen)
	prefetch.Rows32(tab, idx[start:min(start+denseAhead, len(idx))])
	for q := start; q < len(idx); q++ {
		u := idx[q]
		if q%8 == 0 && q+denseAhead < len(idx) {
			prefetch.Rows32(tab, idx[q+denseAhead:min(q+denseAhead+8, len(idx))])
		}
		if uint(u) >= uint(len(tab)) {
			return nodes[:nn], u, false
		}
		e := tab[u]
		v := g | uint32(nn)
		if e>>24 == gen {
			v = e
		}
		tab[u] = v
		nodes[nn] = u // kept only if new
		loc := int(v & (denseMaxLocal - 1))
		idx[q] = int32(loc)
		nn = max(nn, loc+1)
	}
	return nodes[:nn], 0, true
}

// The passes of idMap.relabel over its ids are functions of their own
// (not inlined) so that their loops keep their values in registers (see
// distribute). The partition of u is its hash's top bits (sh and up).
// Measured (AMD EPYC Zen 1, one core, [15,10,5] with RelabelHash, 400
// minibatches, two runs each way): on the 1M-node graph the last hop
// relabelled at 18.7-21.2 ns an edge against 25.1-25.2, the middle hop
// at 22.6-22.8 against 30.2-30.3; on Cora 15.0-17.5 against 20.4-22.8.

// hashCounts counts the ids of each partition: cnt[p+1] for partition p.
//
//go:noinline
func hashCounts(cnt, ids []int32, sh uint) {
	sh &= 63
	for _, u := range ids {
		cnt[uint64(uint32(u)*hashMul)>>sh+1]++
	}
}

// hashPrev writes the previous nodes nodes to prev partition by partition
// (id<<32 | local id, the local id their position), each at its
// partition's cursor in cur, which it advances.
//
//go:noinline
func hashPrev(prev []uint64, cur, nodes []int32, sh uint) {
	sh &= 63
	for i, u := range nodes {
		p := uint64(uint32(u)*hashMul) >> sh
		j := cur[p]
		prev[j] = uint64(uint32(u))<<32 | uint64(i)
		cur[p] = j + 1
	}
}

// hashDistribute writes ids to keys partition by partition, each at its
// partition's cursor in cur, which it advances.
//
//go:noinline
func hashDistribute(keys, cur, ids []int32, sh uint) {
	sh &= 63
	for _, u := range ids {
		p := uint64(uint32(u)*hashMul) >> sh
		j := cur[p]
		keys[j] = u
		cur[p] = j + 1
	}
}

// hashCollect is hashDistribute's inverse: it sets ids[q] to keys' entry
// at the cursor of ids[q]'s partition, and advances the cursor.
//
//go:noinline
func hashCollect(ids, keys, cur []int32, sh uint) {
	sh &= 63
	for q, u := range ids {
		p := uint64(uint32(u)*hashMul) >> sh
		j := cur[p]
		ids[q] = keys[j]
		cur[p] = j + 1
	}
}

//go:build !noasm

package sample

import (
	"math"
	"math/bits"
	"unsafe"

	"github.com/graphmill/graphmill/internal/isa"
)

// relabelWidths lists the kernels of denseMap.relabel this CPU can run,
// by lanes, the one it uses first: 16 (relabel16: AVX-512F with the
// conflict-detection instructions VPCONFLICTD, VPLZCNTD), 8 (relabel8:
// AVX2) and 1 (relabel1: plain x86-64, first on CPUs that run 256-bit
// vectors as two halves, isa.HalfWidth256; none with
// GRAPHMILL_KERNEL=generic).
var relabelWidths = func() []int {
	var w []int
	if isa.HasAVX512CD {
		w = append(w, 16)
	}
	if isa.HasAVX2 {
		w = append(w, 8)
	}
	switch {
	case isa.Scalar && isa.HalfWidth256:
		w = append([]int{1}, w...)
	case isa.Scalar:
		w = append(w, 1)
	}
	return w
}()

//go:noescape
func relabel16(tab *uint32, ntab int, idx *int32, n int, nodes *int32, nn int, gen uint32, pf int) (outNN int, done int)

// relabel16Kernel is relabel16, or a test's stand-in (the kernel under
// x86emu, on CPUs without AVX-512).
var relabel16Kernel = relabel16

// relabel1 is denseMap.relabel's loop in assembly, one id at a time
// (relabel1_amd64.s).
//
//go:noescape
func relabel1(tab *uint32, ntab int, idx *int32, n int, nodes *int32, nn int, gen uint32, pf int) (outNN int, done int)

//go:noescape
func relabel8(tab *uint32, ntab int, idx *int32, n int, nodes *int32, nn int, gen uint32, t *relabel8Tables, pf int) (outNN int, done int)

// relabel8Tables holds relabel8's constants; the assembly reads them at
// fixed offsets (given beside each field).
type relabel8Tables struct {
	prefix   [256]uint32 // 0: by mask of new lanes, nibble j = new lanes below lane j
	compress [256]uint32 // 1024: by mask, nibble i = the lane of the i-th new one
	valid    [7][8]int32 // 2048: [s-1][j] = -1 where j >= s: lane j-s exists
	back     [7][8]int32 // 2272: [s-1][j] = j-s
	iota     [8]int32    // 2496: 0, 1, ..., 7
	rot      [8]int32    // 2528: lane j takes lane j-1 (mod 8)
	shifts   [8]uint32   // 2560: 0, 4, ..., 28
	sentinel [8]int32    // 2592: -1, -2, ..., -8: no id, each unlike the others
}

var tables8 = func() *relabel8Tables {
	t := new(relabel8Tables)
	for m := range 256 {
		for j := range 8 {
			t.prefix[m] |= uint32(bits.OnesCount8(uint8(m)&(1<<j-1))) << (4 * j)
		}
		i := 0
		for j := range 8 {
			if m&(1<<j) != 0 {
				t.compress[m] |= uint32(j) << (4 * i)
				i++
			}
		}
	}
	for s := 1; s <= 7; s++ {
		for j := range 8 {
			if j >= s {
				t.valid[s-1][j] = -1
			}
			t.back[s-1][j] = int32(j - s)
		}
	}
	for j := range 8 {
		t.iota[j] = int32(j)
		t.rot[j] = int32((j + 7) % 8)
		t.shifts[j] = uint32(4 * j)
		t.sentinel[j] = int32(-1 - j)
	}
	return t
}()

// relabelSeenWidth is the kernel relabelVec takes instead of relabel1
// once the nodes so far are at least half the id space, so that most ids
// are seen: 8 (relabel8, whose vectors of seen ids take a short path) on
// CPUs with AVX2 that take relabel1 first, else 0 (none; tests pin it).
// Measured (AMD EPYC Zen 1, Cora, one core, paired rounds of 100
// minibatches, relabel8 against relabel1 for whole minibatches): the
// [15,10,5] last hop relabelled in 0.47-0.50 of the time and the first
// hop (a third of the nodes seen) in 1.66-1.74.
var relabelSeenWidth = func() int {
	if len(relabelWidths) > 0 && relabelWidths[0] == 1 && isa.HasAVX2 {
		return 8
	}
	return 0
}()

// relabelCachedEntries is the largest array (in entries, 4 bytes each)
// whose lookups the vector kernels do not prefetch: 32 KiB stays in the L1
// of every CPU with AVX2 measured here, and prefetches then only cost
// instructions (a load of the id ahead and the prefetch, for each id).
// Measured (AMD EPYC Zen 5, one core, paired rounds of 200 minibatches,
// medians): on Cora (2,708 entries) a minibatch took 0.972-0.984 of the
// time with fanouts 15,10,5 and 0.980-0.984 with 25,10; on a 40k-node
// graph (160 KiB, in L2) 1.00-1.04 of it, so larger arrays keep them.
const relabelCachedEntries = 1 << 13

// relabelVec relabels ids idx[:done] with the kernel of relabelWidth
// lanes, a vector (or an id) at a time, exactly as denseMap.relabel's loop
// does, and returns nn, the count of nodes, after them; done is 0 where no
// kernel runs. nodes must have capacity for nn+len(idx) ids (a
// kernel writes a whole vector of new ids where fewer are new).
//
// Written in assembly because the loop's carried count of nodes (a new
// id's local id is the count so far) makes it sequential in Go, while the
// vector form numbers a vector's new ids at once. Measured (AMD EPYC Zen
// 5, one core, ids shaped like a [15,10,5] last hop, alternated, median
// ns an id): on a 20k-node id space sixteen lanes 0.90, eight 1.05, one
// at a time 2.28; on 1M 1.03, 1.18, 2.62; on 10M 3.58, 4.50, 5.90 (the
// hash map 7.57).
func relabelVec(tab []uint32, idx, nodes []int32, nn int, gen uint32) (int, int) {
	if len(tab) == 0 || len(tab) > math.MaxInt32 || cap(nodes) < nn+len(idx) {
		return nn, 0
	}
	pf := 0
	if len(tab) > relabelCachedEntries {
		pf = 1
	}
	w := relabelWidth
	if w == 1 && relabelSeenWidth == 8 && 2*nn >= len(tab) {
		w = 8
	}
	switch {
	case w == 16 && len(idx) >= 16:
		return relabel16Kernel(unsafe.SliceData(tab), len(tab), unsafe.SliceData(idx), len(idx), unsafe.SliceData(nodes[:cap(nodes)]), nn, gen, pf)
	case w == 8 && len(idx) >= 8:
		return relabel8(unsafe.SliceData(tab), len(tab), unsafe.SliceData(idx), len(idx), unsafe.SliceData(nodes[:cap(nodes)]), nn, gen, tables8, pf)
	case w == 1:
		return relabel1(unsafe.SliceData(tab), len(tab), unsafe.SliceData(idx), len(idx), unsafe.SliceData(nodes[:cap(nodes)]), nn, gen, pf)
	}
	return nn, 0
}

//go:build amd64 && !noasm

package sample

import (
	"fmt"
	"reflect"
	"slices"
	"testing"
	"unsafe"

	"github.com/graphmill/graphmill/internal/rng"
)

// TestAheadGroupLayout checks the offsets the kernels read aheadGroup's
// fields at.
func TestAheadGroupLayout(t *testing.T) {
	var g aheadGroup
	for _, f := range []struct {
		name      string
		off, want uintptr
	}{
		{"dst", unsafe.Offsetof(g.dst), 0}, {"sp", unsafe.Offsetof(g.sp), 8},
		{"indptr", unsafe.Offsetof(g.indptr), 16}, {"span", unsafe.Offsetof(g.span), 24},
		{"seeds", unsafe.Offsetof(g.seeds), 32}, {"ds", unsafe.Offsetof(g.ds), 40},
		{"ms", unsafe.Offsetof(g.ms), 48}, {"ring", unsafe.Offsetof(g.ring), 56},
		{"ip", unsafe.Offsetof(g.ip), 64}, {"keyIDs", unsafe.Offsetof(g.keyIDs), 72},
		{"hk", unsafe.Offsetof(g.hk), 80}, {"done", unsafe.Offsetof(g.done), 88},
		{"nodes", unsafe.Offsetof(g.nodes), 96}, {"k", unsafe.Offsetof(g.k), 104},
		{"keep", unsafe.Offsetof(g.keep), 112}, {"ind", unsafe.Offsetof(g.ind), 120},
	} {
		if f.off != f.want {
			t.Errorf("aheadGroup.%s at %d, the kernels read it at %d", f.name, f.off, f.want)
		}
	}
}

// aheadCase is one group of destinations for the kernels: what they read
// and what they write, as slices.
type aheadCase struct {
	nodes, k, done, keep int
	hk                   uint64
	dst, keyIDs          []int32
	indptr, sp, span, ip []int64
	seeds, ds, ms, ring  []uint64
	ind                  []int32
}

func (c *aheadCase) clone() *aheadCase {
	d := *c
	d.sp, d.span, d.ip = slices.Clone(c.sp), slices.Clone(c.span), slices.Clone(c.ip)
	d.seeds, d.ds, d.ring = slices.Clone(c.seeds), slices.Clone(c.ds), slices.Clone(c.ring)
	return &d
}

func (c *aheadCase) group() *aheadGroup {
	g := &aheadGroup{dst: unsafe.SliceData(c.dst), sp: unsafe.SliceData(c.sp), indptr: &c.indptr[0],
		span: &c.span[0], seeds: &c.seeds[0], ds: &c.ds[0], ms: &c.ms[0], ring: &c.ring[0], ip: &c.ip[0],
		keyIDs: unsafe.SliceData(c.keyIDs), hk: c.hk, done: c.done, nodes: c.nodes, k: c.k, keep: c.keep, ind: &c.ind[0]}
	return g
}

// rangesRef is drawAhead's first loop as Go (the kernel's contract):
// it stops where dst[j] is no node id and the loop would read by it.
func (c *aheadCase) rangesRef(a, b int) (uint64, int) {
	var floyd uint64
	for j := a; j < b; j++ {
		var lo, hi int64
		if j < c.done {
			lo, hi = c.sp[2*j], c.sp[2*j+1]
		} else {
			v := c.dst[j]
			if uint(v) >= uint(c.nodes) {
				return floyd, j
			}
			lo, hi = c.indptr[v], c.indptr[v+1]
			if c.keep == 1 {
				c.sp[2*j], c.sp[2*j+1] = lo, hi
			}
		}
		c.span[2*(j%aheadRing)], c.span[2*(j%aheadRing)+1] = lo, hi
		if d := hi - lo; d > int64(c.k) && d <= 64 {
			v := c.dst[j]
			if uint(v) >= uint(c.nodes) {
				return floyd, j
			}
			key := uint32(v)
			if c.keyIDs != nil {
				key = uint32(c.keyIDs[v])
			}
			c.seeds[j-a], c.ds[j-a] = c.hk^uint64(key), uint64(d)
			floyd |= 1 << (j - a)
		}
	}
	return floyd, b
}

// masksRef is drawAhead's second loop as Go: it stops at a list longer
// than 64 or a negative degree.
func (c *aheadCase) masksRef(a, j, b int, e int64) (int64, int) {
	for ; j < b; j++ {
		lo, hi := c.span[2*(j%aheadRing)], c.span[2*(j%aheadRing)+1]
		d := hi - lo
		var m uint64
		n := d
		switch {
		case d < 0 || d > 64 || (d <= int64(c.k) && d > 63):
			return e, j
		case d <= int64(c.k):
			m = 1<<d - 1
		default:
			m, n = c.ms[j-a], int64(c.k)
		}
		c.ring[j%aheadRing] = m
		e += n
		c.ip[j+1] = e
	}
	return e, b
}

// newAheadCase makes a group [a, b) of a graph whose degrees run from 0
// past 64, with (where bad) ids outside it, decreasing offsets and
// earlier hops' ranges of every kind below done.
func newAheadCase(r *rng.Rand, a, b, k, done int, keep, keyed, bad bool) *aheadCase {
	const nodes = 40
	c := &aheadCase{nodes: nodes, k: k, done: done, hk: r.Uint64()}
	if keep {
		c.keep = 1
	}
	c.indptr = make([]int64, nodes+1)
	for v := range nodes {
		d := []int64{0, 1, int64(k), int64(k) + 1, 20, 63, 64, 65, 100}[r.IntN(9)]
		c.indptr[v+1] = c.indptr[v] + d
	}
	if bad {
		v := r.IntN(nodes)
		c.indptr[v+1] = c.indptr[v] - 3 // a negative degree
	}
	if keyed {
		c.keyIDs = make([]int32, nodes)
		for v := range c.keyIDs {
			c.keyIDs[v] = int32(r.Uint64())
		}
	}
	c.dst = make([]int32, b)
	for j := range c.dst {
		c.dst[j] = int32(r.IntN(nodes))
		if bad && r.IntN(12) == 0 {
			c.dst[j] = []int32{-1, nodes, 1 << 30, -1 << 31}[r.IntN(4)]
		}
	}
	c.sp = make([]int64, 2*b)
	for j := range done {
		lo := int64(r.IntN(1000))
		c.sp[2*j], c.sp[2*j+1] = lo, lo+[]int64{0, int64(k), int64(k) + 1, 64, 65, -2}[r.IntN(6)]
	}
	c.span = make([]int64, 2*aheadRing)
	c.ip = make([]int64, b+1)
	c.seeds, c.ds, c.ms, c.ring = make([]uint64, 16), make([]uint64, 16), make([]uint64, 16), make([]uint64, aheadRing)
	for i := range c.ms {
		c.ms[i] = r.Uint64()
	}
	c.ind = make([]int32, 1)
	return c
}

// TestAheadKernels runs aheadRanges and aheadMasks against drawAhead's
// loops (rangesRef, masksRef) on groups at every position of the rings,
// with and without ranges from the previous hop, kept ranges and key
// ids, and on graphs with ids outside them, negative degrees and lists
// longer than 64: the same writes, floyd lanes, edge counts and stops.
func TestAheadKernels(t *testing.T) {
	r := rng.New(11)
	for _, a := range []int{0, 16, 48, 64, 112} {
		for _, n := range []int{1, 7, 16} {
			for _, bad := range []bool{false, true} {
				t.Run(fmt.Sprintf("a=%d/n=%d/bad=%v", a, n, bad), func(t *testing.T) {
					for trial := range 200 {
						b := a + n
						k := []int{1, 5, 8, 10, 63, 64}[trial%6]
						done := []int{0, a, a + n/2, b}[trial%4]
						c := newAheadCase(r, a, b, k, done, trial%2 == 0, trial%3 == 0, bad)
						want := c.clone()
						wf, ws := want.rangesRef(a, b)
						got := c.clone()
						gf, gs := aheadRanges(got.group(), a, b)
						if gf != wf || gs != ws || !reflect.DeepEqual(got, want) {
							t.Fatalf("trial %d: aheadRanges: floyd %#x stop %d, want %#x %d (or writes differ)", trial, gf, gs, wf, ws)
						}
						j := a + r.IntN(n+1)
						e := int64(r.IntN(100))
						we, wj := want.masksRef(a, j, b, e)
						ge, gj := aheadMasks(got.group(), a, j, b, e)
						if ge != we || gj != wj || !reflect.DeepEqual(got, want) {
							t.Fatalf("trial %d: aheadMasks from %d: e %d stop %d, want %d %d (or writes differ)", trial, j, ge, gj, we, wj)
						}
					}
				})
			}
		}
	}
}

package sample

import (
	"cmp"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/graphmill/graphmill/batch"
	"github.com/graphmill/graphmill/graph"
	"github.com/graphmill/graphmill/internal/rng"
)

// checkRelabel checks relabel's contract: nodes keeps prev as its prefix
// and gains exactly the ids of orig not in prev, once each, and every
// local id in idx points at its global id.
func checkRelabel(t *testing.T, prev, orig, idx, nodes []int32) {
	t.Helper()
	if !slices.Equal(nodes[:len(prev)], prev) {
		t.Fatal("the previous nodes moved")
	}
	pos := make(map[int32]int, len(nodes))
	for i, u := range nodes {
		if _, dup := pos[u]; dup {
			t.Fatalf("node %d appears twice", u)
		}
		pos[u] = i
	}
	want := map[int32]bool{}
	for _, u := range orig {
		if _, old := pos[u]; !old || pos[u] >= len(prev) {
			want[u] = true
		}
	}
	if len(nodes)-len(prev) != len(want) {
		t.Fatalf("%d new nodes, want %d", len(nodes)-len(prev), len(want))
	}
	for q, l := range idx {
		if l < 0 || int(l) >= len(nodes) || nodes[l] != orig[q] {
			t.Fatalf("id %d (edge %d) relabelled to %d", orig[q], q, l)
		}
	}
}

// TestRelabel compares the partitioned hash relabelling with its contract
// on inputs that exercise the fixed-size table (distinct ids, a few
// repeats), the variable-size one (a partition swamped by one repeated
// id), reuse of the tables across calls, and tiny and empty inputs.
func TestRelabel(t *testing.T) {
	var m idMap // reused across cases, as the sampler's pool does
	r := rng.New(5)
	for _, tc := range []struct {
		prev, idx, space int
		hot              float64 // fraction of idx that is one id
	}{
		{0, 0, 10, 0},
		{3, 0, 10, 0},
		{0, 5, 10, 0},
		{10, 100, 50, 0},
		{1000, 20000, 1 << 30, 0},
		{5000, 50000, 20000, 0},         // many repeats and hits
		{100000, 540000, 10_000_000, 0}, // the last hop of 15,10,5
		{200, 30000, 1 << 20, 0.9},      // one partition over the fixed table
		{0, 200000, 1 << 31, 0.5},
	} {
		t.Run(fmt.Sprintf("prev=%d/idx=%d/space=%d/hot=%v", tc.prev, tc.idx, tc.space, tc.hot), func(t *testing.T) {
			seen := map[int32]bool{}
			var prev []int32
			for len(prev) < tc.prev {
				u := int32(r.IntN(tc.space))
				if !seen[u] {
					seen[u] = true
					prev = append(prev, u)
				}
			}
			hot := int32(r.IntN(tc.space))
			orig := make([]int32, tc.idx)
			for q := range orig {
				if r.Float64() < tc.hot {
					orig[q] = hot
				} else if len(prev) > 0 && q%4 == 0 {
					orig[q] = prev[r.IntN(len(prev))]
				} else {
					orig[q] = int32(r.IntN(tc.space))
				}
			}
			var first []int32
			for rep := 0; rep < 2; rep++ {
				idx := slices.Clone(orig)
				nodes := m.relabel(idx, slices.Clone(prev))
				checkRelabel(t, prev, orig, idx, nodes)
				if rep == 0 {
					first = slices.Clone(nodes)
				} else if !slices.Equal(first, nodes) {
					t.Fatal("a second call numbered the new nodes differently")
				}
			}
		})
	}
}

func TestHasDuplicate(t *testing.T) {
	var m idMap
	ids := make([]int32, 10000)
	for i := range ids {
		ids[i] = int32(i * 7919)
	}
	if _, dup := m.hasDuplicate(ids); dup {
		t.Fatal("distinct ids reported as repeated")
	}
	ids[6000] = ids[17]
	if v, dup := m.hasDuplicate(ids); !dup || v != ids[17] {
		t.Fatalf("hasDuplicate = %d, %v; want %d, true", v, dup, ids[17])
	}
}

// TestRelabelModesAgree samples the same seeds with the hash map, the
// dense array, the default and a dense array that hands over to the hash
// map mid-minibatch (its bound lowered), and checks every mode gives the
// same minibatch up to the numbering of the nodes: the same seeds first,
// the same input nodes, and every block the same edges between the same
// global ids. New nodes are numbered bucket by bucket at every hop but
// the last, and the dense array numbers them in first-seen order besides.
func TestRelabelModesAgree(t *testing.T) {
	g, _, _ := randomGraph(t, 5000, 12, graph.BuildOptions{})
	type edge struct{ dst, src int32 }
	canon := func(mb *batch.MiniBatch) ([]int32, [][]edge) {
		ids := make([]int32, len(mb.InputNodes))
		for i, v := range mb.InputNodes {
			ids[i] = int32(v)
		}
		var blocks [][]edge
		for _, b := range mb.Blocks {
			var es []edge
			for d := 0; d < b.NumDst; d++ {
				for e := b.Indptr[d]; e < b.Indptr[d+1]; e++ {
					es = append(es, edge{ids[d], ids[b.Indices[e]]})
				}
			}
			slices.SortFunc(es, func(a, b edge) int { return cmp.Or(cmp.Compare(a.dst, b.dst), cmp.Compare(a.src, b.src)) })
			blocks = append(blocks, es)
		}
		seeds := slices.Clone(ids[:len(mb.Seeds)])
		slices.Sort(ids)
		return append(seeds, ids...), blocks
	}
	seeds := []int32{4999, 3, 17, 2500, 1024, 77, 4000, 12}
	// The graph's 5000 ids are one bucket (relabelled in edge order)
	// unless small graphs are ordered too.
	for _, ordered := range []bool{false, true} {
		if ordered {
			orderSmall(t)
		}
		for _, fan := range [][]int{{10, 5}, {15, 10, 5}, {-1, 3}} {
			var wantIDs []int32
			var wantBlocks [][]edge
			for _, mode := range []string{"hash", "dense", "auto", "switch"} {
				cfg := Config{Fanouts: fan}
				switch mode {
				case "hash":
					cfg.Relabel = RelabelHash
				case "dense", "switch":
					cfg.Relabel = RelabelDense
				}
				if mode == "switch" {
					denseSwitch = 300
				}
				s, err := New(g, cfg)
				if err != nil {
					t.Fatal(err)
				}
				mb, err := s.Sample(seeds, 9)
				denseSwitch = denseMaxLocal
				if err != nil {
					t.Fatal(err)
				}
				checkMiniBatch(t, g, cfg, seeds, mb)
				ids, blocks := canon(mb)
				if mode == "hash" {
					wantIDs, wantBlocks = ids, blocks
					continue
				}
				if !slices.Equal(ids, wantIDs) || !reflect.DeepEqual(blocks, wantBlocks) {
					t.Fatalf("%v %s: not the hash map's minibatch up to numbering", fan, mode)
				}
				checkNewNodeOrder(t, mb, g.NumNodes, mode == "dense")
			}
		}
	}
}

// orderSmall makes the sampler order the new nodes of graphs below
// 1<<orderMinBits ids too, until the test ends.
func orderSmall(t *testing.T) {
	b := orderMinBits
	t.Cleanup(func() { orderMinBits = b })
	orderMinBits = 0
}

// checkNewNodeOrder checks the numbering of each hop's new nodes: by
// bucket of ids for every hop but the last (order.go), and with
// firstSeen (the dense array), in first-seen order within a bucket, and
// in first-seen order at the last hop.
func checkNewNodeOrder(t *testing.T, mb *batch.MiniBatch, numNodes int, firstSeen bool) {
	t.Helper()
	L := len(mb.Blocks)
	for h := 0; h < L; h++ {
		b := &mb.Blocks[L-1-h]
		lo, hi := b.NumDst, len(mb.InputNodes)
		if h+1 < L {
			hi = mb.Blocks[L-2-h].NumDst
		}
		shift := bucketShift(numNodes - 1)
		for l := lo + 1; l < hi && h+1 < L; l++ {
			if mb.InputNodes[l]>>shift < mb.InputNodes[l-1]>>shift {
				t.Fatalf("hop %d: new node %d (id %d) after id %d, a later bucket", h, l, mb.InputNodes[l], mb.InputNodes[l-1])
			}
		}
		if !firstSeen {
			continue
		}
		var want []int64 // the hop's new nodes in first-seen order
		seen := map[int32]bool{}
		for _, x := range b.Indices {
			if int(x) >= lo && !seen[x] {
				seen[x] = true
				want = append(want, mb.InputNodes[x])
			}
		}
		if h+1 < L {
			slices.SortStableFunc(want, func(a, c int64) int { return cmp.Compare(a>>shift, c>>shift) })
		}
		for i, v := range want {
			if mb.InputNodes[lo+i] != v {
				t.Fatalf("hop %d: new node %d is id %d, want %d", h, lo+i, mb.InputNodes[lo+i], v)
			}
		}
	}
}

// TestDenseRelabelBadID: a graph whose in-neighbour list names a node
// outside it gives an error with the dense array, not a panic.
func TestDenseRelabelBadID(t *testing.T) {
	g := &graph.CSC{NumNodes: 3, Indptr: []int64{0, 2, 3, 3}, Indices: []int32{1, 7, 0}}
	// One hop relabels in edge order, two take the first hop's ids by
	// bucket (relabelBuckets) once small graphs are ordered.
	// Node 0's in-neighbours are 1 and 7, node 1's 0, node 2 has none.
	for i, fan := range [][]int{{-1}, {-1, -1}, {-1, -1}} {
		if i == 2 {
			orderSmall(t)
		}
		s, err := New(g, Config{Fanouts: fan, Relabel: RelabelDense})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Sample([]int32{0}, 1); err == nil {
			t.Fatalf("%v: neighbour 7 of a 3-node graph: no error", fan)
		}
		if _, err := s.Sample([]int32{int32(len(fan))}, 1); err != nil {
			t.Fatalf("%v: a batch that does not reach node 7: %v", fan, err)
		}
	}
}

// relabelState is what denseMap.relabel leaves: the local ids, the nodes,
// the array and its return values.
type relabelState struct {
	idx, nodes []int32
	tab        []uint32
	bad        int32
	ok         bool
}

// relabelMode is the kernel denseMap.relabel runs in a test: width lanes
// (0: the Go loop alone), and seen, relabelSeenWidth (0: no switch).
type relabelMode struct{ width, seen int }

// relabelModes returns the modes of the kernels of widths, each alone,
// and relabel1 switching to relabel8 where this CPU can run both.
func relabelModes(widths []int) []relabelMode {
	var ms []relabelMode
	for _, w := range widths {
		ms = append(ms, relabelMode{w, 0})
	}
	if slices.Contains(widths, 1) && slices.Contains(relabelWidths, 8) {
		ms = append(ms, relabelMode{1, 8})
	}
	return ms
}

// denseRelabelState relabels src with prev as the earlier nodes, with the
// kernel of mode m, after gens minibatches that relabelled the first half
// of src (their entries of earlier generations left in the array).
func denseRelabelState(m relabelMode, space, gens int, prev, src []int32) relabelState {
	defer func(w, s int) { relabelWidth, relabelSeenWidth = w, s }(relabelWidth, relabelSeenWidth)
	relabelWidth, relabelSeenWidth = m.width, m.seen
	var d denseMap
	for range gens {
		d.begin(space)
		d.insertSeeds(prev)
		old := slices.Clone(src[:len(src)/2])
		for i, u := range old {
			if uint(u) >= uint(space) {
				old[i] = 0
			}
		}
		d.relabel(old, make([]int32, len(prev), len(prev)+len(old)))
	}
	d.begin(space)
	d.insertSeeds(prev)
	idx := slices.Clone(src)
	nodes := make([]int32, len(prev), len(prev)+len(idx))
	copy(nodes, prev)
	nodes, bad, ok := d.relabel(idx, nodes)
	return relabelState{idx, nodes, d.tab, bad, ok}
}

// TestDenseRelabelVector checks each assembly kernel of denseMap.relabel
// this CPU has (relabel1 on every amd64) against its Go loop, state for
// state: the same local ids, new nodes, array entries and, for an id
// outside the array, the same stop (both relabel exactly the ids before
// it). The ids repeat within a vector and
// across vectors, earlier hops' nodes are seen, and the array holds
// entries of earlier generations.
func TestDenseRelabelVector(t *testing.T) {
	if len(relabelWidths) == 0 {
		t.Skip("no assembly kernel (not amd64, or noasm): the Go loop alone runs here")
	}
	checkDenseRelabelVector(t, relabelWidths)
}

// checkDenseRelabelVector is TestDenseRelabelVector with the kernels of
// widths.
func checkDenseRelabelVector(t *testing.T, widths []int) {
	r := rng.New(9)
	for _, tc := range []struct {
		space, prev, n int
		bad            int // position of an id outside the array, or -1
		badID          int32
	}{
		{40, 5, 16, -1, 0},
		{40, 5, 17, -1, 0},
		{40, 10, 1000, -1, 0},
		{1000, 100, 15, -1, 0},
		{1000, 100, 4096, -1, 0},
		{1 << 20, 5000, 50000, -1, 0},
		{1 << 20, 0, 333, -1, 0},
		{100, 20, 64, 0, 100},
		{100, 20, 64, 21, -1},
		{100, 20, 64, 47, 1 << 30},
		{100, 20, 70, 66, 100},
		{1000, 50, 5000, 4000, -5},
		// Most nodes already there (relabel1 switches to relabel8).
		{40, 25, 1000, -1, 0},
		{1000, 600, 4096, -1, 0},
		{100, 60, 64, 21, -1},
	} {
		t.Run(fmt.Sprintf("space=%d/prev=%d/n=%d/bad=%d", tc.space, tc.prev, tc.n, tc.bad), func(t *testing.T) {
			prev := make([]int32, 0, tc.prev)
			in := map[int32]bool{}
			for len(prev) < tc.prev {
				if u := int32(r.IntN(tc.space)); !in[u] {
					in[u] = true
					prev = append(prev, u)
				}
			}
			src := make([]int32, tc.n)
			for i := range src {
				switch i % 4 {
				case 0:
					src[i] = int32(r.IntN(tc.space))
				case 1: // a repeat within the vector
					src[i] = src[i-1]
				case 2:
					if len(prev) > 0 {
						src[i] = prev[r.IntN(len(prev))]
					}
				default:
					src[i] = int32(r.IntN(min(tc.space, 64)))
				}
			}
			if tc.bad >= 0 {
				src[tc.bad] = tc.badID
			}
			want := denseRelabelState(relabelMode{}, tc.space, 3, prev, src)
			for _, m := range relabelModes(widths) {
				got := denseRelabelState(m, tc.space, 3, prev, src)
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("kernel %+v and the Go loop differ: ok %v/%v, bad %d/%d, %d/%d nodes", m, got.ok, want.ok, got.bad, want.bad, len(got.nodes), len(want.nodes))
				}
			}
			if want.ok != (tc.bad < 0) {
				t.Fatalf("ok = %v with the bad id at %d", want.ok, tc.bad)
			}
			if want.ok {
				checkRelabel(t, prev, src, want.idx, want.nodes)
			}
		})
	}
}

// FuzzDenseRelabel compares denseMap.relabel's assembly kernels with its
// Go loop on ids made of the input bytes (a 64-node id space, so that
// ids repeat; bytes from 250 on give ids outside it, some negative).
func FuzzDenseRelabel(f *testing.F) {
	f.Add([]byte{1, 2, 3, 1, 2, 3, 0, 0, 9, 9, 9, 9, 9, 9, 9, 9, 63, 62, 1, 2}, uint8(3))
	f.Add([]byte{5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 255, 21}, uint8(0))
	f.Fuzz(func(t *testing.T, b []byte, nprev uint8) {
		if len(relabelWidths) == 0 {
			t.Skip("no vector kernel")
		}
		const space = 64
		prev := make([]int32, 0, int(nprev)%space)
		for u := int32(0); len(prev) < cap(prev); u += 7 {
			prev = append(prev, u%space)
		}
		slices.Sort(prev)
		prev = slices.Compact(prev)
		src := make([]int32, len(b))
		for i, v := range b {
			switch {
			case v >= 253:
				src[i] = -int32(v)
			case v >= 250:
				src[i] = space + int32(v)
			default:
				src[i] = int32(v) % space
			}
		}
		want := denseRelabelState(relabelMode{}, space, 0, prev, src)
		for _, m := range relabelModes(relabelWidths) {
			got := denseRelabelState(m, space, 0, prev, src)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("kernel %+v and the Go loop differ on %v (prev %v): ok %v/%v bad %d/%d", m, src, prev, got.ok, want.ok, got.bad, want.bad)
			}
		}
	})
}

// TestAutoDense checks RelabelAuto's choice of the dense array: up to
// DenseRelabelNodes nodes relabelled one id at a time, up to
// DenseRelabelNodesVector with the vector kernel.
func TestAutoDense(t *testing.T) {
	defer func(w int) { relabelWidth = w }(relabelWidth)
	for _, tc := range []struct {
		nodes, width int
		want         bool
	}{
		{0, 0, false}, {0, 16, false},
		{1, 0, true}, {1, 8, true}, {1, 16, true},
		{DenseRelabelNodes, 0, true}, {DenseRelabelNodes + 1, 0, false},
		{DenseRelabelNodes + 1, 8, true}, {DenseRelabelNodesVector + 1, 8, false},
		{DenseRelabelNodes + 1, 16, true}, {DenseRelabelNodesVector, 16, true},
		{DenseRelabelNodesVector + 1, 16, false},
	} {
		relabelWidth = tc.width
		if got := AutoDense(tc.nodes); got != tc.want {
			t.Errorf("AutoDense(%d) with the %d-lane kernel = %v, want %v", tc.nodes, tc.width, got, tc.want)
		}
		if got := useDense(RelabelAuto, tc.nodes); got != tc.want {
			t.Errorf("useDense(auto, %d) with the %d-lane kernel = %v, want %v", tc.nodes, tc.width, got, tc.want)
		}
		if !useDense(RelabelDense, tc.nodes) || useDense(RelabelHash, tc.nodes) {
			t.Errorf("%d nodes: the forced modes are not kept", tc.nodes)
		}
	}
}

// TestRoom checks room: contents and length kept, room for n more, a
// quarter to spare when it grows, and the same array when it need not.
func TestRoom(t *testing.T) {
	for _, tc := range []struct{ len, cap, n int }{{0, 0, 0}, {0, 0, 10}, {3, 4, 1}, {3, 4, 2}, {1000, 1000, 5000}} {
		s := make([]int32, tc.len, tc.cap)
		for i := range s {
			s[i] = int32(i + 7)
		}
		got := room(s, tc.n)
		if len(got) != tc.len || cap(got)-len(got) < tc.n {
			t.Fatalf("%+v: len %d cap %d", tc, len(got), cap(got))
		}
		for i := range got {
			if got[i] != int32(i+7) {
				t.Fatalf("%+v: element %d lost", tc, i)
			}
		}
		same := tc.cap > 0 && cap(got) > 0 && &got[:1][0] == &s[:1][0]
		if fits := tc.cap-tc.len >= tc.n; fits != same && tc.cap > 0 {
			t.Errorf("%+v: reallocated %v, room was there %v", tc, !same, fits)
		}
		if !same && cap(got) < (tc.len+tc.n)*5/4 {
			t.Errorf("%+v: grown to %d, want a quarter to spare over %d", tc, cap(got), tc.len+tc.n)
		}
	}
}

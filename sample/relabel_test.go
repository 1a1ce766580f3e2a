package sample

import (
	"fmt"
	"slices"
	"testing"

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

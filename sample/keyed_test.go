package sample

import (
	"fmt"
	"slices"
	"testing"

	"github.com/graphmill/graphmill/batch"
	"github.com/graphmill/graphmill/graph"
	"github.com/graphmill/graphmill/internal/rng"
)

// drawsOf records, for every (hop, destination) of mb, the sorted global
// ids of the sources drawn for it, checking that a destination seen before
// (in another batch) drew the same ones.
func drawsOf(t *testing.T, mb *batch.MiniBatch, keyOf func(int32) int32, seen map[[2]int32][]int32, what string) {
	t.Helper()
	L := len(mb.Blocks)
	for bi := range mb.Blocks {
		b := &mb.Blocks[bi]
		hop := int32(L - 1 - bi)
		for i := 0; i < b.NumDst; i++ {
			var src []int32
			for _, q := range b.Indices[b.Indptr[i]:b.Indptr[i+1]] {
				src = append(src, keyOf(int32(mb.InputNodes[q])))
			}
			slices.Sort(src)
			k := [2]int32{hop, keyOf(int32(mb.InputNodes[i]))}
			if prev, ok := seen[k]; ok {
				if !slices.Equal(prev, src) {
					t.Fatalf("%s: hop %d node %d drew %v, elsewhere %v", what, hop, k[1], src, prev)
				}
				continue
			}
			seen[k] = src
		}
	}
}

// TestKeyedDraws checks that a node's neighbours depend on (key, hop,
// node) only: any split of the seeds into batches, in any order, draws the
// same neighbours for every node, for every sampling method.
func TestKeyedDraws(t *testing.T) {
	g, _, _ := randomGraph(t, 3000, 5, graph.BuildOptions{})
	all := make([]int32, 600)
	for i := range all {
		all[i] = int32(i * 5)
	}
	for _, cfg := range []Config{
		{Fanouts: []int{10, 5}},
		{Fanouts: []int{3, 70}}, // nodes of degree > 64: the bitset path
		{Fanouts: []int{4, 4}, Replace: true},
		{Fanouts: []int{4, -1}, Weighted: true},
		{Fanouts: []int{4, 3}, Weighted: true, Replace: true},
		{Fanouts: []int{6, 2}, Relabel: RelabelDense},
	} {
		s, err := New(g, cfg)
		if err != nil {
			t.Fatal(err)
		}
		id := func(v int32) int32 { return v }
		seen := map[[2]int32][]int32{}
		key := EpochKey(7, 2)
		for _, bs := range []int{600, 1, 37, 128} {
			batches, err := Batches(all, bs, true, uint64(bs), false)
			if err != nil {
				t.Fatal(err)
			}
			for _, b := range batches {
				mb, err := s.Sample(b, key)
				if err != nil {
					t.Fatal(err)
				}
				drawsOf(t, mb, id, seen, fmt.Sprintf("%+v batch size %d", cfg, bs))
			}
		}
		// Another epoch draws differently.
		other := map[[2]int32][]int32{}
		mb, _ := s.Sample(all, EpochKey(7, 3))
		drawsOf(t, mb, id, other, "epoch 3")
		differ := 0
		for k, v := range other {
			if !slices.Equal(v, seen[k]) {
				differ++
			}
		}
		if !cfg.Weighted && cfg.Fanouts[1] != -1 && differ == 0 {
			t.Fatalf("%+v: epoch 3 drew exactly what epoch 2 drew", cfg)
		}
	}
}

// TestKeyIDs relabels a graph by a permutation, keeping every in-neighbour
// list in the original order, and checks that with Config.KeyIDs set to the
// original ids the relabelled graph draws exactly the original's
// neighbours (what a part of a partitioned graph relies on) and numbers
// the minibatch's nodes as the original does.
func TestKeyIDs(t *testing.T) {
	orderSmall(t) // number by buckets of the key ids, not in edge order
	g, _, _ := randomGraph(t, 2000, 6, graph.BuildOptions{})
	n := g.NumNodes
	perm := make([]int32, n) // original -> new
	for i := range perm {
		perm[i] = int32(i)
	}
	r := rng.New(3)
	for i := n - 1; i > 0; i-- {
		j := r.IntN(i + 1)
		perm[i], perm[j] = perm[j], perm[i]
	}
	orig := make([]int32, n) // new -> original
	for v, p := range perm {
		orig[p] = int32(v)
	}
	h := &graph.CSC{NumNodes: n, Indptr: make([]int64, n+1)}
	for p := 0; p < n; p++ {
		v := orig[p]
		lo, hi := g.Indptr[v], g.Indptr[v+1]
		for q := lo; q < hi; q++ {
			h.Indices = append(h.Indices, perm[g.Indices[q]])
			h.Weights = append(h.Weights, g.Weights[q])
		}
		h.Indptr[p+1] = int64(len(h.Indices))
	}
	seeds := []int32{3, 99, 1500, 7, 1234}
	pseeds := make([]int32, len(seeds))
	for i, v := range seeds {
		pseeds[i] = perm[v]
	}
	for i, cfg := range []Config{{Fanouts: []int{5, 5}}, {Fanouts: []int{70, 3}}, {Fanouts: []int{3, 3}, Weighted: true}, {Fanouts: []int{4}, Replace: true}, {Fanouts: []int{5, 5}}} {
		sg, _ := New(g, cfg)
		pcfg := cfg
		pcfg.KeyIDs = orig
		sh, err := New(h, pcfg)
		if err != nil {
			t.Fatal(err)
		}
		if i == 4 { // drawn as on a graph larger than the cache (drawAhead)
			sg.passOK, sg.prefetch = false, true
			sh.passOK, sh.prefetch = false, true
		}
		seen := map[[2]int32][]int32{}
		a, _ := sg.Sample(seeds, 11)
		drawsOf(t, a, func(v int32) int32 { return v }, seen, "original")
		b, _ := sh.Sample(pseeds, 11)
		drawsOf(t, b, func(v int32) int32 { return orig[v] }, seen, fmt.Sprintf("%+v relabelled", cfg))
		if len(a.InputNodes) != len(b.InputNodes) {
			t.Fatalf("%+v: %d input nodes, relabelled %d", cfg, len(a.InputNodes), len(b.InputNodes))
		}
		// Numbered alike: the dense array's first-seen order, and buckets
		// of the key ids (order.go), not of the relabelled graph's ids.
		for i, v := range b.InputNodes {
			if int64(orig[v]) != a.InputNodes[i] {
				t.Fatalf("%+v: input node %d is %d (originally %d), want %d", cfg, i, v, orig[v], a.InputNodes[i])
			}
		}
	}
	if _, err := New(g, Config{Fanouts: []int{2}, KeyIDs: orig[:5]}); err == nil {
		t.Fatal("5 key ids for 2000 nodes: no error")
	}
}

// TestAssemblerMatchesSampleInto assembles minibatches from Neighbors'
// draws, splitting every hop's destinations into two halves drawn
// separately (as two owners would), and checks they equal SampleInto's:
// with the graph's node count, the default relabelling's (the dense
// array here), without it the hash map's.
func TestAssemblerMatchesSampleInto(t *testing.T) {
	g, _, _ := randomGraph(t, 3000, 8, graph.BuildOptions{})
	var cfgs []Config
	for _, cfg := range []Config{{Fanouts: []int{10, 5}}, {Fanouts: []int{3, 70, 2}}, {Fanouts: []int{4, 4}, Replace: true}, {Fanouts: []int{-1, 3}, Weighted: true}} {
		hash := cfg
		hash.Relabel = RelabelHash
		cfgs = append(cfgs, cfg, hash)
	}
	for _, cfg := range cfgs {
		s, _ := New(g, cfg)
		var a Assembler
		if cfg.Relabel == RelabelAuto {
			a.NumNodes = g.NumNodes
		}
		mb := &batch.MiniBatch{}
		for trial, seeds := range [][]int32{{0, 97, 5, 1000}, {2999}, {7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20}} {
			key := EpochKey(3, trial)
			want, err := s.Sample(seeds, key)
			if err != nil {
				t.Fatal(err)
			}
			if err := a.Begin(mb, seeds, len(cfg.Fanouts)); err != nil {
				t.Fatal(err)
			}
			for h := range cfg.Fanouts {
				dst := a.Frontier()
				half := len(dst) / 2
				c1 := make([]int32, half)
				c2 := make([]int32, len(dst)-half)
				s1, err := s.Neighbors(dst[:half], key, h, cfg.Fanouts[h], c1, nil)
				if err != nil {
					t.Fatal(err)
				}
				s2, err := s.Neighbors(dst[half:], key, h, cfg.Fanouts[h], c2, nil)
				if err != nil {
					t.Fatal(err)
				}
				if err := a.AddHop(append(c1, c2...), append(s1, s2...)); err != nil {
					t.Fatal(err)
				}
			}
			if err := a.Finish(); err != nil {
				t.Fatal(err)
			}
			for i := range want.Blocks {
				w, b := &want.Blocks[i], &mb.Blocks[i]
				if w.NumSrc != b.NumSrc || w.NumDst != b.NumDst || !slices.Equal(w.Indptr, b.Indptr) || !slices.Equal(w.Indices, b.Indices) {
					t.Fatalf("%+v seeds %v: block %d differs", cfg, seeds, i)
				}
			}
			if !slices.Equal(want.InputNodes, mb.InputNodes) || len(want.Seeds) != len(mb.Seeds) {
				t.Fatalf("%+v seeds %v: input nodes differ", cfg, seeds)
			}
		}
	}
	var a Assembler
	if err := a.Begin(&batch.MiniBatch{}, []int32{1, 1}, 2); err == nil {
		t.Fatal("duplicate seeds: no error")
	}
	if err := a.Begin(&batch.MiniBatch{}, []int32{1}, 1); err != nil {
		t.Fatal(err)
	}
	if err := a.AddHop([]int32{2}, []int32{5}); err == nil {
		t.Fatal("counts add up to 2 sources, got 1: no error")
	}
	// With a node count, ids outside it are errors, not panics.
	a.NumNodes = 10
	if err := a.Begin(&batch.MiniBatch{}, []int32{1, 10}, 1); err == nil {
		t.Fatal("seed 10 of 10 nodes: no error")
	}
	if err := a.Begin(&batch.MiniBatch{}, []int32{1}, 1); err != nil {
		t.Fatal(err)
	}
	if err := a.AddHop([]int32{2}, []int32{5, 50}); err == nil {
		t.Fatal("source 50 of 10 nodes: no error")
	}
	if err := a.Finish(); err == nil {
		t.Fatal("Finish after a failed hop: no error")
	}
}

package parts_test

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/graphmill/graphmill/dataset"
	"github.com/graphmill/graphmill/dataset/cora"
	"github.com/graphmill/graphmill/dataset/parts"
	"github.com/graphmill/graphmill/graph"
	"github.com/graphmill/graphmill/npy"
	"github.com/graphmill/graphmill/partition"
)

// weightedRaw is a small directed dataset with edge weights, features,
// labels (some unlabelled), splits, isolated nodes and duplicate edges.
func weightedRaw(n int) *dataset.Raw {
	r := rand.New(rand.NewPCG(7, 7))
	raw := &dataset.Raw{Name: "weighted", NumNodes: n, FeatureDim: 3, NumClasses: 4,
		Build: graph.BuildOptions{Dedup: true, SelfLoops: graph.RemoveSelfLoops}}
	for i := 0; i < 6*n; i++ {
		u := r.IntN(n - 5)
		v := (u + 1 + r.IntN(20)) % (n - 5)
		raw.Src = append(raw.Src, int32(u))
		raw.Dst = append(raw.Dst, int32(v))
		raw.EdgeWeights = append(raw.EdgeWeights, float32(i))
	}
	for v := 0; v < n; v++ {
		raw.Features = append(raw.Features, float32(v), float32(-v), float32(v)*0.5)
		raw.Labels = append(raw.Labels, int32(v%5)-1)
		switch v % 7 {
		case 0, 1:
			raw.Train = append(raw.Train, int32(v))
		case 2:
			raw.Val = append(raw.Val, int32(v))
		case 3:
			raw.Test = append(raw.Test, int32(v))
		}
	}
	return raw
}

func writeRaw(t *testing.T, raw *dataset.Raw) *dataset.Dataset {
	t.Helper()
	dir := filepath.Join(t.TempDir(), raw.Name)
	if err := dataset.Write(context.Background(), dir, raw, dataset.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	d, err := dataset.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func TestWriteDataset(t *testing.T) {
	coraRaw, err := cora.Raw()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		raw    *dataset.Raw
		k      int
		method partition.Method
		train  bool
		edges  bool
	}{
		{"cora-metis", coraRaw, 5, partition.Multilevel, true, true},
		{"cora-metis-4", coraRaw, 4, partition.Multilevel, false, false},
		{"cora-random", coraRaw, 3, partition.Random, false, false},
		{"weighted-fennel", weightedRaw(400), 4, partition.Fennel, true, false},
		{"weighted-one-part", weightedRaw(50), 1, partition.Multilevel, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := writeRaw(t, tc.raw)
			g, err := partition.FromCSC(context.Background(), d.Graph, 2)
			if err != nil {
				t.Fatal(err)
			}
			weights, names := partition.BalanceWeights(d, tc.train, tc.edges)
			res, err := partition.Partition(context.Background(), g, partition.Options{Parts: tc.k, Method: tc.method, Weights: weights, Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(t.TempDir(), "parts")
			book, err := parts.Write(context.Background(), d, res.Parts, res.NumParts, out, parts.WriteOptions{Method: string(tc.method), Balance: names, VCycles: tc.k, Stats: res.Stats})
			if err != nil {
				t.Fatal(err)
			}
			checkPartitioned(t, d, res, out, book)
			if rb, err := parts.ReadBook(out); err != nil {
				t.Fatal(err)
			} else if rb.VCycles != tc.k {
				t.Errorf("book's vcycles %d, want %d as written", rb.VCycles, tc.k)
			}
			// Not overwritten without Overwrite, and nothing left behind.
			if _, err := parts.Write(context.Background(), d, res.Parts, res.NumParts, out, parts.WriteOptions{}); err == nil || !strings.Contains(err.Error(), "already exists") {
				t.Errorf("second write: %v", err)
			}
			if _, err := parts.Write(context.Background(), d, res.Parts, res.NumParts, out, parts.WriteOptions{Overwrite: true}); err != nil {
				t.Errorf("overwrite: %v", err)
			}
			entries, _ := os.ReadDir(filepath.Dir(out))
			if len(entries) != 1 {
				t.Errorf("left behind: %v", entries)
			}
		})
	}
}

// checkPartitioned checks that the parts together reproduce the dataset.
func checkPartitioned(t *testing.T, d *dataset.Dataset, res *partition.Result, dir string, book *parts.Book) {
	t.Helper()
	n := d.Meta.NumNodes
	rb, err := parts.ReadBook(dir)
	if err != nil {
		t.Fatal(err)
	}
	if rb.NumParts != res.NumParts || rb.NumNodes != n || len(rb.Parts) != len(book.Parts) {
		t.Fatalf("book %+v", rb)
	}
	type edge struct {
		src, dst int32
		w        float32
	}
	var want, got []edge
	for v := 0; v < n; v++ {
		for j := d.Graph.Indptr[v]; j < d.Graph.Indptr[v+1]; j++ {
			e := edge{d.Graph.Indices[j], int32(v), 0}
			if d.Graph.Weights != nil {
				e.w = d.Graph.Weights[j]
			}
			want = append(want, e)
		}
	}
	owner := make([]int, n)
	for i := range owner {
		owner[i] = -1
	}
	var splits [3][]int32
	fullIn, fullOut := d.Graph.InDegrees(), d.Graph.OutDegrees()
	if rb.Stats.EdgeCut != res.Stats.EdgeCut || !slices.Equal(rb.Stats.PartSizes, res.Stats.PartSizes) {
		t.Errorf("book stats %+v, partition's %+v", rb.Stats, res.Stats)
	}
	for p, pi := range rb.Parts {
		part, err := parts.OpenPart(dir, rb, p)
		if err != nil {
			t.Fatal(err)
		}
		pd, gids := part.Dataset, part.GlobalIDs
		// Global degrees of every local node, inner and halo.
		for lv, v := range gids {
			if part.InDegrees[lv] != fullIn[v] || part.OutDegrees[lv] != fullOut[v] {
				t.Fatalf("part %d: local node %d (global %d) has degrees in %d out %d, the full graph %d / %d",
					p, lv, v, part.InDegrees[lv], part.OutDegrees[lv], fullIn[v], fullOut[v])
			}
		}
		if err := pd.Verify(context.Background()); err != nil {
			t.Fatal(err)
		}
		ni, nh := pi.NumInner, pi.NumHalo
		if pd.Meta.NumNodes != ni+nh || len(gids) != ni+nh {
			t.Fatalf("part %d: %d nodes, %d inner + %d halo", p, pd.Meta.NumNodes, ni, nh)
		}
		haloParts := readInt32(t, filepath.Join(dir, pi.Dir, parts.ArrayHaloParts+".npy"))
		haloLocal := readInt32(t, filepath.Join(dir, pi.Dir, parts.ArrayHaloLocal+".npy"))
		inner := map[int32]bool{}
		for i, v := range gids[:ni] {
			if res.Parts[v] != int32(p) {
				t.Fatalf("part %d: inner node %d belongs to part %d", p, v, res.Parts[v])
			}
			if owner[v] >= 0 {
				t.Fatalf("node %d inner in parts %d and %d", v, owner[v], p)
			}
			owner[v] = p
			inner[v] = true
			if i > 0 && gids[i-1] >= v {
				t.Fatalf("part %d: inner nodes not in increasing id order", p)
			}
		}
		// Halo: exactly the in-neighbours of inner nodes owned elsewhere.
		wantHalo := map[int32]bool{}
		for _, v := range gids[:ni] {
			for _, u := range d.Graph.InNeighbors(v) {
				if !inner[u] {
					wantHalo[u] = true
				}
			}
		}
		if len(wantHalo) != nh {
			t.Fatalf("part %d: %d halo nodes, want %d", p, nh, len(wantHalo))
		}
		for i, u := range gids[ni:] {
			if !wantHalo[u] || haloParts[i] != res.Parts[u] {
				t.Fatalf("part %d: halo node %d (owner %d) wrong", p, u, haloParts[i])
			}
			q := haloParts[i]
			if owner := rb.Parts[q]; int(haloLocal[i]) >= owner.NumInner {
				t.Fatalf("halo local id %d beyond part %d", haloLocal[i], q)
			}
		}
		// Edges: all in-edges of inner nodes, sorted lists, none for halo.
		lg := pd.Graph
		for lv := 0; lv < ni+nh; lv++ {
			nb := lg.InNeighbors(int32(lv))
			if lv >= ni && len(nb) > 0 {
				t.Fatalf("part %d: halo node has in-edges", p)
			}
			if !slices.IsSorted(nb) {
				t.Fatalf("part %d: unsorted list", p)
			}
			for j := lg.Indptr[lv]; j < lg.Indptr[lv+1]; j++ {
				e := edge{gids[lg.Indices[j]], gids[lv], 0}
				if lg.Weights != nil {
					e.w = lg.Weights[j]
				}
				got = append(got, e)
			}
		}
		// Features and labels.
		dim := d.Meta.FeatureDim
		for lv, v := range gids {
			if !slices.Equal(pd.Features[lv*dim:(lv+1)*dim], d.Features[int(v)*dim:(int(v)+1)*dim]) {
				t.Fatalf("part %d: features of node %d differ", p, v)
			}
			wantLabel := int32(-1)
			if lv < ni {
				wantLabel = d.Labels[v]
			}
			if pd.Labels[lv] != wantLabel {
				t.Fatalf("part %d: label of local %d is %d, want %d", p, lv, pd.Labels[lv], wantLabel)
			}
		}
		for s, ids := range [][]int32{pd.Train, pd.Val, pd.Test} {
			for _, lv := range ids {
				if int(lv) >= ni {
					t.Fatalf("part %d: split holds halo node", p)
				}
				splits[s] = append(splits[s], gids[lv])
			}
		}
		pd.Close()
	}
	for v, p := range owner {
		if p < 0 {
			t.Fatalf("node %d in no part", v)
		}
	}
	cmp := func(a, b edge) int {
		if a.dst != b.dst {
			return int(a.dst - b.dst)
		}
		if a.src != b.src {
			return int(a.src - b.src)
		}
		return int(a.w - b.w)
	}
	slices.SortFunc(want, cmp)
	slices.SortFunc(got, cmp)
	if !slices.Equal(want, got) {
		t.Fatalf("parts hold %d edges, original %d (or they differ)", len(got), len(want))
	}
	for s, orig := range [][]int32{d.Train, d.Val, d.Test} {
		o := slices.Sorted(slices.Values(orig))
		slices.Sort(splits[s])
		if !slices.Equal(o, splits[s]) {
			t.Fatalf("split %d differs", s)
		}
	}
	// Top-level maps.
	order := readInt32(t, filepath.Join(dir, rb.Arrays[parts.ArrayOrigIDs]))
	newIDs := readInt32(t, filepath.Join(dir, rb.Arrays[parts.ArrayNewIDs]))
	partIDs := readInt32(t, filepath.Join(dir, rb.Arrays[parts.ArrayPartIDs]))
	if !slices.Equal(partIDs, res.Parts) {
		t.Fatal("part_ids differ")
	}
	for i, v := range order {
		if newIDs[v] != int32(i) {
			t.Fatal("orig_ids and new_ids are not inverse")
		}
		p := partIDs[v]
		if int64(i) < rb.Parts[p].NodeRange[0] || int64(i) >= rb.Parts[p].NodeRange[1] {
			t.Fatal("reordered id outside its part's range")
		}
	}
}

func readInt32(t *testing.T, path string) []int32 {
	t.Helper()
	a, _, err := npy.ReadFile[int32](path)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestWriteDatasetErrors(t *testing.T) {
	d := writeRaw(t, weightedRaw(60))
	out := filepath.Join(t.TempDir(), "p")
	if _, err := parts.Write(context.Background(), d, make([]int32, 5), 2, out, parts.WriteOptions{}); err == nil {
		t.Error("wrong length accepted")
	}
	bad := make([]int32, 60)
	bad[3] = 7
	if _, err := parts.Write(context.Background(), d, bad, 2, out, parts.WriteOptions{}); err == nil {
		t.Error("part id out of range accepted")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := parts.Write(ctx, d, make([]int32, 60), 1, out, parts.WriteOptions{}); err == nil {
		t.Error("cancelled write succeeded")
	}
	if entries, _ := os.ReadDir(filepath.Dir(out)); len(entries) != 0 {
		t.Errorf("failed writes left %v", entries)
	}
	if _, err := parts.ReadBook(t.TempDir()); err == nil || !strings.Contains(err.Error(), "not a partitioned dataset") {
		t.Errorf("ReadBook of empty dir: %v", err)
	}
}

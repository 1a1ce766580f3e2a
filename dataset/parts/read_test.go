package parts_test

import (
	"context"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/graphmill/graphmill/dataset"
	"github.com/graphmill/graphmill/dataset/cora"
	"github.com/graphmill/graphmill/dataset/parts"
	"github.com/graphmill/graphmill/npy"
	"github.com/graphmill/graphmill/partition"
)

func TestReorder(t *testing.T) {
	assign := []int32{2, 0, 1, 0, 2, 2, 0}
	order, offsets := parts.Reorder(assign, 4)
	if want := []int64{0, 3, 4, 7, 7}; !slices.Equal(offsets, want) {
		t.Fatalf("offsets %v, want %v", offsets, want)
	}
	if want := []int32{1, 3, 6, 2, 0, 4, 5}; !slices.Equal(order, want) {
		t.Fatalf("order %v, want %v", order, want)
	}
	inv := parts.Inverse(order)
	seen := make([]bool, len(assign))
	for v := range assign {
		if order[inv[v]] != int32(v) || seen[inv[v]] {
			t.Fatalf("not a bijection at %d", v)
		}
		seen[inv[v]] = true
		p := assign[v]
		if int64(inv[v]) < offsets[p] || int64(inv[v]) >= offsets[p+1] {
			t.Fatalf("node %d of part %d got new id %d outside its range", v, p, inv[v])
		}
	}
}

// writeCora4 partitions the embedded Cora 4 ways and writes it.
func writeCora4(t *testing.T) (dir string, d *dataset.Dataset) {
	t.Helper()
	raw, err := cora.Raw()
	if err != nil {
		t.Fatal(err)
	}
	d = writeRaw(t, raw)
	g, err := partition.FromCSC(context.Background(), d.Graph, 0)
	if err != nil {
		t.Fatal(err)
	}
	res, err := partition.Partition(context.Background(), g, partition.Options{Parts: 4, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	dir = filepath.Join(t.TempDir(), "cora-4")
	if _, err := parts.Write(context.Background(), d, res.Parts, 4, dir, parts.WriteOptions{Method: "metis", Stats: res.Stats}); err != nil {
		t.Fatal(err)
	}
	return dir, d
}

// TestGCNNormFromParts checks what the degrees are for: the symmetric GCN
// coefficient 1/sqrt((deg(u)+1)(deg(v)+1)) of every stored edge u->v,
// computed from the part alone (halo sources included), equals the one
// computed on the full graph.
func TestGCNNormFromParts(t *testing.T) {
	dir, d := writeCora4(t)
	book, err := parts.ReadBook(dir)
	if err != nil {
		t.Fatal(err)
	}
	full := d.Graph.InDegrees()
	halo, edges := 0, 0
	for p := range book.NumParts {
		part, err := parts.OpenPart(dir, book, p)
		if err != nil {
			t.Fatal(err)
		}
		g := part.Graph
		for v := range part.NumInner() {
			for j := g.Indptr[v]; j < g.Indptr[v+1]; j++ {
				u := g.Indices[j]
				got := 1 / math.Sqrt(float64(part.InDegrees[u]+1)*float64(part.InDegrees[v]+1))
				gu, gv := part.GlobalIDs[u], part.GlobalIDs[v]
				want := 1 / math.Sqrt(float64(full[gu]+1)*float64(full[gv]+1))
				if got != want {
					t.Fatalf("part %d: edge %d->%d: coefficient %v, full graph %v", p, gu, gv, got, want)
				}
				// The local graph alone would get halo sources wrong.
				if int(u) >= part.NumInner() {
					halo++
				}
				edges++
			}
		}
		part.Close()
	}
	if halo == 0 || edges != int(d.Meta.NumEdges) {
		t.Fatalf("%d edges checked (%d from halo sources), want %d with some from halos", edges, halo, d.Meta.NumEdges)
	}
}

func TestReadErrors(t *testing.T) {
	dir, _ := writeCora4(t)
	book, err := parts.ReadBook(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := parts.OpenPart(dir, book, 4); err == nil {
		t.Error("part 4 of 4 opened")
	}
	for r := int64(0); r < int64(book.NumNodes); r += 97 {
		p := book.PartOf(r)
		if p < 0 || r < book.Parts[p].NodeRange[0] || r >= book.Parts[p].NodeRange[1] {
			t.Fatalf("PartOf(%d) = %d", r, p)
		}
	}
	if book.PartOf(-1) != -1 || book.PartOf(int64(book.NumNodes)) != -1 {
		t.Error("PartOf outside the ids")
	}
	bookJSON, err := os.ReadFile(filepath.Join(dir, parts.BookFile))
	if err != nil {
		t.Fatal(err)
	}
	part0 := filepath.Join(dir, book.Parts[0].Dir)
	writeInt32 := func(name string, a []int32) {
		if err := npy.WriteFile(filepath.Join(part0, name+".npy"), a, len(a)); err != nil {
			t.Fatal(err)
		}
	}
	read := func(name string) []int32 {
		a, _, err := npy.ReadFile[int32](filepath.Join(part0, name+".npy"))
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	in, out, hp := read(parts.ArrayInDegrees), read(parts.ArrayOutDegrees), read(parts.ArrayHaloParts)
	for _, tc := range []struct {
		name    string
		breakIt func()
		want    string
	}{
		{"version 1", func() {
			os.WriteFile(filepath.Join(dir, parts.BookFile), []byte(strings.Replace(string(bookJSON), `"format_version": 2`, `"format_version": 1`, 1)), 0o644)
		}, "partition the dataset again"},
		{"version 3", func() {
			os.WriteFile(filepath.Join(dir, parts.BookFile), []byte(strings.Replace(string(bookJSON), `"format_version": 2`, `"format_version": 3`, 1)), 0o644)
		}, "version 3 is not supported"},
		{"short in-degrees", func() { writeInt32(parts.ArrayInDegrees, in[:len(in)-1]) }, "in_degrees.npy"},
		{"wrong in-degree", func() {
			bad := slices.Clone(in)
			bad[0]++
			writeInt32(parts.ArrayInDegrees, bad)
		}, "in-edges stored"},
		{"negative out-degree", func() {
			bad := slices.Clone(out)
			bad[len(bad)-1] = -3
			writeInt32(parts.ArrayOutDegrees, bad)
		}, "out_degrees.npy"},
		{"missing out-degrees", func() { os.Remove(filepath.Join(part0, parts.ArrayOutDegrees+".npy")) }, parts.ArrayOutDegrees},
		{"halo owned by itself", func() {
			bad := slices.Clone(hp)
			bad[0] = 0
			writeInt32(parts.ArrayHaloParts, bad)
		}, "owned by its own part"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.breakIt()
			defer func() {
				os.WriteFile(filepath.Join(dir, parts.BookFile), bookJSON, 0o644)
				writeInt32(parts.ArrayInDegrees, in)
				writeInt32(parts.ArrayOutDegrees, out)
				writeInt32(parts.ArrayHaloParts, hp)
			}()
			b, err := parts.ReadBook(dir)
			if err == nil {
				_, err = parts.OpenPart(dir, b, 0)
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error naming %q", err, tc.want)
			}
		})
	}
	// Restored, it opens again.
	if p, err := parts.OpenPart(dir, book, 0); err != nil {
		t.Fatal(err)
	} else {
		p.Close()
	}
}

// TestReaderLinksNoPartitioner checks that a worker importing this package
// does not link the partitioning algorithms.
func TestReaderLinksNoPartitioner(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go command not on PATH")
	}
	out, err := exec.Command(gobin, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasSuffix(dep, "/graphmill/partition") || strings.Contains(dep, "/graphmill/partition/") {
			t.Fatalf("dataset/parts depends on %s", dep)
		}
	}
}

package dataset

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/graphmill/graphmill/graph"
	"github.com/graphmill/graphmill/npy"
)

// tiny is a 4-node dataset: a path 0-1-2-3 plus a duplicate edge.
func tiny() *Raw {
	return &Raw{
		Name: "tiny", NumNodes: 4,
		Src: []int32{0, 1, 2, 0}, Dst: []int32{1, 2, 3, 1},
		Build:    graph.BuildOptions{Symmetrize: true, Dedup: true},
		Features: []float32{0, 1, 2, 3, 4, 5, 6, 7}, FeatureDim: 2,
		Labels: []int32{0, 1, -1, 1}, NumClasses: 2,
		Train: []int32{0, 1}, Val: []int32{3}, Test: []int32{2},
	}
}

func TestWriteOpenRoundTrip(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tiny")
	if err := Write(context.Background(), dir, tiny(), WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	d, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if d.Meta.NumNodes != 4 || d.Meta.NumEdges != 6 || d.Meta.FeatureDim != 2 || d.Meta.NumClasses != 2 {
		t.Fatalf("meta %+v", d.Meta)
	}
	if !slices.Equal(d.Graph.InNeighbors(1), []int32{0, 2}) || !slices.Equal(d.Graph.InNeighbors(3), []int32{2}) {
		t.Fatalf("graph %v %v", d.Graph.Indptr, d.Graph.Indices)
	}
	if !slices.Equal(d.Features[6:8], []float32{6, 7}) || !slices.Equal(d.Labels, []int32{0, 1, -1, 1}) {
		t.Fatal("features or labels differ")
	}
	if !slices.Equal(d.Train, []int32{0, 1}) || d.Meta.Splits["val"] != 1 {
		t.Fatal("splits differ")
	}
	if err := d.Verify(context.Background()); err != nil {
		t.Fatal(err)
	}
	// No temporary directories are left behind.
	ents, _ := os.ReadDir(filepath.Dir(dir))
	if len(ents) != 1 {
		t.Fatalf("leftovers next to the dataset: %v", ents)
	}
}

func TestWriteRefusesExistingAndOverwritesAtomically(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ds")
	if err := Write(context.Background(), dir, tiny(), WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := Write(context.Background(), dir, tiny(), WriteOptions{}); err == nil {
		t.Fatal("overwrote without Overwrite")
	}
	// A failing write leaves the previous dataset intact.
	bad := tiny()
	bad.Labels[0] = 7
	if err := Write(context.Background(), dir, bad, WriteOptions{Overwrite: true}); err == nil {
		t.Fatal("bad labels accepted")
	}
	// A write aborted part-way (cancelled) also leaves it intact.
	w, err := NewWriter(dir, true)
	if err != nil {
		t.Fatal(err)
	}
	Put(w, ArrayIndptr, []int64{0})
	// Array names are file names in the dataset's folder, never a path
	// out of it (this one wrote ../escaped.npy beside the dataset).
	for _, name := range []string{"../escaped", "a/b", "", ".hidden"} {
		if err := Put(w, name, []int32{1, 2, 3}); err == nil {
			t.Errorf("array name %q accepted", name)
		}
	}
	w.Abort()
	d, err := Open(dir)
	if err != nil {
		t.Fatalf("previous dataset damaged: %v", err)
	}
	d.Close()
	if d.Graph != nil || d.Labels != nil || d.Train != nil {
		t.Error("Close left fields pointing into the unmapped arrays")
	}
	r := tiny()
	r.Name = "second"
	if err := Write(context.Background(), dir, r, WriteOptions{Overwrite: true}); err != nil {
		t.Fatal(err)
	}
	d, err = Open(dir)
	if err != nil || d.Meta.Name != "second" {
		t.Fatalf("overwrite: %v %v", err, d.Meta.Name)
	}
	d.Close()
	// A file the user keeps in the dataset's folder stops --overwrite,
	// which would delete it with the folder.
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("keep"), 0o666)
	r.Name = "third"
	if err := Write(context.Background(), dir, r, WriteOptions{Overwrite: true}); err == nil || !strings.Contains(err.Error(), "notes.txt") {
		t.Fatalf("overwrite over the user's file: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "notes.txt")); err != nil || string(b) != "keep" {
		t.Fatalf("the user's file: %q %v", b, err)
	}
}

func TestRawValidate(t *testing.T) {
	cases := []struct {
		name string
		mod  func(*Raw)
		want string
	}{
		{"edge range", func(r *Raw) { r.Dst[2] = 4 }, "edge 2 (2 -> 4)"},
		{"negative id", func(r *Raw) { r.Src[0] = -1 }, "edge 0 (-1 -> 1)"},
		{"label range", func(r *Raw) { r.Labels[3] = 2 }, "label of node 3 is 2"},
		{"label below -1", func(r *Raw) { r.Labels[3] = -2 }, "label of node 3 is -2"},
		{"split range", func(r *Raw) { r.Test[0] = 9 }, "test[0]=9 out of range [0,4)"},
		{"split repeated", func(r *Raw) { r.Train = []int32{0, 1, 0} }, "train[2]=0 appears twice in train"},
		{"splits share", func(r *Raw) { r.Val = []int32{1} }, "val[0]=1 is also in train"},
		{"weight NaN", func(r *Raw) { r.EdgeWeights = []float32{1, float32(math.NaN()), 1, 1} }, "edge weight 1 is NaN, not finite"},
		{"features", func(r *Raw) { r.Features = r.Features[:7] }, "7 feature values"},
		{"labels len", func(r *Raw) { r.Labels = r.Labels[:3] }, "3 labels for 4 nodes"},
		{"every label -1", func(r *Raw) { r.Labels, r.NumClasses = []int32{-1, -1, -1, -1}, 0 }, "every one of the 4 labels is -1"},
		{"weights", func(r *Raw) { r.EdgeWeights = []float32{1} }, "1 edge weights"},
	}
	for _, c := range cases {
		r := tiny()
		c.mod(r)
		if err := r.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.name, err, c.want)
		}
	}
}

// TestOpenRejectsDamage corrupts a written dataset in many ways and checks
// that Open names the array and the problem.
func TestOpenRejectsDamage(t *testing.T) {
	cases := []struct {
		name   string
		damage func(t *testing.T, dir string)
		want   string
	}{
		{"truncated indices", func(t *testing.T, dir string) { truncate(t, filepath.Join(dir, "indices.npy"), 2) }, "indices"},
		{"truncated features", func(t *testing.T, dir string) { truncate(t, filepath.Join(dir, "features.npy"), 4) }, "features"},
		{"missing labels", func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, "labels.npy")) }, "labels"},
		{"no meta", func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, "meta.json")) }, "no meta.json"},
		{"bad json", func(t *testing.T, dir string) { os.WriteFile(filepath.Join(dir, "meta.json"), []byte("{"), 0o644) }, "meta.json"},
		{"version", func(t *testing.T, dir string) { editMeta(t, dir, func(m *Meta) { m.FormatVersion = 99 }) }, "format version 99"},
		{"edge count", func(t *testing.T, dir string) { editMeta(t, dir, func(m *Meta) { m.NumEdges = 5 }) }, "indices has shape"},
		{"meta dtype", func(t *testing.T, dir string) {
			editMeta(t, dir, func(m *Meta) { a := m.Arrays[ArrayLabels]; a.DType = npy.Int64; m.Arrays[ArrayLabels] = a })
		}, "labels has dtype"},
		{"file dtype", func(t *testing.T, dir string) {
			npy.WriteFile(filepath.Join(dir, "labels.npy"), []float32{0, 1, 0, 1})
		}, "array labels holds <f4"},
		{"label range", func(t *testing.T, dir string) {
			npy.WriteFile(filepath.Join(dir, "labels.npy"), []int32{0, 5, 0, 1})
		}, "labels[1] = 5"},
		{"split range", func(t *testing.T, dir string) {
			npy.WriteFile(filepath.Join(dir, "test_idx.npy"), []int32{-3})
		}, "test_idx[0] = -3"},
		{"indptr", func(t *testing.T, dir string) {
			npy.WriteFile(filepath.Join(dir, "indptr.npy"), []int64{0, 4, 2, 5, 6})
		}, "indptr is invalid at node 1"},
		{"packed without orig_ids", func(t *testing.T, dir string) {
			editMeta(t, dir, func(m *Meta) { m.Packed = &PackMeta{Method: "sample"} })
		}, "orig_ids is missing"},
		{"orig_ids not a permutation", func(t *testing.T, dir string) { packed(t, dir, []int32{0, 2, 2, 1}) }, "orig_ids[2] = 2: original id given twice"},
		{"orig_ids out of range", func(t *testing.T, dir string) { packed(t, dir, []int32{0, 4, 2, 1}) }, "orig_ids[1] = 4"},
		{"raw features too short", func(t *testing.T, dir string) { rawFeatures(t, dir, 32, 31) }, "file has 33 bytes"},
		{"raw offset negative", func(t *testing.T, dir string) {
			rawFeatures(t, dir, 0, 0)
			editMeta(t, dir, func(m *Meta) { a := m.Arrays[ArrayFeatures]; a.Offset = -4; m.Arrays[ArrayFeatures] = a })
		}, "at offset -4"},
		{"offset of an .npy file", func(t *testing.T, dir string) {
			editMeta(t, dir, func(m *Meta) { a := m.Arrays[ArrayFeatures]; a.Offset = 4; m.Arrays[ArrayFeatures] = a })
		}, "for raw arrays only"},
		{"escape", func(t *testing.T, dir string) {
			editMeta(t, dir, func(m *Meta) { a := m.Arrays[ArrayLabels]; a.File = "../x.npy"; m.Arrays[ArrayLabels] = a })
		}, "outside the dataset"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "ds")
			if err := Write(context.Background(), dir, tiny(), WriteOptions{}); err != nil {
				t.Fatal(err)
			}
			c.damage(t, dir)
			d, err := Open(dir)
			if err == nil {
				d.Close()
				t.Fatal("damaged dataset opened")
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %q does not mention %q", err, c.want)
			}
		})
	}
}

func TestOpenRejectsOutOfRangeSource(t *testing.T) {
	for _, c := range []struct {
		indices []int32
		want    string
	}{
		{[]int32{1, 0, 2, 1, 9, 2}, "indices[4] = 9 (an in-neighbour of node 2) is outside [0, 4)"},
		{[]int32{-3, 0, 2, 1, 3, 2}, "indices[0] = -3 (an in-neighbour of node 0)"},
		{[]int32{1, 0, 2, 1, 3, 4}, "indices[5] = 4 (an in-neighbour of node 3)"},
	} {
		dir := filepath.Join(t.TempDir(), "ds")
		if err := Write(context.Background(), dir, tiny(), WriteOptions{}); err != nil {
			t.Fatal(err)
		}
		npy.WriteFile(filepath.Join(dir, "indices.npy"), c.indices)
		d, err := Open(dir)
		if err == nil {
			d.Close()
			t.Fatalf("%v: opened", c.indices)
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Fatalf("%v: got %v, want %q", c.indices, err, c.want)
		}
	}
}

func TestVerifyFindsNonFiniteFeatures(t *testing.T) {
	for _, bad := range []float32{float32(math.NaN()), float32(math.Inf(-1))} {
		dir := filepath.Join(t.TempDir(), "ds")
		r := tiny()
		r.Features[5] = bad
		if err := Write(context.Background(), dir, r, WriteOptions{}); err != nil {
			t.Fatal(err)
		}
		d, err := Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		err = d.Verify(context.Background())
		d.Close()
		if err == nil || !strings.Contains(err.Error(), "features[2, 1] is NaN or Inf") {
			t.Fatalf("%v: got %v", bad, err)
		}
	}
	// Half precision: a float16 Inf (0x7c00).
	dir := filepath.Join(t.TempDir(), "ds")
	if err := Write(context.Background(), dir, tiny(), WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	npy.WriteFileDType(filepath.Join(dir, "features.npy"), npy.Float16, []uint16{0x3c00, 0, 0, 0x7c00, 0, 0, 0, 0}, 4, 2)
	editMeta(t, dir, func(m *Meta) {
		a := m.Arrays[ArrayFeatures]
		a.DType = npy.Float16
		m.Arrays[ArrayFeatures] = a
		m.FeatureDType = "float16"
	})
	d, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.Verify(context.Background()); err == nil || !strings.Contains(err.Error(), "features[1, 1]") {
		t.Fatalf("float16: got %v", err)
	}
	// data info's statistics decode the half rows: 1.0 and one Inf.
	if f := d.Summarize().Features; f == nil || f.NonFinite != 1 || f.Max != 1 || f.Rows != 4 {
		t.Fatalf("float16 feature statistics: %+v, want 1 non-finite value, max 1, 4 rows", f)
	}
}

func TestNumpyOpensDataset(t *testing.T) {
	py := "/usr/bin/python3"
	if exec.Command(py, "-c", "import numpy").Run() != nil {
		t.Skip("numpy not installed for /usr/bin/python3 (apt-get install python3-numpy)")
	}
	dir := filepath.Join(t.TempDir(), "ds")
	if err := Write(context.Background(), dir, tiny(), WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	script := `
import json, numpy as np, sys, os
d = sys.argv[1]
m = json.load(open(os.path.join(d, "meta.json")))
for name, a in m["arrays"].items():
    x = np.load(os.path.join(d, a["file"]), mmap_mode="r")
    assert str(x.dtype) == {"<f4": "float32", "<i4": "int32", "<i8": "int64"}[a["dtype"]], (name, x.dtype)
    assert list(x.shape) == a["shape"], (name, x.shape)
f = np.load(os.path.join(d, "features.npy"), mmap_mode="r")
assert f[3, 1] == 7
ip = np.load(os.path.join(d, "indptr.npy")); ix = np.load(os.path.join(d, "indices.npy"))
assert list(ix[ip[1]:ip[2]]) == [0, 2]
`
	if out, err := exec.Command(py, "-c", script, dir).CombinedOutput(); err != nil {
		t.Fatalf("numpy: %v\n%s", err, out)
	}
}

// packed makes the dataset at dir a packed one with these original ids.
func packed(t *testing.T, dir string, orig []int32) {
	t.Helper()
	if err := npy.WriteFile(filepath.Join(dir, "orig_ids.npy"), orig); err != nil {
		t.Fatal(err)
	}
	editMeta(t, dir, func(m *Meta) {
		m.Packed = &PackMeta{Method: "sample"}
		m.Arrays[ArrayOrigIDs] = ArrayMeta{File: "orig_ids.npy", DType: npy.Int32, Shape: []int{len(orig)}}
	})
}

func TestOriginalIDs(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ds")
	if err := Write(context.Background(), dir, tiny(), WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	d, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	ids := []int32{3, 0}
	d.ToOriginal(ids)
	if err := d.FromOriginal(ids); err != nil || !slices.Equal(ids, []int32{3, 0}) || !slices.Equal(InOriginalOrder(d, []int32{5, 6, 7, 8}, 1), []int32{5, 6, 7, 8}) {
		t.Errorf("a dataset that is not packed maps ids: %v %v", ids, err)
	}
	d.Close()
	packed(t, dir, []int32{2, 0, 3, 1}) // new node 0 is original node 2, ...
	if d, err = Open(dir); err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for _, c := range []struct{ packed, orig []int32 }{
		{[]int32{0, 1, 2, 3}, []int32{2, 0, 3, 1}},
		{[]int32{3, 3, 0}, []int32{1, 1, 2}},
		{nil, nil},
	} {
		got := slices.Clone(c.packed)
		d.ToOriginal(got)
		if !slices.Equal(got, c.orig) {
			t.Errorf("ToOriginal(%v) = %v, want %v", c.packed, got, c.orig)
		}
		if err := d.FromOriginal(got); err != nil || !slices.Equal(got, c.packed) {
			t.Errorf("FromOriginal(%v) = %v, %v; want %v", c.orig, got, err, c.packed)
		}
	}
	if err := d.FromOriginal([]int32{1, 4}); err == nil {
		t.Error("FromOriginal took id 4 of a 4-node dataset")
	}
	// Node v's values go to its original id; two values a node.
	if got := InOriginalOrder(d, []int32{20, 21, 0, 1, 30, 31, 10, 11}, 2); !slices.Equal(got, []int32{0, 1, 10, 11, 20, 21, 30, 31}) {
		t.Errorf("InOriginalOrder: %v", got)
	}
}

func truncate(t *testing.T, path string, by int64) {
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, st.Size()-by); err != nil {
		t.Fatal(err)
	}
}

func editMeta(t *testing.T, dir string, f func(*Meta)) {
	p := filepath.Join(dir, "meta.json")
	b, _ := os.ReadFile(p)
	var m Meta
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	f(&m)
	b, _ = json.Marshal(m)
	os.WriteFile(p, b, 0o644)
}

// rawFeatures replaces the dataset's features.npy by a raw file holding
// pad bytes, then the rows' elements but the last cut bytes, and marks it
// raw in meta.json with the rows at offset pad.
func rawFeatures(t *testing.T, dir string, pad, cut int) {
	t.Helper()
	a, err := npy.Open(filepath.Join(dir, "features.npy"))
	if err != nil {
		t.Fatal(err)
	}
	body := append(make([]byte, pad), a.Data...)
	a.Close()
	if err := os.WriteFile(filepath.Join(dir, "features.bin"), body[:len(body)-cut], 0o644); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dir, "features.npy"))
	editMeta(t, dir, func(m *Meta) {
		a := m.Arrays[ArrayFeatures]
		a.File, a.Raw, a.Offset = "features.bin", true, int64(pad)
		m.Arrays[ArrayFeatures] = a
	})
}

// TestRawFeatures: features in a file with no .npy header (as
// graphmill.NeighborLoader hands over a tensor's shared memory) open as
// the same rows, at any offset.
func TestRawFeatures(t *testing.T) {
	for _, pad := range []int{0, 40, 4096} {
		dir := filepath.Join(t.TempDir(), "ds")
		if err := Write(context.Background(), dir, tiny(), WriteOptions{}); err != nil {
			t.Fatal(err)
		}
		rawFeatures(t, dir, pad, 0)
		d, err := Open(dir)
		if err != nil {
			t.Fatalf("pad %d: %v", pad, err)
		}
		if !slices.Equal(d.Features, tiny().Features) || d.FeatureArray.DataOffset != int64(pad) {
			t.Errorf("pad %d: features %v at %d", pad, d.Features, d.FeatureArray.DataOffset)
		}
		d.Close()
	}
}

// TestVerifyFindsNonFiniteWeights: a NaN edge weight on disk (Write
// refuses one) is named by data verify.
func TestVerifyFindsNonFiniteWeights(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ds")
	r := tiny()
	r.Build.Dedup = false
	r.EdgeWeights = []float32{1, 1, 1, 1}
	if err := Write(context.Background(), dir, r, WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	d, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	w := slices.Clone(d.Graph.Weights)
	d.Close()
	w[3] = float32(math.NaN())
	npy.WriteFile(filepath.Join(dir, "edge_weight.npy"), w)
	if d, err = Open(dir); err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.Verify(context.Background()); err == nil || !strings.Contains(err.Error(), "edge weight 3 is NaN") {
		t.Fatalf("got %v", err)
	}
}

// TestVerifyFindsBadSplits: repeated or shared split nodes open (as
// before: Open checks their range) but data verify names them.
func TestVerifyFindsBadSplits(t *testing.T) {
	for _, c := range []struct {
		file string
		ids  []int32
		want string
	}{
		{"train_idx.npy", []int32{1, 1}, "splits: train[1]=1 appears twice in train"},
		{"test_idx.npy", []int32{0}, "splits: test[0]=0 is also in train"},
	} {
		dir := filepath.Join(t.TempDir(), "ds")
		if err := Write(context.Background(), dir, tiny(), WriteOptions{}); err != nil {
			t.Fatal(err)
		}
		npy.WriteFile(filepath.Join(dir, c.file), c.ids)
		d, err := Open(dir)
		if err != nil {
			t.Fatalf("%v: %v", c.ids, err)
		}
		err = d.Verify(context.Background())
		d.Close()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: got %v, want %q", c.ids, err, c.want)
		}
	}
}

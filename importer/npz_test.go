package importer

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/graphmill/graphmill/graph"
	"github.com/graphmill/graphmill/internal/shareddata"
)

func TestNPZReal(t *testing.T) {
	tests := []struct {
		file                string
		nodes, nnz          int
		pairs               int // directed pairs after symmetrize+dedup-self-loops
		feats, featNNZ      int
		classes             int
		counts              []int // nil: not published
		binary, hasSelfLoop bool
	}{
		{"gnn-benchmark/cora.npz", 2708, 5429, 2 * 5278, 1433, 49216, 7, nil, true, false},
		{"gnn-benchmark/citeseer.npz", 3312, 4715, 2 * 4536, 3703, 105165, 6, nil, true, true},
		{"ppnp/cora_ml.npz", 2995, 8416, 2 * 8158, 2879, 151171, 7, []int{354, 402, 452, 442, 857, 193, 295}, false, false},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			path := shareddata.Path(tc.file)
			needDir(t, path)
			r, err := NPZ(path, NPZOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if r.NumNodes != tc.nodes || len(r.Src) != tc.nnz || r.FeatureDim != tc.feats || r.NumClasses != tc.classes {
				t.Errorf("nodes/nnz/features/classes = %d/%d/%d/%d, want %d/%d/%d/%d",
					r.NumNodes, len(r.Src), r.FeatureDim, r.NumClasses, tc.nodes, tc.nnz, tc.feats, tc.classes)
			}
			if got := undirectedPairs(r); got != tc.pairs {
				t.Errorf("%d directed pairs without self-loops, want %d", got, tc.pairs)
			}
			loops := 0
			for i := range r.Src {
				if r.Src[i] == r.Dst[i] {
					loops++
				}
			}
			if (loops > 0) != tc.hasSelfLoop {
				t.Errorf("%d self-loops", loops)
			}
			nz, nonBinary := 0, 0
			for _, x := range r.Features {
				if x != 0 {
					nz++
				}
				if x != 0 && x != 1 {
					nonBinary++
				}
			}
			if nz != tc.featNNZ || (nonBinary == 0) != tc.binary {
				t.Errorf("%d non-zero features (%d non-binary), want %d (binary %v)", nz, nonBinary, tc.featNNZ, tc.binary)
			}
			counts, unl := labelCounts(r)
			if unl != 0 {
				t.Errorf("%d unlabelled nodes", unl)
			}
			if tc.counts != nil && fmt.Sprint(counts) != fmt.Sprint(tc.counts) {
				t.Errorf("label counts %v, want %v", counts, tc.counts)
			}
			if r.EdgeWeights != nil || r.Train != nil {
				t.Error("unexpected weights or split")
			}
			if want := (graph.BuildOptions{Symmetrize: true, Dedup: true}); r.Build != want {
				t.Errorf("Build %+v", r.Build)
			}
		})
	}
}

func TestNPZRandomSplit(t *testing.T) {
	path := shareddata.Path("gnn-benchmark", "cora.npz")
	needDir(t, path)
	a, err := NPZ(path, NPZOptions{RandomSplit: true, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Train) != 140 || len(a.Val) != 500 || len(a.Test) != 2708-640 {
		t.Errorf("split %d/%d/%d, want 140/500/%d", len(a.Train), len(a.Val), len(a.Test), 2708-640)
	}
	per := make([]int, a.NumClasses)
	for _, v := range a.Train {
		per[a.Labels[v]]++
	}
	for c, k := range per {
		if k != 20 {
			t.Errorf("class %d has %d training nodes, want 20", c, k)
		}
	}
	b, _ := NPZ(path, NPZOptions{RandomSplit: true, Seed: 1})
	c, _ := NPZ(path, NPZOptions{RandomSplit: true, Seed: 2, TrainPerClass: 5, Val: 100, Test: 300})
	if !slices.Equal(a.Train, b.Train) || !slices.Equal(a.Val, b.Val) || !slices.Equal(a.Test, b.Test) {
		t.Error("same seed, different split")
	}
	if slices.Equal(a.Val, c.Val) || len(c.Train) != 35 || len(c.Val) != 100 || len(c.Test) != 300 {
		t.Errorf("seed 2 split %d/%d/%d", len(c.Train), len(c.Val), len(c.Test))
	}
	if _, err := NPZ(path, NPZOptions{RandomSplit: true, TrainPerClass: 200}); err == nil || !strings.Contains(err.Error(), "fewer than 200 per class") {
		t.Errorf("too many per class: %v", err)
	}
	if _, err := NPZ(path, NPZOptions{RandomSplit: true, Test: 5000}); err == nil || !strings.Contains(err.Error(), "5000 test nodes requested") {
		t.Errorf("too many test nodes: %v", err)
	}
}

// npyBytes encodes a .npy file (version 1.0) with the given header fields.
func npyBytes(descr, shape string, data []byte) []byte {
	h := fmt.Sprintf("{'descr': '%s', 'fortran_order': False, 'shape': %s, }", descr, shape)
	for (10+len(h)+1)%64 != 0 {
		h += " "
	}
	h += "\n"
	var b bytes.Buffer
	b.WriteString("\x93NUMPY\x01\x00")
	binary.Write(&b, binary.LittleEndian, uint16(len(h)))
	b.WriteString(h)
	b.Write(data)
	return b.Bytes()
}

func le(vals ...any) []byte {
	var b bytes.Buffer
	for _, v := range vals {
		binary.Write(&b, binary.LittleEndian, v)
	}
	return b.Bytes()
}

// npzBytes zips the members (name -> .npy bytes) in sorted order.
func npzBytes(members map[string][]byte) []byte {
	var b bytes.Buffer
	z := zip.NewWriter(&b)
	keys := make([]string, 0, len(members))
	for k := range members {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		w, _ := z.CreateHeader(&zip.FileHeader{Name: k + ".npy", Method: zip.Store})
		w.Write(members[k])
	}
	z.Close()
	return b.Bytes()
}

// tinyNPZ is a valid 3-node graph 0->1, 1->2 with 2 features and labels.
func tinyNPZ() map[string][]byte {
	return map[string][]byte{
		"adj_data":     npyBytes("<f4", "(2,)", le(float32(1), float32(1))),
		"adj_indices":  npyBytes("<i4", "(2,)", le(int32(1), int32(2))),
		"adj_indptr":   npyBytes("<i4", "(4,)", le(int32(0), int32(1), int32(2), int32(2))),
		"adj_shape":    npyBytes("<i8", "(2,)", le(int64(3), int64(3))),
		"attr_data":    npyBytes("<f4", "(1,)", le(float32(0.5))),
		"attr_indices": npyBytes("<i4", "(1,)", le(int32(1))),
		"attr_indptr":  npyBytes("<i4", "(4,)", le(int32(0), int32(0), int32(1), int32(1))),
		"attr_shape":   npyBytes("<i8", "(2,)", le(int64(3), int64(2))),
		"labels":       npyBytes("|i1", "(3,)", []byte{0, 1, 0}),
		"class_names":  npyBytes("<U1", "(2,)", le(int32('a'), int32('b'))),
		"metadata":     npyBytes("|O", "()", []byte("\x80\x02N.")),
	}
}

func TestReadNPZ(t *testing.T) {
	edit := func(key string, v []byte) func(map[string][]byte) {
		return func(m map[string][]byte) { m[key] = v }
	}
	tests := []struct {
		name string
		edit func(map[string][]byte)
		err  string
	}{
		{"valid", nil, ""},
		{"ppnp naming", func(m map[string][]byte) {
			for _, k := range []string{"data", "indices", "indptr", "shape"} {
				m["adj_matrix."+k] = m["adj_"+k]
				delete(m, "adj_"+k)
			}
		}, ""},
		{"int64 labels", edit("labels", npyBytes("<i8", "(3,)", le(int64(1), int64(0), int64(-1)))), ""},
		{"big-endian indices", edit("adj_indices", npyBytes(">i4", "(2,)", []byte{0, 0, 0, 1, 0, 0, 0, 2})), ""},
		{"dense fortran attributes", func(m map[string][]byte) {
			for _, k := range []string{"data", "indices", "indptr", "shape"} {
				delete(m, "attr_"+k)
			}
			// Column-major 3x2 matrix [[0 0] [0 0.5] [0 0]].
			b := npyBytes("<f8", "(3, 2)", le(0.0, 0.0, 0.0, 0.0, 0.5, 0.0))
			m["attr_matrix"] = bytes.Replace(b, []byte("False"), []byte("True "), 1)
		}, ""},
		{"no adjacency", func(m map[string][]byte) { delete(m, "adj_data") }, "no adjacency matrix"},
		{"missing indptr", func(m map[string][]byte) { delete(m, "adj_indptr") }, "no member adj_indptr.npy"},
		{"truncated npy", func(m map[string][]byte) { m["adj_indices"] = m["adj_indices"][:len(m["adj_indices"])-2] }, "adj_indices.npy: truncated .npy data: 6 bytes, want 8"},
		{"truncated header", edit("adj_indices", []byte("\x93NUMPY\x01\x00\x40\x00{'descr'")), "adj_indices.npy: truncated .npy header"},
		{"not npy", edit("adj_indices", []byte("hello world")), "adj_indices.npy: not a .npy file"},
		{"float indices", edit("adj_indices", npyBytes("<f4", "(2,)", le(float32(1), float32(2)))), "want integer types"},
		{"string data", edit("adj_data", npyBytes("<U1", "(2,)", le(int32('a'), int32('b')))), "adj_data.npy: dtype <U1 is not numeric"},
		{"complex dtype", edit("adj_data", npyBytes("<c8", "(2,)", make([]byte, 16))), "unsupported dtype \"<c8\""},
		{"object adjacency", edit("adj_data", npyBytes("|O", "()", []byte("\x80\x02N."))), "pickled data"},
		{"index out of range", edit("adj_indices", npyBytes("<i4", "(2,)", le(int32(1), int32(3)))), "indices[1]=3 out of range [0,3)"},
		{"negative index", edit("adj_indices", npyBytes("<i4", "(2,)", le(int32(-1), int32(2)))), "indices[0]=-1 out of range"},
		{"bad indptr", edit("adj_indptr", npyBytes("<i4", "(4,)", le(int32(0), int32(2), int32(1), int32(2)))), "indptr[2]=1"},
		{"short indptr", edit("adj_indptr", npyBytes("<i4", "(3,)", le(int32(0), int32(1), int32(2)))), "indptr has 3 entries, want rows+1 = 4"},
		{"not square", edit("adj_shape", npyBytes("<i8", "(2,)", le(int64(3), int64(4)))), "not square"},
		{"attr rows", edit("attr_shape", npyBytes("<i8", "(2,)", le(int64(2), int64(2)))), "indptr has 4 entries, want rows+1 = 3"},
		{"label out of range", edit("labels", npyBytes("|i1", "(3,)", []byte{0, 2, 0})), "labels[1]=2 out of range [0,2) given by class_names"},
		{"negative label", edit("labels", npyBytes("|i1", "(3,)", []byte{0, 0xfe, 0})), "labels[1]=-2 out of range"},
		{"float labels", edit("labels", npyBytes("<f4", "(3,)", le(float32(0), float32(1), float32(0)))), "labels.npy: dtype <f4, want an integer type"},
		{"label count", edit("labels", npyBytes("|i1", "(2,)", []byte{0, 1})), "labels.npy: shape [2], want (3,)"},
		{"fortran header garbage", edit("labels", []byte("\x93NUMPY\x01\x00\x10\x00{'descr': 5}    ")), "labels.npy: .npy header: descr"},
		{"nan weight", edit("adj_data", npyBytes("<f4", "(2,)", le(float32(math.NaN()), float32(1)))), "data[0]=NaN is not finite"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := tinyNPZ()
			if tc.edit != nil {
				tc.edit(m)
			}
			data := npzBytes(m)
			r, err := ReadNPZ(bytes.NewReader(data), int64(len(data)), "t.npz", NPZOptions{})
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.HasPrefix(err.Error(), "t.npz: ") {
					t.Fatalf("error %v, want one naming t.npz and containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if r.NumNodes != 3 || fmt.Sprint(r.Src, r.Dst) != "[0 1] [1 2]" || r.FeatureDim != 2 || r.NumClasses != 2 {
				t.Errorf("got n=%d %v->%v f=%d c=%d", r.NumNodes, r.Src, r.Dst, r.FeatureDim, r.NumClasses)
			}
			if fmt.Sprint(r.Features) != "[0 0 0 0.5 0 0]" {
				t.Errorf("features %v", r.Features)
			}
		})
	}
	if _, err := ReadNPZ(bytes.NewReader([]byte("PK junk")), 7, "j.npz", NPZOptions{}); err == nil || !strings.Contains(err.Error(), "j.npz: not a .npz") {
		t.Errorf("junk: %v", err)
	}
}

func TestParseNPYHeader(t *testing.T) {
	tests := []struct {
		h       string
		descr   string
		fortran bool
		shape   []int
		err     bool
	}{
		{"{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }", "<f4", false, []int{3, 4}, false},
		{"{'descr': '|i1', 'fortran_order': True, 'shape': (7,)}", "|i1", true, []int{7}, false},
		{`{"descr": "<i8", "shape": (), "fortran_order": False}`, "<i8", false, []int{}, false},
		{"{'descr': '<f8', 'fortran_order': False, 'shape': (2L, 3L), }", "<f8", false, []int{2, 3}, false},
		{"{'descr': [('a', '<i4')], 'fortran_order': False, 'shape': (1,), }", "", false, nil, true},
		{"{'descr': '<f4', 'fortran_order': False}", "", false, nil, true},
		{"{'descr': '<f4', 'fortran_order': maybe, 'shape': (1,)}", "", false, nil, true},
		{"{'descr': '<f4', 'fortran_order': False, 'shape': (-1,)}", "", false, nil, true},
		{"{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 1}", "", false, nil, true},
		{"{'descr': '<f4'", "", false, nil, true},
		{"", "", false, nil, true},
	}
	for _, tc := range tests {
		var a npyArray
		err := parseNPYHeader(tc.h, &a)
		if (err != nil) != tc.err {
			t.Errorf("%q: error %v, want error %v", tc.h, err, tc.err)
			continue
		}
		if err == nil && (a.descr != tc.descr || a.fortran != tc.fortran || !slices.Equal(a.shape, tc.shape)) {
			t.Errorf("%q: got %+v", tc.h, a)
		}
	}
}

// TestNPZCSRShapesCheckedFirst: a CSR matrix whose data and indices
// disagree in length is refused from their headers, before its data is
// decompressed (a 585 KB archive declaring 150M entries took 1.3 GB).
func TestNPZCSRShapesCheckedFirst(t *testing.T) {
	m := tinyNPZ()
	const entries = 16 << 20 // 64 MiB of zeros, deflated to about 64 KiB
	m["attr_data"] = npyBytes("<f4", fmt.Sprintf("(%d,)", entries), make([]byte, 4*entries))
	var b bytes.Buffer
	z := zip.NewWriter(&b)
	for k, v := range m {
		w, _ := z.CreateHeader(&zip.FileHeader{Name: k + ".npy", Method: zip.Deflate})
		w.Write(v)
	}
	z.Close()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := ReadNPZ(bytes.NewReader(b.Bytes()), int64(b.Len()), "bomb.npz", NPZOptions{})
	runtime.ReadMemStats(&after)
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("data has %d entries but indices has 1", entries)) {
		t.Fatalf("error %v", err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 16<<20 {
		t.Errorf("allocated %d MiB before refusing", grew>>20)
	}
}

// TestNPZFloat16Features: a dense float16 attr_matrix is read as numpy
// reads it (it was "unsupported dtype <f2").
func TestNPZFloat16Features(t *testing.T) {
	m := tinyNPZ()
	for _, k := range []string{"attr_data", "attr_indices", "attr_indptr", "attr_shape"} {
		delete(m, k)
	}
	// 0.5, -2, 65504 and 1/3 rounded (0x3555) as float16.
	m["attr_matrix"] = npyBytes("<f2", "(3, 2)", le(uint16(0x3800), uint16(0xc000), uint16(0x7bff), uint16(0x3555), uint16(0), uint16(0)))
	b := npzBytes(m)
	r, err := ReadNPZ(bytes.NewReader(b), int64(len(b)), "t.npz", NPZOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []float32{0.5, -2, 65504, 0.333251953125, 0, 0}
	if r.FeatureDim != 2 || !slices.Equal(r.Features, want) {
		t.Fatalf("features %v (dim %d), want %v", r.Features, r.FeatureDim, want)
	}
}

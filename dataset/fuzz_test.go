package dataset

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/graphmill/graphmill/npy"
)

// FuzzOpen opens native datasets whose indptr, indices and labels arrays
// hold arbitrary bytes (meta.json is made to match their lengths, so that
// the fuzzer's time goes into the content checks): Open must either fail
// with an error or return a dataset on which what every command runs -
// degrees, the reverse graph, the summary, Verify - cannot index out of
// range. Seeds: a valid 4-node graph, an out-of-range and a negative id.
func FuzzOpen(f *testing.F) {
	b64 := func(v ...int64) []byte { return npy.AsBytes(v) }
	b32 := func(v ...int32) []byte { return npy.AsBytes(v) }
	indptr := b64(0, 1, 3, 5, 6)
	f.Add(indptr, b32(1, 0, 2, 1, 3, 2), b32(0, 1, -1, 1), uint8(2))
	f.Add(indptr, b32(1, 0, 2, 1, 9, 2), b32(0, 1, -1, 1), uint8(2))
	f.Add(indptr, b32(-3, 0, 2, 1, 3, 2), b32(0, 1, -1, 1), uint8(2))
	// One directory per fuzzing process, rewritten by every input (a new
	// directory per input made fuzzing several times slower).
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, indptr, indices, labels []byte, classes uint8) {
		n := max(0, len(indptr)/8-1)
		m := Meta{
			Format: FormatName, FormatVersion: FormatVersion, Name: "fuzz",
			NumNodes: n, NumEdges: int64(len(indices) / 4), NumClasses: int(classes),
			Graph: GraphMeta{Layout: "csc"},
			Arrays: map[string]ArrayMeta{
				ArrayIndptr:  {File: "indptr.npy", DType: npy.Int64, Shape: []int{n + 1}},
				ArrayIndices: {File: "indices.npy", DType: npy.Int32, Shape: []int{len(indices) / 4}},
			},
		}
		write := func(name string, dt npy.DType, data []byte) {
			hdr, err := npy.EncodeHeader(dt, []int{len(data) / dt.Size()})
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, name), append(hdr, data[:len(data)/dt.Size()*dt.Size()]...), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		write("indptr.npy", npy.Int64, indptr)
		write("indices.npy", npy.Int32, indices)
		if classes > 0 {
			write("labels.npy", npy.Int32, labels)
			m.Arrays[ArrayLabels] = ArrayMeta{File: "labels.npy", DType: npy.Int32, Shape: []int{len(labels) / 4}}
		}
		b, _ := json.Marshal(m)
		if err := os.WriteFile(filepath.Join(dir, "meta.json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		d, err := Open(dir)
		if err != nil {
			return
		}
		defer d.Close()
		g := d.Graph
		g.InDegrees()
		g.OutDegrees()
		g.Reverse(1)
		d.Summarize()
		if err := d.Verify(context.Background()); err != nil {
			t.Fatalf("Open accepted a dataset that Verify rejects: %v", err)
		}
	})
}

// FuzzOpenFiles opens a valid dataset whose meta.json, features.npy and
// train_idx.npy are replaced by arbitrary bytes (headers included: a
// shape whose element count wrapped to 0 passed and made data verify and
// data info panic). Open must fail with an error, or Summarize and
// Verify must run without a panic. Seeds: the valid files.
func FuzzOpenFiles(f *testing.F) {
	base := filepath.Join(f.TempDir(), "ds")
	if err := Write(context.Background(), base, tiny(), WriteOptions{}); err != nil {
		f.Fatal(err)
	}
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(base, name))
		if err != nil {
			f.Fatal(err)
		}
		return b
	}
	meta, feats, train := read("meta.json"), read("features.npy"), read("train_idx.npy")
	f.Add(meta, feats, train)
	f.Add(meta, append(feats[:len(feats)-4:len(feats)-4], 0, 0, 0xc0, 0x7f), train) // NaN
	f.Add(meta, feats, append(train[:len(train):len(train)], train[len(train)-4:]...))
	f.Fuzz(func(t *testing.T, meta, feats, train []byte) {
		for name, b := range map[string][]byte{"meta.json": meta, "features.npy": feats, "train_idx.npy": train} {
			if err := os.WriteFile(filepath.Join(base, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		d, err := Open(base)
		if err != nil {
			return
		}
		defer d.Close()
		d.Summarize()
		d.Verify(context.Background())
	})
}

package importer

import (
	"compress/gzip"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/graphmill/graphmill/graph"
)

var updateOGB = flag.Bool("update-ogb", false, "rewrite testdata/ogb-tiny")

// ogbTiny is the content of testdata/ogb-tiny: 6 nodes, 7 directed edges,
// 3 features, 3 classes with node 5 unlabelled, split 2/1/2.
var ogbTiny = map[string]string{
	"raw/edge.csv.gz":          "0,1\n1,2\n2,0\n3,4\n4,5\n5,3\n0,3\n",
	"raw/node-feat.csv.gz":     "0.5,1,-2\n0,0,0\n1e-3,2.5,3\n-1,-1,-1\n4,4,4\n0.25,0.5,0.75\n",
	"raw/node-label.csv.gz":    "0\n1\n2\n0\n1\nNaN\n",
	"raw/num-node-list.csv.gz": "6\n",
	"split/time/train.csv.gz":  "0\n1\n",
	"split/time/valid.csv.gz":  "2\n",
	"split/time/test.csv.gz":   "3\n4\n",
}

// writeOGB writes files (path -> content) under dir, gzip-compressing the
// .gz ones.
func writeOGB(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(name, ".gz") {
			z := gzip.NewWriter(f)
			z.Write([]byte(content))
			err = z.Close()
		} else {
			_, err = f.WriteString(content)
		}
		if err2 := f.Close(); err == nil {
			err = err2
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

func TestOGBTiny(t *testing.T) {
	dir := filepath.Join("testdata", "ogb-tiny")
	if *updateOGB {
		os.RemoveAll(dir)
		writeOGB(t, dir, ogbTiny)
	}
	r, err := OGB(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	if r.Name != "ogb-tiny" || r.NumNodes != 6 || r.FeatureDim != 3 || r.NumClasses != 3 {
		t.Errorf("name %q nodes %d features %d classes %d", r.Name, r.NumNodes, r.FeatureDim, r.NumClasses)
	}
	if fmt.Sprint(r.Src, r.Dst) != "[0 1 2 3 4 5 0] [1 2 0 4 5 3 3]" {
		t.Errorf("edges %v -> %v", r.Src, r.Dst)
	}
	if fmt.Sprint(r.Features[6:9], r.Features[15:]) != "[0.001 2.5 3] [0.25 0.5 0.75]" {
		t.Errorf("features %v", r.Features)
	}
	if fmt.Sprint(r.Labels) != "[0 1 2 0 1 -1]" {
		t.Errorf("labels %v", r.Labels)
	}
	if fmt.Sprint(r.Train, r.Val, r.Test) != "[0 1] [2] [3 4]" {
		t.Errorf("split %v %v %v", r.Train, r.Val, r.Test)
	}
	if r.Build != (graph.BuildOptions{Dedup: true}) {
		t.Errorf("Build %+v", r.Build)
	}
	if _, err := OGB(dir, "time"); err != nil {
		t.Errorf("split by name: %v", err)
	}
	if _, err := OGB(dir, "random"); err == nil || !strings.Contains(err.Error(), "no split directory") {
		t.Errorf("unknown split: %v", err)
	}
}

func TestOGBBadInput(t *testing.T) {
	tests := []struct {
		name  string
		edit  map[string]string // "" deletes the file
		split string
		err   string // substring; the file named is checked separately
		file  string
	}{
		{"uncompressed files", map[string]string{"raw/edge.csv.gz": "", "raw/edge.csv": "0,1\n"}, "", "", ""},
		{"no split", map[string]string{"split/time/train.csv.gz": "", "split/time/valid.csv.gz": "", "split/time/test.csv.gz": ""}, "", "", ""},
		{"only edges", map[string]string{"raw/node-feat.csv.gz": "", "raw/node-label.csv.gz": "", "raw/num-node-list.csv.gz": "", "split/time/train.csv.gz": "", "split/time/valid.csv.gz": "", "split/time/test.csv.gz": ""}, "", "", ""},
		{"missing edges", map[string]string{"raw/edge.csv.gz": ""}, "", "missing file", "edge.csv.gz"},
		{"edge out of range", map[string]string{"raw/edge.csv.gz": "0,1\n1,6\n"}, "", "line 2: node id 6 out of range [0,6)", "edge.csv.gz"},
		{"negative edge", map[string]string{"raw/edge.csv.gz": "0,-1\n"}, "", "line 1: destination \"0,-1\": negative id", "edge.csv.gz"},
		{"edge with spaces", map[string]string{"raw/edge.csv.gz": "0 1\n"}, "", "want \"src,dst\"", "edge.csv.gz"},
		{"truncated gzip", map[string]string{"raw/edge.csv.gz": "BAD-GZIP"}, "", "gzip data truncated or corrupt: unexpected EOF", "edge.csv.gz"},
		{"ragged features", map[string]string{"raw/node-feat.csv.gz": "1,2,3\n1,2\n1,2,3\n1,2,3\n1,2,3\n1,2,3\n"}, "", "line 2: 2 features, but earlier rows have 3", "node-feat.csv.gz"},
		{"bad feature", map[string]string{"raw/node-feat.csv.gz": "1,2,x\n"}, "", "line 1: feature \"x\" in column 3", "node-feat.csv.gz"},
		{"feature rows", map[string]string{"raw/node-feat.csv.gz": "1\n2\n"}, "", "2 nodes, but", "node-feat.csv.gz"},
		{"label rows", map[string]string{"raw/node-label.csv.gz": "1\n"}, "", "1 nodes, but", "node-label.csv.gz"},
		{"negative label", map[string]string{"raw/node-label.csv.gz": "0\n1\n-2\n0\n1\n0\n"}, "", "line 3: label \"-2\" out of range", "node-label.csv.gz"},
		{"fractional label", map[string]string{"raw/node-label.csv.gz": "0\n1\n2.5\n0\n1\n0\n"}, "", "line 3: label \"2.5\" is not an integer", "node-label.csv.gz"},
		{"multi-task labels", map[string]string{"raw/node-label.csv.gz": "0,1\n"}, "", "multi-task", "node-label.csv.gz"},
		{"split out of range", map[string]string{"split/time/test.csv.gz": "3\n9\n"}, "", "line 2: id 9 out of range [0,6)", "test.csv.gz"},
		{"split overlap", map[string]string{"split/time/test.csv.gz": "3\n2\n"}, "", "test[1]=2 is also in val", "ogb-tiny"},
		{"unlabelled in split", map[string]string{"split/time/test.csv.gz": "5\n"}, "", "test[0]=5 is unlabelled", "ogb-tiny"},
		{"missing valid", map[string]string{"split/time/valid.csv.gz": ""}, "", "missing file", "valid.csv.gz"},
		{"two splits", map[string]string{"split/other/train.csv.gz": "0\n"}, "", "several splits", "split"},
		{"two num nodes", map[string]string{"raw/num-node-list.csv.gz": "6\n6\n"}, "", "more than one node count", "num-node-list.csv.gz"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "ogb-tiny")
			files := map[string]string{}
			for k, v := range ogbTiny {
				files[k] = v
			}
			for k, v := range tc.edit {
				if v == "" {
					delete(files, k)
				} else {
					files[k] = v
				}
			}
			writeOGB(t, dir, files)
			if v, ok := tc.edit["raw/edge.csv.gz"]; ok && v == "BAD-GZIP" {
				// A gzip stream cut in the middle.
				p := filepath.Join(dir, "raw/edge.csv.gz")
				writeOGB(t, dir, map[string]string{"raw/edge.csv.gz": strings.Repeat("0,1\n", 1000)})
				b, _ := os.ReadFile(p)
				os.WriteFile(p, b[:len(b)/2], 0o644)
			}
			r, err := OGB(dir, tc.split)
			if tc.err == "" {
				if err != nil {
					t.Fatal(err)
				}
				if err := validate(r); err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), tc.file) {
				t.Fatalf("error %v, want one naming %s and containing %q", err, tc.file, tc.err)
			}
			if tc.err == "missing file" && !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("error %v does not wrap fs.ErrNotExist", err)
			}
		})
	}
}

package importer

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/graphmill/graphmill/dataset"
	"github.com/graphmill/graphmill/graph"
	"github.com/graphmill/graphmill/internal/shareddata"
)

// planetoidDir honours $GRAPHMILL_DATA (see internal/shareddata).
var planetoidDir = shareddata.Path("planetoid")

func needDir(t testing.TB, dir string) {
	t.Helper()
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("shared data %s not available: %v", dir, err)
	}
}

// undirectedPairs applies symmetrize + dedup + remove-self-loops to the
// edge list and returns the number of directed pairs left.
func undirectedPairs(r *dataset.Raw) int {
	seen := make(map[[2]int32]struct{}, 2*len(r.Src))
	for i := range r.Src {
		s, d := r.Src[i], r.Dst[i]
		if s == d {
			continue
		}
		seen[[2]int32{s, d}] = struct{}{}
		seen[[2]int32{d, s}] = struct{}{}
	}
	return len(seen)
}

func labelCounts(r *dataset.Raw) (counts []int, unlabelled int) {
	counts = make([]int, r.NumClasses)
	for _, l := range r.Labels {
		if l < 0 {
			unlabelled++
			continue
		}
		counts[l]++
	}
	return counts, unlabelled
}

func TestPlanetoid(t *testing.T) {
	needDir(t, planetoidDir)
	tests := []struct {
		name                  string
		nodes, feats, classes int
		train, val, test      int
		pairs                 int
		counts                []int
		unlabelled            int
	}{
		{"cora", 2708, 1433, 7, 140, 500, 1000, 10556, []int{351, 217, 418, 818, 426, 298, 180}, 0},
		{"citeseer", 3327, 3703, 6, 120, 500, 1000, 9104, []int{249, 590, 668, 701, 596, 508}, 15},
		// PyG's spelling of the name finds the lower-case files.
		{"CiteSeer", 3327, 3703, 6, 120, 500, 1000, 9104, []int{249, 590, 668, 701, 596, 508}, 15},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Planetoid(planetoidDir, tc.name)
			if err != nil {
				t.Fatal(err)
			}
			checkPlanetoid(t, r, tc.nodes, tc.feats, tc.classes, tc.train, tc.val, tc.test, tc.pairs, tc.counts, tc.unlabelled)
		})
	}
}

func checkPlanetoid(t *testing.T, r *dataset.Raw, nodes, feats, classes, train, val, test, pairs int, counts []int, unlabelled int) {
	t.Helper()
	if r.NumNodes != nodes || r.FeatureDim != feats || r.NumClasses != classes {
		t.Errorf("nodes/features/classes = %d/%d/%d, want %d/%d/%d", r.NumNodes, r.FeatureDim, r.NumClasses, nodes, feats, classes)
	}
	if len(r.Train) != train || len(r.Val) != val || len(r.Test) != test {
		t.Errorf("split = %d/%d/%d, want %d/%d/%d", len(r.Train), len(r.Val), len(r.Test), train, val, test)
	}
	if got := undirectedPairs(r); got != pairs {
		t.Errorf("directed pairs after symmetrize+dedup+no-self-loops = %d, want %d", got, pairs)
	}
	want := graph.BuildOptions{Symmetrize: true, Dedup: true, SelfLoops: graph.RemoveSelfLoops}
	if r.Build != want {
		t.Errorf("Build = %+v, want %+v", r.Build, want)
	}
	got, unl := labelCounts(r)
	if unl != unlabelled {
		t.Errorf("%d unlabelled nodes, want %d", unl, unlabelled)
	}
	for c := range counts {
		if c >= len(got) || got[c] != counts[c] {
			t.Errorf("label counts %v, want %v", got, counts)
			break
		}
	}
	// Features are binary bag-of-words: every labelled node has some.
	for v := 0; v < r.NumNodes; v++ {
		row := r.Features[v*r.FeatureDim : (v+1)*r.FeatureDim]
		nz := 0
		for _, x := range row {
			if x != 0 && x != 1 {
				t.Fatalf("node %d: feature value %v not binary", v, x)
			}
			if x != 0 {
				nz++
			}
		}
		if r.Labels[v] < 0 && nz != 0 {
			t.Errorf("unlabelled padding node %d has %d non-zero features", v, nz)
		}
	}
	if err := validate(r); err != nil {
		t.Error(err)
	}
}

func TestPlanetoidTotalNNZ(t *testing.T) {
	needDir(t, planetoidDir)
	// allx nnz + tx nnz from the README: every stored entry must land in
	// the feature matrix (none lost to the test-index reordering).
	for name, want := range map[string]int{"cora": 31261 + 17955, "citeseer": 73173 + 31992} {
		r, err := Planetoid(planetoidDir, name)
		if err != nil {
			t.Fatal(err)
		}
		nz := 0
		for _, x := range r.Features {
			if x != 0 {
				nz++
			}
		}
		if nz != want {
			t.Errorf("%s: %d non-zero features, want %d", name, nz, want)
		}
	}
}

func TestPlanetoidPubMedMissingAllx(t *testing.T) {
	needDir(t, planetoidDir)
	_, err := Planetoid(planetoidDir, "pubmed")
	if err == nil {
		t.Fatal("pubmed without ind.pubmed.allx imported without error")
	}
	if !strings.Contains(err.Error(), "ind.pubmed.allx") || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("error %q does not name the missing ind.pubmed.allx", err)
	}
}

// TestPlanetoidWrongNameOrDir: a mistyped name lists the datasets --src
// holds, a missing directory is named as such (both read "missing file
// ind.corra.x" before).
func TestPlanetoidWrongNameOrDir(t *testing.T) {
	needDir(t, planetoidDir)
	if _, err := Planetoid(planetoidDir, "corra"); err == nil || !strings.Contains(err.Error(), "no ind.corra.* files") || !strings.Contains(err.Error(), "citeseer, cora, pubmed") {
		t.Errorf("mistyped name: %v", err)
	}
	if _, err := Planetoid(filepath.Join(t.TempDir(), "nope"), "cora"); err == nil || !strings.Contains(err.Error(), "no directory") {
		t.Errorf("missing directory: %v", err)
	}
}

// corruptFS returns the cora files with one of them replaced.
func corruptFS(t *testing.T, suffix string, edit func([]byte) []byte) fstest.MapFS {
	t.Helper()
	m := fstest.MapFS{}
	for _, s := range []string{"x", "y", "tx", "ty", "allx", "ally", "graph", "test.index"} {
		b, err := os.ReadFile(filepath.Join(planetoidDir, "ind.cora."+s))
		if err != nil {
			t.Fatal(err)
		}
		if s == suffix {
			b = edit(b)
		}
		m["ind.cora."+s] = &fstest.MapFile{Data: b}
	}
	return m
}

func TestPlanetoidBadInput(t *testing.T) {
	needDir(t, planetoidDir)
	replace := func(old, new string) func([]byte) []byte {
		return func(b []byte) []byte { return []byte(strings.Replace(string(b), old, new, 1)) }
	}
	tests := []struct {
		name, suffix string
		edit         func([]byte) []byte
		want         []string // substrings of the error
	}{
		{"truncated allx", "allx", func(b []byte) []byte { return b[:len(b)/2] }, []string{"ind.cora.allx", "truncated"}},
		{"truncated y", "y", func(b []byte) []byte { return b[:len(b)-3] }, []string{"ind.cora.y", "truncated"}},
		{"empty graph", "graph", func(b []byte) []byte { return nil }, []string{"ind.cora.graph", "truncated"}},
		{"wrong dtype", "ally", replace("U\x02i4", "U\x02c8"), []string{"ind.cora.ally", "dtype"}},
		{"labels as features", "allx", func([]byte) []byte { b, _ := os.ReadFile(filepath.Join(planetoidDir, "ind.cora.ally")); return b }, []string{"ind.cora.allx", "want scipy.sparse.csr_matrix"}},
		{"test id out of order", "test.index", replace("2692", "17"), []string{"ind.cora.test.index", "overlaps"}},
		{"test id negative", "test.index", replace("2692", "-5"), []string{"ind.cora.test.index", "out of range"}},
		{"test id garbage", "test.index", replace("2692", "2x92"), []string{"ind.cora.test.index", "line 1"}},
		{"test id repeated", "test.index", replace("2692", "2532"), []string{"ind.cora.test.index", "repeated"}},
		// Line 1 holds 2692; one id of 999999 would make a 1,000,000-node dataset of empty nodes.
		{"test id far beyond the rows", "test.index", replace("2692", "999999"), []string{"ind.cora.test.index", "line 1: test id 999999 is far beyond the rows present"}},
		{"too few test ids", "test.index", func(b []byte) []byte { return b[5:] }, []string{"ind.cora.test.index", "999 ids"}},
		// Node 633 is the first neighbour of node 0 (BININT2 0x0279).
		{"neighbour out of range", "graph", replace("M\x79\x02", "M\xff\xff"), []string{"ind.cora.graph", "neighbour id 65535 of node 0 out of range [0,2708)"}},
		{"foreign class", "graph", replace("collections\ndefaultdict", "os\nsystem\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"), []string{"ind.cora.graph", "unsupported pickled class os.system"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := PlanetoidFS(corruptFS(t, tc.suffix, tc.edit), "cora")
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

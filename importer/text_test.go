package importer

import (
	"bytes"
	"compress/bzip2"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/graphmill/graphmill/dataset"
	"github.com/graphmill/graphmill/internal/shareddata"
)

var structureDir = shareddata.Path("structure-only")

func TestEdgeListEnron(t *testing.T) {
	path := filepath.Join(structureDir, "email-Enron.txt.gz")
	needDir(t, path)
	r, info, err := EdgeList(path, EdgeListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if info.Relabelled || info.Edges != 367662 || info.Comments != 4 || info.MaxID != 36691 || info.Distinct != 36692 {
		t.Errorf("info %+v", info)
	}
	if r.NumNodes != 36692 || len(r.Src) != 367662 {
		t.Errorf("nodes %d, edges %d; want 36692, 367662", r.NumNodes, len(r.Src))
	}
	if got := undirectedPairs(r); got != 2*183831 {
		t.Errorf("%d directed pairs after symmetrize+dedup, want 2*183831", got)
	}
	if r.Name != "email-Enron" || r.EdgeWeights != nil {
		t.Errorf("name %q, weights %v", r.Name, r.EdgeWeights != nil)
	}
}

func TestMETISWave(t *testing.T) {
	path := filepath.Join(structureDir, "wave.graph.bz2")
	needDir(t, path)
	if testing.Short() {
		t.Skip("bzip2 decoding of 13 MB takes about a second")
	}
	r, err := METIS(path)
	if err != nil {
		t.Fatal(err)
	}
	if r.NumNodes != 156317 || len(r.Src) != 2118662 {
		t.Errorf("nodes %d, entries %d; want 156317, 2118662", r.NumNodes, len(r.Src))
	}
	if got := undirectedPairs(r); got != 2118662 {
		t.Errorf("%d directed pairs, want 2118662 (symmetric lists)", got)
	}
	deg := make([]int, r.NumNodes)
	for _, s := range r.Src {
		deg[s]++
	}
	lo, hi := deg[0], deg[0]
	for _, d := range deg {
		lo, hi = min(lo, d), max(hi, d)
	}
	if lo != 3 || hi != 44 {
		t.Errorf("degree range %d..%d, want 3..44", lo, hi)
	}
}

func TestReadEdgeList(t *testing.T) {
	tests := []struct {
		name, in string
		opts     EdgeListOptions
		nodes    int
		src, dst []int32
		weights  []float32
		relabel  bool
		err      string
	}{
		{name: "tabs and comments", in: "# c\n% c\n\n0\t1\n 1 2 \r\n2\t0\n", nodes: 3, src: []int32{0, 1, 2}, dst: []int32{1, 2, 0}},
		{name: "csv with weights", in: "0,1,0.5\n1, 2 ,2e1\n", nodes: 3, src: []int32{0, 1}, dst: []int32{1, 2}, weights: []float32{0.5, 20}},
		{name: "no final newline", in: "1 2", nodes: 3, src: []int32{1}, dst: []int32{2}},
		{name: "trailing comment", in: "0 1 # note\n", nodes: 2, src: []int32{0}, dst: []int32{1}},
		{name: "empty", in: "# nothing\n", err: "no nodes and no edges: nothing to import"},
		{name: "empty with a node count", in: "# nothing\n", opts: EdgeListOptions{NumNodes: 3}, nodes: 3},
		{name: "sparse ids relabelled", in: "10 1000000\n1000000 5\n", nodes: 3, src: []int32{1, 2}, dst: []int32{2, 0}, relabel: true},
		{name: "huge ids relabelled", in: "9000000000000 7\n", nodes: 2, src: []int32{1}, dst: []int32{0}, relabel: true},
		{name: "relabel always", in: "4 2\n", opts: EdgeListOptions{Relabel: RelabelAlways}, nodes: 2, src: []int32{1}, dst: []int32{0}, relabel: true},
		{name: "keep sparse", in: "0 9\n", opts: EdgeListOptions{Relabel: RelabelNever}, nodes: 10, src: []int32{0}, dst: []int32{9}},
		{name: "byte order mark", in: "\xef\xbb\xbf0 1\n", nodes: 2, src: []int32{0}, dst: []int32{1}},
		{name: "leading zeros and long ids", in: "0000000000000000000001 2\n", nodes: 3, src: []int32{1}, dst: []int32{2}},
		{name: "wide id after narrow ones", in: "1 2\n2 1\n9000000000000 1\n", nodes: 3, src: []int32{0, 1, 2}, dst: []int32{1, 0, 0}, relabel: true},
		{name: "long comment line", in: "# " + strings.Repeat("x", 3<<20) + "\n0,1\n", nodes: 2, src: []int32{0}, dst: []int32{1}},
		{name: "num nodes", in: "0 1\n", opts: EdgeListOptions{NumNodes: 3}, nodes: 3, src: []int32{0}, dst: []int32{1}},
		{name: "num nodes too small", in: "0 5\n", opts: EdgeListOptions{NumNodes: 3, Relabel: RelabelNever}, err: "ids are 0..2"},
		// A node count keeps the ids under auto too: "0 5" was renumbered
		// into 3 nodes, and "0 99" of 100 nodes landed on node 1.
		{name: "num nodes too small, auto", in: "0 5\n", opts: EdgeListOptions{NumNodes: 3}, err: "ids are 0..2"},
		{name: "num nodes keeps sparse ids", in: "0 99\n", opts: EdgeListOptions{NumNodes: 100}, nodes: 100, src: []int32{0}, dst: []int32{99}},
		{name: "num nodes below the relabelled ids", in: "10 99\n7 8\n", opts: EdgeListOptions{NumNodes: 3, Relabel: RelabelAlways}, err: "4 distinct node ids, more than the node count given (--num-nodes) of 3"},
		{name: "num nodes pads relabelled", in: "10 99\n", opts: EdgeListOptions{NumNodes: 5, Relabel: RelabelAlways}, nodes: 5, src: []int32{0}, dst: []int32{1}, relabel: true},
		{name: "keep huge", in: "0 3000000000\n", opts: EdgeListOptions{Relabel: RelabelNever}, err: "too large to keep"},
		{name: "negative", in: "0 1\n-1 2\n", err: "line 2: source \"-1 2\": negative id"},
		{name: "negative dst", in: "0 -1\n", err: "line 1: destination \"0 -1\": negative id"},
		{name: "one column", in: "0 1\n7\n", err: "line 2: want two node ids"},
		{name: "garbage", in: "a b\n", err: "line 1: source \"a b\": not an integer"},
		{name: "header", in: "src dst\n0 1\n", err: "a header line? remove it, or comment it out with #"},
		{name: "garbage later", in: "0 1\nsrc dst\n", err: "line 2: source \"src dst\": not an integer"},
		{name: "float id", in: "1.5 2\n", err: "line 1: want two node ids"},
		{name: "overflow", in: "99999999999999999999 1\n", err: "overflows"},
		{name: "bad weight", in: "0 1 x\n", err: "weight \"x\" is not a finite number"},
		{name: "nan weight", in: "0 1 nan\n", err: "not a finite number"},
		{name: "extra column", in: "0 1 1 5\n", err: "unexpected extra column"},
		{name: "mixed columns", in: "0 1 1\n1 2\n", err: "line 2: 2 columns, but earlier lines have 3"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, info, err := ReadEdgeList(strings.NewReader(tc.in), "in.txt", tc.opts)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.HasPrefix(err.Error(), "in.txt: ") {
					t.Fatalf("error %v, want one naming in.txt and containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if r.NumNodes != tc.nodes || fmt.Sprint(r.Src) != fmt.Sprint(tc.src) || fmt.Sprint(r.Dst) != fmt.Sprint(tc.dst) {
				t.Errorf("got n=%d %v->%v, want n=%d %v->%v", r.NumNodes, r.Src, r.Dst, tc.nodes, tc.src, tc.dst)
			}
			if fmt.Sprint(r.EdgeWeights) != fmt.Sprint(tc.weights) || (tc.weights == nil) != (r.EdgeWeights == nil) {
				t.Errorf("weights %v, want %v", r.EdgeWeights, tc.weights)
			}
			if info.Relabelled != tc.relabel || (tc.relabel && (len(info.OrigIDs) != info.Distinct || info.Distinct > r.NumNodes)) {
				t.Errorf("relabelled %v (%d ids), want %v", info.Relabelled, len(info.OrigIDs), tc.relabel)
			}
			for v, orig := range info.OrigIDs {
				if v > 0 && orig <= info.OrigIDs[v-1] {
					t.Errorf("OrigIDs not increasing: %v", info.OrigIDs)
				}
			}
		})
	}
}

func TestEdgeListCompressed(t *testing.T) {
	dir := t.TempDir()
	const text = "# g\n0 1\n1 2\n"
	var gz, bz bytes.Buffer
	w := gzip.NewWriter(&gz)
	w.Write([]byte(text))
	w.Close()
	// Go has no bzip2 writer: the file was made with Python's bz2 module.
	bzData, err := os.ReadFile("testdata/tiny.edges.bz2")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := io.ReadAll(bzip2.NewReader(bytes.NewReader(bzData))); err != nil || string(got) != text {
		t.Fatalf("testdata/tiny.edges.bz2: %q %v", got, err)
	}
	bz.Write(bzData)
	files := map[string][]byte{"a.txt": []byte(text), "a.txt.gz": gz.Bytes(), "b.edges": gz.Bytes(), "c.bz2": bz.Bytes(), "d": bz.Bytes()}
	for name, data := range files {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		r, _, err := EdgeList(path, EdgeListOptions{})
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if r.NumNodes != 3 || len(r.Src) != 2 {
			t.Errorf("%s: %d nodes %d edges, want 3, 2", name, r.NumNodes, len(r.Src))
		}
	}
	// A .gz name with plain content, and a corrupt gzip stream.
	bad := map[string][]byte{"plain.gz": []byte(text), "cut.gz": gz.Bytes()[:gz.Len()-6]}
	for name, data := range bad {
		path := filepath.Join(dir, name)
		os.WriteFile(path, data, 0o644)
		if _, _, err := EdgeList(path, EdgeListOptions{}); err == nil || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: error %v, want one naming the file", name, err)
		}
	}
	if _, _, err := EdgeList(filepath.Join(dir, "missing.txt"), EdgeListOptions{}); err == nil {
		t.Error("missing file: no error")
	}
}

func TestReadMETIS(t *testing.T) {
	tests := []struct {
		name, in string
		nodes    int
		src, dst []int32
		weights  []float32
		err      string
	}{
		{name: "triangle", in: "% comment\n3 3\n2 3\n1 3\n1 2\n", nodes: 3, src: []int32{0, 0, 1, 1, 2, 2}, dst: []int32{1, 2, 0, 2, 0, 1}},
		{name: "isolated vertex is an empty line", in: "3 1\n2\n1\n\n", nodes: 3, src: []int32{0, 1}, dst: []int32{1, 0}},
		{name: "comments between lines", in: "2 1\n%x\n2\n% y\n1\n%end\n\n", nodes: 2, src: []int32{0, 1}, dst: []int32{1, 0}},
		{name: "edge weights", in: "2 1 1\n2 5\n1 5\n", nodes: 2, src: []int32{0, 1}, dst: []int32{1, 0}, weights: []float32{5, 5}},
		{name: "vertex weights", in: "2 1 10 2\n7 8 2\n1 1 1\n", nodes: 2, src: []int32{0, 1}, dst: []int32{1, 0}},
		{name: "all", in: "2 1 111\n1 4 2 3\n1 4 1 3\n", nodes: 2, src: []int32{0, 1}, dst: []int32{1, 0}, weights: []float32{3, 3}},
		{name: "no edges", in: "2 0\n\n\n", nodes: 2},
		{name: "no header", in: "% only\n", err: "no header"},
		{name: "bad header", in: "3\n", err: "want \"n m [fmt [ncon]]\""},
		{name: "bad fmt", in: "2 1 2\n2\n1\n", err: "fmt 2 not understood"},
		{name: "out of range", in: "2 1\n3\n1\n", err: "line 2 (vertex 1): neighbour 3 out of range [1,2]"},
		{name: "zero id", in: "2 1\n0\n1\n", err: "neighbour 0 out of range"},
		{name: "negative id", in: "2 1\n-2\n1\n", err: "negative id"},
		{name: "self loop", in: "2 1\n1\n1\n", err: "vertex 1 lists itself"},
		{name: "too few edges", in: "3 3\n2 3\n1\n1\n", err: "4 adjacency entries, but header m = 3 needs 2m = 6"},
		{name: "too many edges", in: "2 0\n2\n1\n", err: "more than 2m = 0"},
		{name: "truncated", in: "3 1\n2\n1\n", err: "truncated: 2 vertex lines, header says n = 3"},
		{name: "extra lines", in: "2 1\n2\n1\n1\n", err: "data after the 2 vertex lines"},
		{name: "vertex weights missing", in: "3 2 10 1\n2 3\n1 3\n", err: "header says n = 3 (fmt 010: every vertex line starts with 1 vertex size/weight number(s)"},
		{name: "empty graph", in: "0 0\n", err: "no nodes and no edges: nothing to import"},
		{name: "missing weight", in: "2 1 1\n2\n1 1\n", err: "neighbour without edge weight"},
		{name: "garbage", in: "2 1\n2x\n1\n", err: "\"2x\": not an integer"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := ReadMETIS(strings.NewReader(tc.in), "g.graph")
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.HasPrefix(err.Error(), "g.graph: ") {
					t.Fatalf("error %v, want one naming g.graph and containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if r.NumNodes != tc.nodes || fmt.Sprint(r.Src) != fmt.Sprint(tc.src) || fmt.Sprint(r.Dst) != fmt.Sprint(tc.dst) {
				t.Errorf("got n=%d %v->%v, want n=%d %v->%v", r.NumNodes, r.Src, r.Dst, tc.nodes, tc.src, tc.dst)
			}
			if fmt.Sprint(r.EdgeWeights) != fmt.Sprint(tc.weights) || (tc.weights == nil) != (r.EdgeWeights == nil) {
				t.Errorf("weights %v, want %v", r.EdgeWeights, tc.weights)
			}
		})
	}
}

// syntheticEdges returns a SNAP-style edge list of n edges over ids below
// 1e6, deterministically.
func syntheticEdges(n int) []byte {
	var b bytes.Buffer
	b.WriteString("# synthetic\n")
	x := uint64(88172645463325252)
	for i := 0; i < n; i++ {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		fmt.Fprintf(&b, "%d\t%d\n", x%1000000, (x>>32)%1000000)
	}
	return b.Bytes()
}

func BenchmarkReadEdgeList(b *testing.B) {
	data := syntheticEdges(2_000_000)
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for b.Loop() {
		r, _, err := ReadEdgeList(bytes.NewReader(data), "bench", EdgeListOptions{})
		if err != nil || len(r.Src) != 2_000_000 {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(2_000_000*b.N)/b.Elapsed().Seconds(), "edges/s")
}

// decompressedWave returns the decompressed wave.graph.
func decompressedWave(b *testing.B) []byte {
	path := filepath.Join(structureDir, "wave.graph.bz2")
	needDir(b, path)
	f, err := openText(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		b.Fatal(err)
	}
	return data
}

func BenchmarkReadMETISWave(b *testing.B) {
	data := decompressedWave(b)
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	var r *dataset.Raw
	for b.Loop() {
		var err error
		if r, err = ReadMETIS(bytes.NewReader(data), "wave.graph"); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(r.Src)*b.N)/b.Elapsed().Seconds(), "edges/s")
}

func BenchmarkReadEdgeListEnron(b *testing.B) {
	path := filepath.Join(structureDir, "email-Enron.txt.gz")
	needDir(b, path)
	f, err := openText(path)
	if err != nil {
		b.Fatal(err)
	}
	data, err := io.ReadAll(f)
	f.Close()
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for b.Loop() {
		r, _, err := ReadEdgeList(bytes.NewReader(data), "enron", EdgeListOptions{})
		if err != nil || len(r.Src) != 367662 {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(367662*b.N)/b.Elapsed().Seconds(), "edges/s")
}

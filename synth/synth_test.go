package synth

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/graphmill/graphmill/dataset"
	"github.com/graphmill/graphmill/internal/half"
	"github.com/graphmill/graphmill/npy"
)

func generate(t *testing.T, cfg Config) *dataset.Dataset {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "syn")
	if _, err := Generate(context.Background(), dir, cfg, false); err != nil {
		t.Fatal(err)
	}
	d, err := dataset.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func TestGenerateProperties(t *testing.T) {
	cfg := Config{Nodes: 20000, Edges: 300000, FeatureDim: 16, Classes: 5, Homophily: 0.8, Seed: 3}
	d := generate(t, cfg)
	if err := d.Verify(context.Background()); err != nil {
		t.Fatal(err)
	}
	g := d.Graph
	if g.NumNodes != 20000 || g.NumEdges() != 300000 || d.Meta.FeatureDim != 16 || d.Meta.NumClasses != 5 {
		t.Fatalf("counts: %+v", d.Meta)
	}
	same, maxDeg := 0, 0
	for v := int32(0); v < int32(g.NumNodes); v++ {
		nb := g.InNeighbors(v)
		maxDeg = max(maxDeg, len(nb))
		for i, u := range nb {
			if u == v {
				t.Fatalf("self-loop at %d", v)
			}
			if i > 0 && nb[i-1] >= u {
				t.Fatalf("list of %d not strictly increasing: %v", v, nb)
			}
			if d.Labels[u] == d.Labels[v] {
				same++
			}
		}
	}
	// Homophily 0.8 plus the 1/5 of random edges that land in-class.
	if h := float64(same) / 300000; h < 0.8 || h > 0.88 {
		t.Errorf("edge homophily %.3f, want about 0.84", h)
	}
	if maxDeg < 10*15 {
		t.Errorf("max in-degree %d: degrees are not heavy-tailed (mean 15)", maxDeg)
	}
	if out := slices.Max(g.OutDegrees()); out < 10*15 {
		t.Errorf("max out-degree %d: popularity is not heavy-tailed", out)
	}
	// Features are informative: nearest class centroid beats chance clearly.
	f := d.Meta.FeatureDim
	cent := make([]float64, 5*f)
	cnt := make([]float64, 5)
	for v := 0; v < g.NumNodes; v++ {
		c := d.Labels[v]
		cnt[c]++
		for j := 0; j < f; j++ {
			cent[int(c)*f+j] += float64(d.Features[v*f+j])
		}
	}
	for c := 0; c < 5; c++ {
		for j := 0; j < f; j++ {
			cent[c*f+j] /= cnt[c]
		}
	}
	correct := 0
	for v := 0; v < g.NumNodes; v++ {
		best, bestD := 0, 1e300
		for c := 0; c < 5; c++ {
			dist := 0.0
			for j := 0; j < f; j++ {
				x := float64(d.Features[v*f+j]) - cent[c*f+j]
				dist += x * x
			}
			if dist < bestD {
				best, bestD = c, dist
			}
		}
		if int32(best) == d.Labels[v] {
			correct++
		}
	}
	if acc := float64(correct) / float64(g.NumNodes); acc < 0.3 || acc > 0.9 {
		t.Errorf("nearest-centroid accuracy %.3f: features should be informative but not trivial", acc)
	}
	total := d.Meta.Splits["train"] + d.Meta.Splits["val"] + d.Meta.Splits["test"]
	if tr := d.Meta.Splits["train"]; tr < 1800 || tr > 2200 || total > 20000 {
		t.Errorf("splits %v", d.Meta.Splits)
	}
}

func TestGenerateDeterministicAcrossWorkers(t *testing.T) {
	var dirs []string
	for _, w := range []int{1, 2, 3} {
		dir := filepath.Join(t.TempDir(), "syn")
		cfg := Config{Nodes: 40000, Edges: 200000, FeatureDim: 4, Classes: 3, Seed: 9, Workers: w}
		if _, err := Generate(context.Background(), dir, cfg, false); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, dir)
	}
	for _, f := range []string{"indices.npy", "indptr.npy", "features.npy", "labels.npy", "train_idx.npy"} {
		a, _ := os.ReadFile(filepath.Join(dirs[0], f))
		for _, d := range dirs[1:] {
			b, _ := os.ReadFile(filepath.Join(d, f))
			if !bytes.Equal(a, b) {
				t.Fatalf("%s differs between worker counts", f)
			}
		}
	}
}

func TestGenerateSmallAndDense(t *testing.T) {
	// A complete graph: every node needs every other node.
	d := generate(t, Config{Nodes: 6, Edges: 30, Classes: 2, Homophily: 1, Seed: 1})
	if d.Graph.NumEdges() != 30 {
		t.Fatalf("edges %d", d.Graph.NumEdges())
	}
}

// TestDenseRowsAsSorted: rows of a large share of the nodes drop their
// repeated draws against a bitmap as they are drawn; the graph is byte for
// byte the one that sorting each row after every round of draws gives,
// with strictly increasing lists and no self-loops.
func TestDenseRowsAsSorted(t *testing.T) {
	defer func() { bitmapRows = true }()
	cfg := Config{Nodes: 2000, Edges: 600_000, Classes: 4, Homophily: 0.7, Seed: 5}
	var indices [2][]byte
	for i, bitmap := range []bool{true, false} {
		bitmapRows = bitmap
		dir := filepath.Join(t.TempDir(), "syn")
		if _, err := Generate(context.Background(), dir, cfg, false); err != nil {
			t.Fatal(err)
		}
		indices[i], _ = os.ReadFile(filepath.Join(dir, "indices.npy"))
		if bitmap {
			d, err := dataset.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			dense := 0
			for v := int32(0); v < int32(d.Graph.NumNodes); v++ {
				nb := d.Graph.InNeighbors(v)
				if len(nb)*64 >= cfg.Nodes {
					dense++
				}
				for j, u := range nb {
					if u == v || j > 0 && nb[j-1] >= u {
						t.Fatalf("row %d: self-loop or not strictly increasing at %d", v, j)
					}
				}
			}
			d.Close()
			if dense < cfg.Nodes/2 {
				t.Fatalf("only %d rows of 1/64 of the nodes or more: the test misses the bitmap", dense)
			}
		}
	}
	if !bytes.Equal(indices[0], indices[1]) {
		t.Fatal("the bitmap's rows differ from the sorted rows'")
	}
}

func TestConfigErrors(t *testing.T) {
	cases := []struct {
		cfg  Config
		want string
	}{
		{Config{Nodes: 1, Classes: 1}, "nodes must be"},
		{Config{Nodes: 5, Edges: 21, Classes: 1}, "do not fit"},
		{Config{Nodes: 5, Classes: 0}, "classes"},
		{Config{Nodes: 5, Classes: 2, Homophily: 2}, "homophily"},
		{Config{Nodes: 5, Classes: 2, Exponent: 0.5}, "exponent"},
		{Config{Nodes: 5, Classes: 2, TrainFrac: 0.9, ValFrac: 0.2}, "split"},
	}
	for _, c := range cases {
		_, err := Generate(context.Background(), filepath.Join(t.TempDir(), "x"), c.cfg, false)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: got %v, want %q", c.cfg, err, c.want)
		}
	}
}

func TestGenerateCancelledLeavesNothing(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	parent := t.TempDir()
	_, err := Generate(ctx, filepath.Join(parent, "x"), Config{Nodes: 100000, Edges: 1000000, Classes: 2, FeatureDim: 8}, false)
	if err == nil {
		t.Fatal("cancelled generation succeeded")
	}
	if ents, _ := os.ReadDir(parent); len(ents) != 0 {
		t.Fatalf("left %v behind", ents)
	}
}

// BenchmarkGenerate reports synthetic generation throughput.
func BenchmarkGenerate(b *testing.B) {
	for i := 0; i < b.N; i++ {
		dir := filepath.Join(b.TempDir(), "syn")
		cfg := Config{Nodes: 1_000_000, Edges: 20_000_000, FeatureDim: 128, Classes: 16, Seed: uint64(i)}
		if _, err := Generate(context.Background(), dir, cfg, false); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(20e6*float64(b.N)/b.Elapsed().Seconds()/1e6, "Medges/s")
	b.ReportMetric(1e6*float64(b.N)/b.Elapsed().Seconds()/1e6, "Mnodes/s")
}

// TestGenerateCancelledMidway cancels from the progress callback, while
// chunks are in flight, many times: generation must stop with the
// context's error,
// never hang, and leave nothing behind.
func TestGenerateCancelledMidway(t *testing.T) {
	for i := 0; i < 20; i++ {
		ctx, cancel := context.WithCancel(context.Background())
		parent := t.TempDir()
		cfg := Config{Nodes: 200000, Edges: 400000, Classes: 2, FeatureDim: 2, Workers: 2,
			Progress: func(done, total int64) { cancel() }}
		// The cancellation itself, which the CLI turns into exit 130 (a
		// producer that stopped before queueing its chunk left the writer
		// to fail on a short array: "bytes short of the declared shape").
		if _, err := Generate(ctx, filepath.Join(parent, "x"), cfg, false); !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled generation: %v", err)
		}
		cancel()
		if ents, _ := os.ReadDir(parent); len(ents) != 0 {
			t.Fatalf("left %v behind", ents)
		}
	}
}

// TestEnsureReusesOnlyAMatchingDataset checks that Ensure generates once,
// reuses a matching dataset, and replaces one of another size.
func TestEnsureReusesOnlyAMatchingDataset(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ds")
	cfg := Config{Nodes: 500, Edges: 3000, FeatureDim: 4, Classes: 3, Seed: 1}
	for i, c := range []struct {
		cfg    Config
		reused bool
	}{{cfg, false}, {cfg, true}, {Config{Nodes: 600, Edges: 3000, FeatureDim: 4, Classes: 3, Seed: 1}, false}} {
		reused, err := Ensure(context.Background(), dir, c.cfg)
		if err != nil {
			t.Fatal(err)
		}
		if reused != c.reused {
			t.Fatalf("call %d: reused %v, want %v", i, reused, c.reused)
		}
	}
	d, err := dataset.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if d.Meta.NumNodes != 600 {
		t.Fatalf("%d nodes after regenerating with 600", d.Meta.NumNodes)
	}
	// A dataset that was not generated (a user's, given as a benchmark's
	// --dir) is not replaced.
	other := filepath.Join(t.TempDir(), "mine")
	if err := dataset.Write(context.Background(), other, &dataset.Raw{Name: "mine", Source: "edges.txt", NumNodes: 3, Src: []int32{0, 1}, Dst: []int32{1, 2}}, dataset.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := Ensure(context.Background(), other, cfg); err == nil || !strings.Contains(err.Error(), "was not generated") {
		t.Fatalf("a user's dataset replaced: %v", err)
	}
	if d, err := dataset.Open(other); err != nil || d.Meta.Name != "mine" {
		t.Fatalf("the user's dataset after Ensure: %v", err)
	} else {
		d.Close()
	}
}

// TestGenerateHalfFeatures: float16 and bfloat16 features are the float32
// ones rounded, stored as numpy float16 and uint16, named in meta.json.
func TestGenerateHalfFeatures(t *testing.T) {
	cfg := Config{Nodes: 20000, Edges: 100000, FeatureDim: 8, Classes: 3, Seed: 4}
	f32 := generate(t, cfg)
	for _, c := range []struct {
		dtype string
		npy   npy.DType
		enc   func(float32) uint16
	}{{"float16", npy.Float16, half.F32ToF16}, {"bfloat16", npy.Uint16, half.F32ToBF16}} {
		cfg.FeatureDType = c.dtype
		d := generate(t, cfg)
		if d.Meta.FeatureDType != c.dtype || d.FeatureArray.DType != c.npy {
			t.Fatalf("%s: meta says %q, array holds %s", c.dtype, d.Meta.FeatureDType, d.FeatureArray.DType)
		}
		got, err := npy.View[uint16](d.FeatureArray)
		if err != nil {
			t.Fatal(err)
		}
		for i, x := range f32.Features {
			if got[i] != c.enc(x) {
				t.Fatalf("%s: value %d is %#04x, want %#04x (from %v)", c.dtype, i, got[i], c.enc(x), x)
			}
		}
	}
	cfg.FeatureDType = "float64"
	if _, err := Generate(context.Background(), filepath.Join(t.TempDir(), "x"), cfg, false); err == nil {
		t.Error("a float64 feature dtype was accepted")
	}
}

package train

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/graphmill/graphmill/dataset"
	"github.com/graphmill/graphmill/dataset/builtin"
	"github.com/graphmill/graphmill/feature"
	"github.com/graphmill/graphmill/internal/racedetect"
	"github.com/graphmill/graphmill/nn"
	"github.com/graphmill/graphmill/pipeline"
	"github.com/graphmill/graphmill/safetensors"
	"github.com/graphmill/graphmill/tensor"
)

func cora(t testing.TB) *dataset.Dataset {
	t.Helper()
	t.Setenv("GRAPHMILL_CACHE", t.TempDir())
	d, err := builtin.Open(context.Background(), "cora")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func run(t *testing.T, d *dataset.Dataset, cfg Config) *Result {
	t.Helper()
	r, err := NewRunner(d, cfg, Hooks{}, withTestParts)
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// stripTimes strips wall-clock fields (and what depends on them) so runs
// can be compared.
func stripTimes(res *Result) []EpochStats {
	out := make([]EpochStats, len(res.History))
	for i, h := range res.History {
		h.Seconds, h.SampleSeconds, h.SampleCPUSeconds, h.GatherSeconds, h.GatherCPUSeconds, h.ComputeSeconds, h.WaitSeconds, h.FirstWaitSeconds, h.EvalSeconds = 0, 0, 0, 0, 0, 0, 0, 0, 0
		h.PeakHeapBytes, h.PeakRSSBytes = 0, 0
		h.Buffers = 0 // how the pipeline ran: sized from measured times
		out[i] = h
	}
	return out
}

func TestReproducible(t *testing.T) {
	d := cora(t)
	for _, kind := range []nn.Kind{nn.GCN, nn.SAGE, nn.GAT} {
		t.Run(string(kind), func(t *testing.T) {
			cfg := Defaults(kind)
			cfg.Epochs, cfg.Threads, cfg.Workers, cfg.Seed, cfg.Model.Seed = 4, 2, 2, 3, 3
			a, b := run(t, d, cfg), run(t, d, cfg)
			if !reflect.DeepEqual(stripTimes(a), stripTimes(b)) {
				t.Fatalf("same seed, different histories:\n%+v\n%+v", stripTimes(a), stripTimes(b))
			}
			cfg.Seed, cfg.Model.Seed = 4, 4
			if c := run(t, d, cfg); reflect.DeepEqual(stripTimes(a), stripTimes(c)) {
				t.Fatal("a different seed gave the same history")
			}
		})
	}
}

func TestGASReproducibleAndRaceFree(t *testing.T) {
	d := cora(t)
	for _, kind := range []nn.Kind{nn.GCN, nn.SAGE, nn.APPNP, nn.GIN, nn.PNA} {
		cfg := Defaults(kind)
		cfg.Mode, cfg.Epochs, cfg.Threads, cfg.Parts, cfg.PartsPerBatch = GAS, 3, 2, 8, 3
		a, b := run(t, d, cfg), run(t, d, cfg)
		if !reflect.DeepEqual(stripTimes(a), stripTimes(b)) {
			t.Fatalf("%s: same seed, different GAS histories", kind)
		}
		if a.History[2].Batches != 3 {
			t.Fatalf("%s: %d batches, want 3 (8 parts, 3 per batch)", kind, a.History[2].Batches)
		}
	}
	cfg := Defaults(nn.GCN)
	cfg.Mode, cfg.OverlapEval = GAS, true
	if _, err := NewRunner(d, cfg, Hooks{}, withTestParts); err == nil {
		t.Fatal("gas with overlapped evaluation accepted")
	}
	cfg.OverlapEval, cfg.PartsPerBatch = false, 50
	if _, err := NewRunner(d, cfg, Hooks{}, withTestParts); err == nil {
		t.Fatal("more parts per batch than parts accepted")
	}
}

func TestOverlappedEvalMatchesSequential(t *testing.T) {
	d := cora(t)
	for _, kind := range []nn.Kind{nn.GCN, nn.SAGE} {
		cfg := Defaults(kind)
		cfg.Epochs, cfg.Threads, cfg.Workers = 6, 2, 2
		seq := run(t, d, cfg)
		cfg.OverlapEval = true
		ovl := run(t, d, cfg)
		if !reflect.DeepEqual(stripTimes(seq), stripTimes(ovl)) || seq.Summary.TestAcc != ovl.Summary.TestAcc {
			t.Fatalf("%s: overlapped evaluation differs:\n%+v\n%+v", kind, stripTimes(seq), stripTimes(ovl))
		}
		for _, h := range ovl.History {
			if h.ValAcc == nil {
				t.Fatalf("%s: epoch %d has no evaluation", kind, h.Epoch)
			}
		}
	}
}

// TestLayerwiseInferenceMatchesFullGraph checks that batched layer-wise
// inference computes exactly what one full-graph forward pass computes.
func TestLayerwiseInferenceMatchesFullGraph(t *testing.T) {
	d := cora(t)
	for _, kind := range builtinKinds() {
		cfg := Defaults(kind)
		cfg.Model.Layers = 3
		cfg.Fanouts = DefaultFanouts(nn.NumLayers(cfg.Model))
		r, err := NewRunner(d, cfg, Hooks{}, withTestParts)
		if err != nil {
			t.Fatal(err)
		}
		m, _ := r.NewModel()
		full, err := Infer(context.Background(), m, d.Graph, r.Features(), 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		batched, err := Infer(context.Background(), m, d.Graph, r.Features(), 300, 0)
		if err != nil {
			t.Fatal(err)
		}
		// A 3 MiB bound shrinks the batches (a 300-node batch of Cora
		// with its in-neighbours' 1433 features alone takes about 5 MiB).
		bounded, err := Infer(context.Background(), m, d.Graph, r.Features(), 0, 3<<20)
		if err != nil {
			t.Fatal(err)
		}
		for i := range full.Data {
			for _, b := range []tensor.Matrix{batched, bounded} {
				if math.Abs(float64(full.Data[i]-b.Data[i])) > 1e-4*(1+math.Abs(float64(full.Data[i]))) {
					t.Fatalf("%s: element %d differs: %g vs %g", kind, i, full.Data[i], b.Data[i])
				}
			}
		}
		if _, err := Infer(context.Background(), m, d.Graph, r.Features(), 0, 10<<10); err == nil || !strings.Contains(err.Error(), "memory bound") {
			t.Fatalf("%s: a 10 KiB bound gave %v, want an error naming the bound", kind, err)
		}
	}
}

func TestCheckpointRoundTrip(t *testing.T) {
	d := cora(t)
	for _, kind := range []nn.Kind{nn.GCN, nn.SAGE, nn.GAT} {
		cfg := Defaults(kind)
		cfg.Epochs = 3
		res := run(t, d, cfg)
		p := filepath.Join(t.TempDir(), "m.safetensors")
		if err := res.Model.Save(p, map[string]string{"normalize_features": "true"}); err != nil {
			t.Fatal(err)
		}
		r, m, err := Load(d, p, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		ev, err := r.Evaluate(context.Background(), m)
		if err != nil {
			t.Fatal(err)
		}
		if ev.ValAcc != res.Summary.BestValAcc || ev.TestAcc != res.Summary.TestAcc {
			t.Fatalf("%s: reloaded model scores %.4f/%.4f, trained %.4f/%.4f", kind, ev.ValAcc, ev.TestAcc, res.Summary.BestValAcc, res.Summary.TestAcc)
		}
	}
}

func TestLoadRejectsMismatch(t *testing.T) {
	d := cora(t)
	cfg := Defaults(nn.GCN)
	cfg.Epochs = 1
	res := run(t, d, cfg)
	p := filepath.Join(t.TempDir(), "m.safetensors")
	res.Model.Save(p, nil)
	f, _ := readCheckpoint(t, p)
	// A model with another hidden width must refuse these weights.
	other := cfg.Model
	other.Hidden = 32
	other.In, other.Out = 1433, 7
	m2, err := nn.NewModel(other, make([]float32, 2708))
	if err != nil {
		t.Fatal(err)
	}
	if err := m2.LoadParams(f, p); err == nil || !strings.Contains(err.Error(), "convs.0.lin.weight") {
		t.Fatalf("mismatched load: %v", err)
	}
	sage := other
	sage.Kind, sage.Hidden = nn.SAGE, 16
	m3, _ := nn.NewModel(sage, nil)
	if err := m3.LoadParams(f, p); err == nil || !strings.Contains(err.Error(), "no tensor") {
		t.Fatalf("wrong model kind: %v", err)
	}

	// A checkpoint whose stored config asks for a larger model than its
	// tensors hold is refused before the model is made: a hidden width of
	// 2^40 would be 6 PB of weights.
	for _, change := range []struct{ key, value string }{{"hidden", "1000"}, {"hidden", "1099511627776"}, {"kind", `"sage"`}} {
		var cfg map[string]any
		if err := json.Unmarshal([]byte(f.Metadata["graphmill_config"]), &cfg); err != nil {
			t.Fatal(err)
		}
		var v any
		json.Unmarshal([]byte(change.value), &v)
		cfg[change.key] = v
		b, _ := json.Marshal(cfg)
		var ts []safetensors.Tensor
		for _, name := range f.Order {
			ts = append(ts, f.Tensors[name])
		}
		bad := filepath.Join(t.TempDir(), "bad.safetensors")
		if err := safetensors.Write(bad, ts, map[string]string{"graphmill_config": string(b)}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := Load(d, bad, 0, 0); err == nil || !strings.Contains(err.Error(), "config and tensors do not match") {
			t.Errorf("%s %s: %v, want an error saying config and tensors do not match", change.key, change.value, err)
		}
	}
}

// TestRefusesModelsLargerThanMemory: a model whose parameters, with their
// gradients, the optimiser's state and an evaluation's copy, take more
// than the process's memory is an error before training starts (nn's
// TestNewModelWithinMemory: the parameters alone).
func TestRefusesModelsLargerThanMemory(t *testing.T) {
	d := cora(t)
	defer func(f func() int64) { memoryLimit = f }(memoryLimit)
	memoryLimit = func() int64 { return 1 << 20 } // 1 MiB
	for _, tc := range []struct {
		hidden   int
		skipEval bool
		want     string
	}{
		// 1433·16 + 16·7 + 23 parameters: 92 KiB, 460 KiB to train.
		{16, false, ""},
		// 1433·64 + 64·7 + 71: 360 KiB; with gradients, Adam's moments
		// and the copy an evaluation reads, 1.76 MiB; without that copy,
		// 1.41 MiB.
		{64, false, "needs 1.76 MiB for its 92.2k parameters, their gradients, the optimiser's state and the copy"},
		{64, true, "needs 1.41 MiB for its 92.2k parameters, their gradients and the optimiser's state: more than the 1 MiB"},
	} {
		cfg := Defaults(nn.GCN)
		cfg.Model.Hidden, cfg.Epochs, cfg.SkipEval = tc.hidden, 1, tc.skipEval
		r, err := NewRunner(d, cfg, Hooks{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = r.Run(context.Background())
		r.Close()
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("hidden %d: %v, want %q", tc.hidden, err, tc.want)
		}
	}
}

// TestFeaturesInMemory: where each setting of Config.FeaturesInMemory
// reads the features from (the summary's copy size), and that a sampled
// run reads the same values either way: its history is bitwise the same.
func TestFeaturesInMemory(t *testing.T) {
	d := cora(t)
	copyBytes := int64(len(d.FeatureArray.Data))
	var mapped *Result
	for _, c := range []struct {
		name    string
		mod     func(*Config)
		inMem   bool
		compare bool // its history must equal the mapped run's
	}{
		{"mapped", func(c *Config) { c.FeaturesInMemory = FeaturesMapped }, false, false},
		{"auto sampled", func(c *Config) {}, true, true},
		{"yes", func(c *Config) { c.FeaturesInMemory = FeaturesMemory }, true, true},
		{"from disk", func(c *Config) { c.FeaturesInMemory = FeaturesDisk }, false, true},
		{"from disk with a feature cache", func(c *Config) { c.FeaturesInMemory, c.FeatureCacheBytes = FeaturesDisk, 1<<20 }, false, true},
		{"from disk with every row cached", func(c *Config) { c.FeaturesInMemory, c.FeatureCacheBytes = FeaturesDisk, copyBytes }, false, true},
		{"auto under a memory bound", func(c *Config) { c.MaxMemoryBytes = 64 << 20 }, false, false},
		{"auto with a feature cache", func(c *Config) { c.FeatureCacheBytes = 1 << 20 }, false, false},
		{"auto converting", func(c *Config) { c.FeatureDType = "float16" }, false, false},
		{"auto full graph", func(c *Config) { c.Mode = Full }, false, false},
		{"yes full graph", func(c *Config) { c.Mode, c.FeaturesInMemory = Full, FeaturesMemory }, true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := Defaults(nn.SAGE)
			cfg.Mode, cfg.Fanouts, cfg.BatchSize = Sampled, []int{5, 5}, 256
			cfg.Epochs, cfg.Threads, cfg.Workers, cfg.Seed, cfg.Model.Seed = 2, 1, 1, 5, 5
			c.mod(&cfg)
			res := run(t, d, cfg)
			if got := res.Summary.FeaturesInMemoryBytes; (got > 0) != c.inMem || c.inMem && got != copyBytes {
				t.Fatalf("features in memory: %d bytes, want in memory %v (%d bytes)", got, c.inMem, copyBytes)
			}
			if c.name == "mapped" {
				mapped = res
			}
			if fromDisk := strings.HasPrefix(c.name, "from disk"); (res.Summary.Disk != nil) != fromDisk || fromDisk && res.Summary.DiskReadBytes == 0 {
				t.Fatalf("read from disk: %+v (%d bytes), want %v", res.Summary.Disk, res.Summary.DiskReadBytes, fromDisk)
			}
			// A cache of every row plans nothing (superbatch); a part of
			// them plans ahead.
			if dk := res.Summary.Disk; dk != nil && (dk.Superbatch == 0) != (dk.CacheBytes == copyBytes) {
				t.Fatalf("a cache of %d of %d bytes planned %d batches ahead (%d planned reads)", dk.CacheBytes, copyBytes, dk.Superbatch, dk.Planned)
			}
			if c.compare && !reflect.DeepEqual(stripTimes(res), stripTimes(mapped)) {
				t.Fatalf("in memory and mapped, different histories:\n%+v\n%+v", stripTimes(res), stripTimes(mapped))
			}
		})
	}
}

// TestGraphInMemory: when each setting of Config.GraphInMemory copies the
// graph (the summary's copy size), and that sampled and GAS runs draw the
// same minibatches from the copy as from the mapping: their histories are
// bitwise the same.
func TestGraphInMemory(t *testing.T) {
	d := cora(t)
	copyBytes := d.Graph.Bytes()
	mapped := map[Mode]*Result{}
	for _, c := range []struct {
		name  string
		mod   func(*Config)
		inMem bool
	}{
		{"no", func(c *Config) { c.GraphInMemory = "no" }, false},
		{"auto", func(c *Config) {}, true},
		{"yes", func(c *Config) { c.GraphInMemory = "yes" }, true},
		{"gas no", func(c *Config) { c.Mode, c.GraphInMemory = GAS, "no" }, false},
		{"gas auto", func(c *Config) { c.Mode = GAS }, true},
		{"auto under a memory bound", func(c *Config) { c.MaxMemoryBytes = 64 << 20 }, false},
		{"auto with features from disk", func(c *Config) { c.FeaturesInMemory = FeaturesDisk }, false},
		{"auto with the graph on disk", func(c *Config) { c.GraphOnDisk = "yes" }, false},
		{"auto full graph", func(c *Config) { c.Mode = Full }, false},
		{"yes full graph", func(c *Config) { c.Mode, c.GraphInMemory = Full, "yes" }, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := Defaults(nn.SAGE)
			cfg.Mode, cfg.Fanouts, cfg.BatchSize = Sampled, []int{5, 5}, 256
			cfg.Parts, cfg.PartsPerBatch = 8, 2
			cfg.Epochs, cfg.Threads, cfg.Workers, cfg.Seed, cfg.Model.Seed = 2, 1, 1, 5, 5
			c.mod(&cfg)
			res := run(t, d, cfg)
			if got := res.Summary.GraphInMemoryBytes; (got > 0) != c.inMem || c.inMem && got != copyBytes {
				t.Fatalf("graph in memory: %d bytes, want in memory %v (%d bytes)", got, c.inMem, copyBytes)
			}
			if cfg.GraphInMemory == "no" {
				mapped[cfg.Mode] = res
			} else if want := mapped[cfg.Mode]; c.inMem && want != nil && !reflect.DeepEqual(stripTimes(res), stripTimes(want)) {
				t.Fatalf("in memory and mapped, different histories:\n%+v\n%+v", stripTimes(res), stripTimes(want))
			}
		})
	}
}

func TestBadInput(t *testing.T) {
	d := cora(t)
	cases := []struct {
		name string
		mod  func(*Config)
		want string
	}{
		{"features", func(c *Config) { c.Model.In = 100 }, "does not match the dataset's 1433 features"},
		{"classes", func(c *Config) { c.Model.Out = 3 }, "does not match the dataset's 7 classes"},
		{"fanouts", func(c *Config) { c.Mode = Sampled; c.Fanouts = []int{5} }, "1 fanout(s) for a model of 2 sampled layers"},
		{"epochs", func(c *Config) { c.Epochs = 0 }, "epochs must be"},
		{"mode", func(c *Config) { c.Mode = "x" }, "unknown mode"},
		{"features in memory", func(c *Config) { c.FeaturesInMemory = "maybe" }, `features in memory "maybe": want auto, yes, no or mapped`},
		{"in memory and cache", func(c *Config) { c.FeaturesInMemory, c.FeatureCacheBytes = FeaturesMemory, 1<<20 }, "a feature cache sits in front of the mapped feature file"},
		{"graph in memory", func(c *Config) { c.GraphInMemory = "maybe" }, `graph in memory "maybe": want auto, yes or no`},
		{"graph in memory and on disk", func(c *Config) { c.GraphInMemory, c.GraphOnDisk = "yes", "yes" }, "either read from disk (graph on disk yes) or copied into memory"},
	}
	for _, c := range cases {
		cfg := Defaults(nn.GCN)
		c.mod(&cfg)
		if _, err := NewRunner(d, cfg, Hooks{}, withTestParts); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.name, err, c.want)
		}
	}
	// An empty training split.
	empty := *d
	empty.Train = []int32{}
	if _, err := NewRunner(&empty, Defaults(nn.GCN), Hooks{}); err == nil || !strings.Contains(err.Error(), "empty training split") {
		t.Errorf("empty split: %v", err)
	}
	// With a batch source the seeds are the source's: a distributed
	// sampler's part that owns no training node still takes part.
	sampled := Defaults(nn.SAGE)
	if _, err := NewRunner(&empty, sampled, Hooks{}, WithBatches(noBatches{})); err != nil {
		t.Errorf("empty split with a batch source: %v", err)
	}
}

// noBatches is a BatchSource of no batches.
type noBatches struct{}

func (noBatches) NumBatches() int                           { return 0 }
func (noBatches) Epoch(context.Context, int) *pipeline.Iter { return nil }

func TestNaNLossStopsWithEpoch(t *testing.T) {
	d := cora(t)
	x := make([]float32, len(d.Features))
	copy(x, d.Features)
	x[5] = float32(math.Inf(1))
	src, err := feature.FromFloat32(x, d.Meta.NumNodes, d.Meta.FeatureDim, feature.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := Defaults(nn.GCN)
	cfg.NormalizeFeatures = false
	r, err := NewRunner(d, cfg, Hooks{}, WithFeatures(src))
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "epoch 0") {
		t.Fatalf("got %v, want an error naming epoch 0", err)
	}
}

// TestFloat16FeaturesAccuracy trains GCN on Cora from features held as
// float16 (converted once, half the memory) and as float32: the test
// accuracy must agree within 0.5 points (the bar), and the run
// must report the dtype it read.
func TestFloat16FeaturesAccuracy(t *testing.T) {
	d := cora(t)
	acc := map[string]float64{}
	for _, dt := range []string{"", "float16"} {
		cfg := Defaults(nn.GCN)
		cfg.FeatureDType = dt
		r, err := NewRunner(d, cfg, Hooks{})
		if err != nil {
			t.Fatal(err)
		}
		res, err := r.Run(context.Background())
		r.Close()
		if err != nil {
			t.Fatal(err)
		}
		want := "float32"
		if dt != "" {
			want = dt
		}
		if res.Summary.FeatureDType != want {
			t.Fatalf("features read as %q, want %q", res.Summary.FeatureDType, want)
		}
		acc[want] = res.Summary.TestAcc
	}
	t.Logf("GCN Cora test accuracy: float32 %.2f%%, float16 %.2f%%", 100*acc["float32"], 100*acc["float16"])
	if d := math.Abs(acc["float32"] - acc["float16"]); d > 0.005 {
		t.Fatalf("float16 features change the test accuracy by %.2f points (float32 %.4f, float16 %.4f)", 100*d, acc["float32"], acc["float16"])
	}
}

func TestHalfHint(t *testing.T) {
	for _, c := range []struct {
		name        string
		dt          feature.DType
		size, avail int64
		hint        bool
	}{
		{"fits as float32", feature.Float32, 100, 400, false},
		{"fits only as float16", feature.Float32, 300, 400, true},
		{"fits in neither", feature.Float32, 900, 400, false},
		{"already half", feature.Float16, 300, 400, false},
		{"available unknown", feature.Float32, 300, 0, false},
	} {
		if got := halfHint(c.dt, c.size, c.avail) != ""; got != c.hint {
			t.Errorf("%s: hint %v, want %v", c.name, got, c.hint)
		}
	}
}

// TestEveryKindEveryMode trains every registered model kind, the ones
// written only with nn's public ops among them, in full, sampled and GAS
// modes, and under a memory bound that splits its batches: each learns
// (the training loss falls) and evaluates.
//
// Under the race detector it trains SAGE, GAT and GIN only: the other
// kinds run the same loaders, pipelines and parallel kernels, and all of
// them took 204 s of a 457 s race run of this package on a 2-vCPU AMD
// EPYC (Zen 3); the test without -race still trains every kind.
func TestEveryKindEveryMode(t *testing.T) {
	d := cora(t)
	for _, kind := range builtinKinds() {
		if racedetect.Enabled && kind != nn.SAGE && kind != nn.GAT && kind != nn.GIN {
			continue
		}
		for _, mode := range []Mode{Full, Sampled, GAS} {
			t.Run(fmt.Sprintf("%s/%s", kind, mode), func(t *testing.T) {
				cfg := Defaults(kind)
				cfg.Mode, cfg.Epochs, cfg.Patience = mode, 8, 0
				cfg.BatchSize, cfg.Parts, cfg.PartsPerBatch = 140, 8, 4
				cfg.Model.Layers = min(cfg.Model.Layers, 3)
				cfg.Fanouts = DefaultFanouts(nn.NumLayers(cfg.Model))
				if mode == Sampled {
					cfg.MaxMemoryBytes = 24 << 20
				}
				res := run(t, d, cfg)
				h := res.History
				if len(h) != 8 || !(h[len(h)-1].Loss < h[0].Loss) || math.IsNaN(h[len(h)-1].Loss) {
					t.Fatalf("losses %v", losses(h))
				}
				if res.Summary.TestAcc <= 0 {
					t.Fatalf("test accuracy %v", res.Summary.TestAcc)
				}
			})
		}
	}
}

// builtinKinds is nn.Kinds without the kinds these tests register for
// their own data ("test-" kinds).
func builtinKinds() []nn.Kind {
	var ks []nn.Kind
	for _, k := range nn.Kinds() {
		if !strings.HasPrefix(string(k), "test-") {
			ks = append(ks, k)
		}
	}
	return ks
}

func losses(h []EpochStats) []float64 {
	var l []float64
	for _, e := range h {
		l = append(l, e.Loss)
	}
	return l
}

// TestLibraryBadInput: what a library user can get wrong is an error, not a
// panic (each of these panicked, ran on silently, or faulted).
func TestLibraryBadInput(t *testing.T) {
	d := cora(t)
	ctx := context.Background()
	closed, err := builtin.Open(ctx, "cora")
	if err != nil {
		t.Fatal(err)
	}
	closed.Close()
	cfgWith := func(f func(*Config)) Config {
		c := Defaults(nn.GCN)
		f(&c)
		return c
	}
	for name, tc := range map[string]struct {
		ds   *dataset.Dataset
		cfg  Config
		opts []Option
		want string
	}{
		"nil dataset":        {nil, Defaults(nn.GCN), nil, "no dataset"},
		"closed dataset":     {closed, Defaults(nn.GCN), nil, "no dataset, or a closed one"},
		"short degrees":      {d, Defaults(nn.GCN), []Option{WithDegrees([]float32{1, 2})}, "2 degrees for the 2708 nodes"},
		"unknown schedule":   {d, cfgWith(func(c *Config) { c.Schedule.Kind = "bogus" }), nil, "unknown lr schedule"},
		"cosine without lr":  {d, cfgWith(func(c *Config) { c.Schedule = nn.Schedule{Kind: "cosine", Epochs: 10} }), nil, "a cosine schedule needs"},
		"negative evalbatch": {d, cfgWith(func(c *Config) { c.EvalBatchSize = -1 }), nil, "evaluation batch size must be >= 0"},
		"zero fanout":        {d, cfgWith(func(c *Config) { c.Mode, c.Fanouts = Sampled, []int{25, 0} }), nil, "fanout 0 of hop 1"},
	} {
		if _, err := NewRunner(tc.ds, tc.cfg, Hooks{}, tc.opts...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error containing %q", name, err, tc.want)
		}
	}
	if _, _, err := Load(closed, "m.safetensors", 0, 0); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("Load on a closed dataset: %v", err)
	}
	r, err := NewRunner(d, Defaults(nn.GCN), Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, c := range []nn.Config{{Kind: nn.SAGE, In: 20, Hidden: 8, Out: 7, Layers: 2}, {Kind: nn.SAGE, In: 1433, Hidden: 8, Out: 3, Layers: 2}} {
		m, err := nn.NewModel(c, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Evaluate(ctx, m); err == nil || !strings.Contains(err.Error(), "but dataset cora has 1433 features and 7 classes") {
			t.Errorf("Evaluate of a %d → %d model: %v", c.In, c.Out, err)
		}
		if _, err := r.Predict(ctx, m); err == nil {
			t.Errorf("Predict of a %d → %d model accepted", c.In, c.Out)
		}
	}
	m, _ := r.NewModel()
	if _, err := Infer(ctx, m, d.Graph, r.Features(), -5, 0); err == nil || !strings.Contains(err.Error(), "want >= 0") {
		t.Errorf("Infer with batch -5: %v", err)
	}
	if _, err := Infer(ctx, nil, d.Graph, r.Features(), 0, 0); err == nil {
		t.Error("Infer without a model accepted")
	}
}

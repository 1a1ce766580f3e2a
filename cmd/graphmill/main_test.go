package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/graphmill/graphmill/internal/cli"
	"github.com/graphmill/graphmill/internal/shareddata"
)

// run executes the CLI in-process with args and returns stdout and the error.
func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	rootCmd.SetOut(&out)
	rootCmd.SetErr(&out)
	rootCmd.SetArgs(args)
	cli.RefuseUnknown(rootCmd) // as main does
	// Cobra keeps flag values between executions: reset the ones we set.
	defer resetFlags()
	err := rootCmd.ExecuteContext(context.Background())
	return out.String(), err
}

// resetFlags puts every flag of every command back to its default, since
// cobra keeps parsed values between executions of the same tree.
func resetFlags() {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.Flags().VisitAll(func(f *pflag.Flag) {
			f.Value.Set(f.DefValue)
			f.Changed = false
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(rootCmd)
}

// sharedData honours $GRAPHMILL_DATA (see internal/shareddata).
var sharedData = shareddata.Dir()

func need(t *testing.T, path string) string {
	t.Helper()
	p := filepath.Join(sharedData, path)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("shared dataset %s not present: %v", p, err)
	}
	return p
}

// TestImportThenInfo imports every shared format through the CLI and
// checks "data info --json" against the counts the data README states.
func TestImportThenInfo(t *testing.T) {
	cases := []struct {
		name     string
		args     []string
		nodes    int
		edges    int
		features int
		classes  int
		split    [3]int
	}{
		{"cora", []string{"--format", "planetoid", "--src", need(t, "planetoid"), "--name", "cora"}, 2708, 10556, 1433, 7, [3]int{140, 500, 1000}},
		{"citeseer", []string{"--format", "planetoid", "--src", need(t, "planetoid"), "--name", "citeseer"}, 3327, 9104, 3703, 6, [3]int{120, 500, 1000}},
		{"wave", []string{"--format", "metis", "--src", need(t, "structure-only/wave.graph.bz2")}, 156317, 2 * 1059331, 0, 0, [3]int{}},
		{"enron", []string{"--format", "edgelist", "--src", need(t, "structure-only/email-Enron.txt.gz")}, 36692, 367662, 0, 0, [3]int{}},
	}
	tmp := t.TempDir()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(tmp, c.name)
			if _, err := run(t, append([]string{"data", "import", "--out", out}, c.args...)...); err != nil {
				t.Fatal(err)
			}
			js, err := run(t, "data", "info", "--json", out)
			if err != nil {
				t.Fatal(err)
			}
			var info struct {
				NumNodes   int `json:"num_nodes"`
				NumEdges   int `json:"num_edges"`
				FeatureDim int `json:"feature_dim"`
				NumClasses int `json:"num_classes"`
				Train      int `json:"train_size"`
				Val        int `json:"val_size"`
				Test       int `json:"test_size"`
			}
			if err := json.Unmarshal([]byte(js), &info); err != nil {
				t.Fatalf("%v in %s", err, js)
			}
			if info.NumNodes != c.nodes || info.NumEdges != c.edges || info.FeatureDim != c.features || info.NumClasses != c.classes ||
				[3]int{info.Train, info.Val, info.Test} != c.split {
				t.Fatalf("info %+v, want nodes %d edges %d features %d classes %d split %v", info, c.nodes, c.edges, c.features, c.classes, c.split)
			}
			numpyOpensAll(t, out)
		})
	}
}

// numpyOpensAll checks that numpy.load(mmap_mode="r") opens every array of
// the dataset with the dtype and shape meta.json states.
func numpyOpensAll(t *testing.T, dir string) {
	py := "/usr/bin/python3"
	if exec.Command(py, "-c", "import numpy").Run() != nil {
		t.Log("numpy not installed for /usr/bin/python3; skipping the numpy check")
		return
	}
	script := `
import json, numpy as np, sys, os
d = sys.argv[1]
m = json.load(open(os.path.join(d, "meta.json")))
for name, a in m["arrays"].items():
    x = np.load(os.path.join(d, a["file"]), mmap_mode="r")
    assert x.dtype.str.replace("=", "<").replace("|", "<") == a["dtype"].replace("|", "<"), (name, x.dtype.str, a["dtype"])
    assert list(x.shape) == a["shape"], (name, x.shape, a["shape"])
ip = np.load(os.path.join(d, "indptr.npy"), mmap_mode="r")
assert ip[0] == 0 and ip[-1] == m["num_edges"] and (np.diff(ip) >= 0).all()
`
	if out, err := exec.Command(py, "-c", script, dir).CombinedOutput(); err != nil {
		t.Fatalf("numpy: %v\n%s", err, out)
	}
}

// TestImportRefusesOtherFormatsFlags: a flag of another format was
// ignored without a word (--split random on a Planetoid import).
func TestImportRefusesOtherFormatsFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--format", "planetoid", "--name", "cora", "--split", "random"}, "--split applies to --format npz, not planetoid"},
		{[]string{"--format", "edgelist", "--seed", "3"}, "--seed applies to --format npz, not edgelist"},
		{[]string{"--format", "npz", "--num-nodes", "5"}, "--num-nodes applies to --format edgelist, not npz"},
	} {
		_, err := run(t, append([]string{"data", "import", "--src", "x", "--out", filepath.Join(t.TempDir(), "o")}, c.args...)...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.args, err, c.want)
		}
	}
}

func TestBadInputGivesOneLineError(t *testing.T) {
	cases := [][]string{
		{"data", "import", "--format", "nope", "--src", "x", "--out", filepath.Join(t.TempDir(), "o")},
		{"data", "import", "--format", "planetoid", "--src", need(t, "planetoid"), "--name", "pubmed", "--out", filepath.Join(t.TempDir(), "o")},
		{"data", "info", "/no/such/dir"},
		{"data", "generate", "--nodes", "ten", "--out", filepath.Join(t.TempDir(), "o")},
		// Counts of cores and the like: a negative one is refused, not taken as 0.
		{"train", "--threads", "-3", "--epochs", "1"},
		{"train", "--model", "gat", "--heads", "-1", "--epochs", "1"},
		{"partition", "--workers", "-1", "--parts", "4", "--assignment", filepath.Join(t.TempDir(), "a.npy"), "cora"},
		{"serve", "sampler", "--workers", "-2"},
		{"bench", "train", "--quick", "--workers", "-1"},
		// A count that must be positive is refused at 0 too (--heads 0 was
		// one head, --val 0 the default 500); --layers -5 was a panic.
		{"train", "--model", "gat", "--heads", "0"},
		{"train", "--layers", "-5"},
		{"eval", "--load", "m.safetensors", "--batch", "0"},
		{"data", "pack", "cora", "--out", filepath.Join(t.TempDir(), "p"), "--batch", "0"},
		{"data", "import", "--format", "npz", "--src", "x.npz", "--split", "random", "--val", "0", "--out", filepath.Join(t.TempDir(), "o")},
		{"bench", "train", "--quick", "--batch", "-5"},
		{"launch", "--master-port", "70000", "--", "true"},
		// NaN and infinities: --dropout NaN was a panic, the others trained
		// to a NaN loss or generated NaN features.
		{"train", "--dropout", "NaN", "--epochs", "1"},
		{"train", "--model", "gat", "--attn-dropout", "NaN", "--epochs", "1"},
		{"train", "--weight-decay", "Inf", "--epochs", "1"},
		{"train", "--lr", "Inf", "--epochs", "1"},
		{"data", "generate", "--nodes", "100", "--edges", "400", "--signal", "NaN", "--out", filepath.Join(t.TempDir(), "o")},
		{"data", "generate", "--nodes", "100", "--edges", "400", "--homophily", "NaN", "--out", filepath.Join(t.TempDir(), "o")},
		{"data", "generate", "--nodes", "100", "--edges", "400", "--train-frac", "NaN", "--out", filepath.Join(t.TempDir(), "o")},
		// --mode was silently ignored on a dataset that is not partitioned.
		{"eval", "--load", "m.safetensors", "--mode", "sa"},
		// A mistyped subcommand printed its group's help and succeeded.
		{"data", "imprt"}, {"bench", "foo"}, {"serve", "samplr"},
		// Flags the mode does not read were ignored (full-graph GCN trained).
		{"train", "--fanouts", "10,5", "--epochs", "1"}, {"train", "--model", "sage", "--parts", "4", "--epochs", "1"},
		// Momentum is SGD's: Adam ignored it.
		{"train", "--momentum", "0.9", "--epochs", "1"},
	}
	for _, args := range cases {
		_, err := run(t, args...)
		if err == nil || strings.Contains(err.Error(), "\n") {
			t.Errorf("%v: want a one-line error, got %v", args, err)
		}
	}
}

func TestGenerateThenInfo(t *testing.T) {
	out := filepath.Join(t.TempDir(), "syn")
	if _, err := run(t, "data", "generate", "--nodes", "5k", "--edges", "50k", "--feature-dim", "8", "--classes", "4", "--out", out); err != nil {
		t.Fatal(err)
	}
	js, err := run(t, "data", "info", "--json", out)
	if err != nil || !strings.Contains(js, `"num_edges": 50000`) || !strings.Contains(js, `"num_nodes": 5000`) {
		t.Fatalf("%v %s", err, js)
	}
	if s, err := run(t, "data", "verify", out); err != nil || !strings.Contains(s, "ok") {
		t.Fatalf("verify: %v %s", err, s)
	}
}

// TestTrainEvalPredict runs the main job briefly end to end: train with
// metrics, plot and checkpoint, then eval and predict from the checkpoint.
func TestTrainEvalPredict(t *testing.T) {
	t.Setenv("GRAPHMILL_CACHE", t.TempDir())
	dir := t.TempDir()
	ckpt, metrics, plot := filepath.Join(dir, "m.safetensors"), filepath.Join(dir, "run.json"), filepath.Join(dir, "c.png")
	out, err := run(t, "train", "--epochs", "30", "--quiet", "--save", ckpt, "--metrics-out", metrics, "--plot", plot)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "test accuracy") {
		t.Fatalf("no summary in %q", out)
	}
	var m struct {
		TestAcc      float64           `json:"test_acc"`
		BestValAcc   float64           `json:"best_val_acc"`
		EpochSeconds float64           `json:"epoch_seconds"`
		History      []json.RawMessage `json:"history"`
	}
	b, _ := os.ReadFile(metrics)
	if err := json.Unmarshal(b, &m); err != nil || len(m.History) != 30 || m.TestAcc < 0.5 || m.EpochSeconds <= 0 {
		t.Fatalf("metrics %+v (%v)", m, err)
	}
	if png, _ := os.ReadFile(plot); !bytes.HasPrefix(png, []byte("\x89PNG")) {
		t.Fatal("no PNG plot")
	}
	js, err := run(t, "eval", "--load", ckpt, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var ev struct {
		TestAcc float64 `json:"test_acc"`
	}
	if err := json.Unmarshal([]byte(js), &ev); err != nil || ev.TestAcc != m.TestAcc {
		t.Fatalf("eval test acc %v, training reported %v (%v)", ev.TestAcc, m.TestAcc, err)
	}
	pd := filepath.Join(dir, "pred")
	if _, err := run(t, "predict", "--load", ckpt, "--out", pd); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"predictions.npy", "probabilities.npy"} {
		if _, err := os.Stat(filepath.Join(pd, f)); err != nil {
			t.Fatal(err)
		}
	}
	// A corrupt checkpoint is a clear error.
	os.WriteFile(ckpt, []byte("garbage!garbage!"), 0o644)
	if _, err := run(t, "eval", "--load", ckpt); err == nil || !strings.Contains(err.Error(), "m.safetensors") {
		t.Fatalf("corrupt checkpoint: %v", err)
	}
	for _, args := range [][]string{{"train", "--model", "mlp"}, {"train", "--fanouts", "25,0"}, {"train", "--fanouts", "all,x"}, {"train", "--mode", "sampled", "--batch", "0"}} {
		if _, err := run(t, args...); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
	// One fanout parser (sample.ParseFanouts) for train and bench sample:
	// "all" is the full neighbourhood of that hop.
	if _, err := run(t, "train", "--model", "sage", "--fanouts", "all,10", "--epochs", "1", "--quiet"); err != nil {
		t.Errorf("train --fanouts all,10: %v", err)
	}
}

// TestProfileFlags checks that every command takes --cpuprofile,
// --memprofile and --trace and writes pprof files (gzip-compressed
// protobuf) and an execution trace, and that an unwritable path fails
// before any work.
func TestProfileFlags(t *testing.T) {
	dir := t.TempDir()
	cpu, mem, tr := filepath.Join(dir, "cpu.prof"), filepath.Join(dir, "mem.prof"), filepath.Join(dir, "run.trace")
	if _, err := run(t, "train", "--epochs", "2", "--quiet", "--cpuprofile", cpu, "--memprofile", mem, "--trace", tr); err != nil {
		t.Fatal(err)
	}
	stopProfiles() // main does this when the command returns
	if b, err := os.ReadFile(tr); err != nil || !bytes.HasPrefix(b, []byte("go 1.")) || len(b) < 1000 {
		t.Fatalf("--trace wrote %d bytes (%v), not an execution trace", len(b), err)
	}
	traceOut = ""
	for _, p := range []string{cpu, mem} {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
			t.Fatalf("%s is not a pprof (gzip) file: %d bytes", p, len(b))
		}
	}
	if _, err := run(t, "data", "info", "cora", "--cpuprofile", filepath.Join(dir, "no", "such", "cpu.prof")); err == nil || !strings.Contains(err.Error(), "--cpuprofile") {
		t.Fatalf("unwritable --cpuprofile: %v", err)
	}
	stopProfiles()
	cpuProfile, memProfile = "", ""
	if _, err := run(t, "data", "info", "cora", "--trace", filepath.Join(dir, "no", "such", "run.trace")); err == nil || !strings.Contains(err.Error(), "--trace") {
		t.Fatalf("unwritable --trace: %v", err)
	}
	stopProfiles()
	traceOut = ""
}

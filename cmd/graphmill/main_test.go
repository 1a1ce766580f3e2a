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
)

// run executes the CLI in-process with args and returns stdout and the error.
func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	rootCmd.SetOut(&out)
	rootCmd.SetErr(&out)
	rootCmd.SetArgs(args)
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

const sharedData = "../../../shared/data"

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

func TestBadInputGivesOneLineError(t *testing.T) {
	cases := [][]string{
		{"data", "import", "--format", "nope", "--src", "x", "--out", filepath.Join(t.TempDir(), "o")},
		{"data", "import", "--format", "planetoid", "--src", need(t, "planetoid"), "--name", "pubmed", "--out", filepath.Join(t.TempDir(), "o")},
		{"data", "info", "/no/such/dir"},
		{"data", "generate", "--nodes", "ten", "--out", filepath.Join(t.TempDir(), "o")},
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

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/graphmill/graphmill/npy"
)

// generate writes a small synthetic dataset and returns its directory.
func generate(t *testing.T, out string) string {
	t.Helper()
	if _, err := run(t, "data", "generate", "--nodes", "2k", "--edges", "20k", "--feature-dim", "8", "--classes", "4", "--out", out, "--quiet"); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestCorruptEdgeIDsGiveErrorsNotPanics: an indices.npy with an id outside
// [0, num_nodes) (5000 with 2000 nodes, or -3) is a one-line error naming
// the array in every command; before, most of them panicked.
func TestCorruptEdgeIDsGiveErrorsNotPanics(t *testing.T) {
	t.Setenv("GRAPHMILL_CACHE", t.TempDir())
	dir := t.TempDir()
	ckpt := filepath.Join(dir, "m.safetensors")
	if _, err := run(t, "train", "--epochs", "2", "--quiet", "--save", ckpt); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []int32{5000, -3} {
		ds := generate(t, filepath.Join(t.TempDir(), "ds"))
		p := filepath.Join(ds, "indices.npy")
		idx, _, err := npy.ReadFile[int32](p)
		if err != nil {
			t.Fatal(err)
		}
		idx[777] = bad
		if err := npy.WriteFile(p, idx); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{
			{"data", "info", ds}, {"data", "verify", ds},
			{"train", "--dataset", ds, "--epochs", "1", "--quiet"},
			{"train", "--dataset", ds, "--epochs", "1", "--quiet", "--mode", "sampled"},
			{"train", "--dataset", ds, "--epochs", "1", "--quiet", "--mode", "gas"},
			{"eval", "--load", ckpt, "--dataset", ds},
			{"predict", "--load", ckpt, "--dataset", ds, "--out", filepath.Join(t.TempDir(), "p")},
			{"partition", "--parts", "2", ds, "--out", filepath.Join(t.TempDir(), "parts")},
		} {
			_, err := run(t, args...)
			if err == nil || !strings.Contains(err.Error(), "indices[") || strings.Contains(err.Error(), "\n") {
				t.Errorf("%v with id %d: got %v", args, bad, err)
			}
		}
	}
}

// TestOverwriteReplacesOnlyGraphmillOutputs: --overwrite replaces a dataset
// (or a partitioned dataset) but refuses a folder of other files or a
// plain file, naming what is there and leaving it untouched.
func TestOverwriteReplacesOnlyGraphmillOutputs(t *testing.T) {
	root := t.TempDir()
	mine := filepath.Join(root, "mine")
	os.Mkdir(mine, 0o755)
	os.WriteFile(filepath.Join(mine, "notes.txt"), []byte("keep"), 0o644)
	file := filepath.Join(root, "file.txt")
	os.WriteFile(file, []byte("keep"), 0o644)
	ds := generate(t, filepath.Join(root, "ds"))
	t.Setenv("GRAPHMILL_CACHE", t.TempDir())
	for _, args := range [][]string{
		{"data", "generate", "--nodes", "1k", "--edges", "10k", "--overwrite", "--out", mine},
		{"data", "generate", "--nodes", "1k", "--edges", "10k", "--overwrite", "--out", file},
		{"data", "import", "--format", "metis", "--src", "/no/such/input.graph", "--overwrite", "--out", mine},
		{"data", "import", "--format", "metis", "--src", "/no/such/input.graph", "--overwrite", "--out", file},
		{"partition", "--parts", "2", "cora", "--overwrite", "--out", mine},
		{"partition", "--parts", "2", "cora", "--overwrite", "--out", file},
		{"partition", "--parts", "2", "cora", "--overwrite", "--out", ds}, // a dataset is not a partitioned dataset
	} {
		_, err := run(t, args...)
		if err == nil || !(strings.Contains(err.Error(), "notes.txt") || strings.Contains(err.Error(), "is a file") || strings.Contains(err.Error(), "meta.json")) {
			t.Errorf("%v: got %v", args, err)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(mine, "notes.txt")); string(b) != "keep" {
		t.Fatal("the user's folder was touched")
	}
	if b, _ := os.ReadFile(file); string(b) != "keep" {
		t.Fatal("the user's file was touched")
	}
	// Replacing graphmill's own outputs still works, and leaves no
	// temporaries or lock files beside them.
	if _, err := run(t, "data", "generate", "--nodes", "1k", "--edges", "10k", "--overwrite", "--out", ds, "--quiet"); err != nil {
		t.Fatal(err)
	}
	parts := filepath.Join(root, "parts")
	for i := 0; i < 2; i++ {
		if _, err := run(t, "partition", "--parts", "2", ds, "--overwrite", "--out", parts); err != nil {
			t.Fatal(err)
		}
	}
	ents, _ := os.ReadDir(root)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if strings.Join(names, ",") != "ds,file.txt,mine,parts" {
		t.Fatalf("entries: %v", names)
	}
	// data import checks --out before reading the input: the missing input
	// is not even looked at.
	_, err := run(t, "data", "import", "--format", "metis", "--src", "/no/such/input.graph", "--out", ds)
	if err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("import onto an existing dataset: %v", err)
	}
}

// TestOutputsCheckedBeforeTraining: bad --save, --metrics-out and --plot
// fail at once, not after training.
func TestOutputsCheckedBeforeTraining(t *testing.T) {
	t.Setenv("GRAPHMILL_CACHE", t.TempDir())
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--save", "/nonexistent/dir/x.safetensors"}, "--save /nonexistent/dir/x.safetensors: folder /nonexistent/dir does not exist"},
		{[]string{"--metrics-out", filepath.Join(dir, "missing", "run.json")}, "--metrics-out"},
		{[]string{"--plot", filepath.Join(dir, "out.gif")}, "unsupported extension \"gif\""},
		{[]string{"--save", dir}, "is a directory"},
	} {
		start := time.Now()
		_, err := run(t, append([]string{"train", "--epochs", "200", "--quiet"}, c.args...)...)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), ".tmp-") {
			t.Errorf("%v: got %v, want %q", c.args, err, c.want)
		}
		if el := time.Since(start); el > time.Second {
			t.Errorf("%v: refused after %v", c.args, el)
		}
	}
}

// TestPredictWritesOneAtomicFolder: predict's outputs appear together with
// a manifest, replace an earlier predict output, and never a foreign folder.
func TestPredictWritesOneAtomicFolder(t *testing.T) {
	t.Setenv("GRAPHMILL_CACHE", t.TempDir())
	dir := t.TempDir()
	ckpt := filepath.Join(dir, "m.safetensors")
	if _, err := run(t, "train", "--epochs", "3", "--quiet", "--save", ckpt); err != nil {
		t.Fatal(err)
	}
	pd := filepath.Join(dir, "pred")
	for i := 0; i < 2; i++ {
		if _, err := run(t, "predict", "--load", ckpt, "--out", pd); err != nil {
			t.Fatal(err)
		}
	}
	ents, _ := os.ReadDir(pd)
	if len(ents) != 3 {
		t.Fatalf("predict output holds %d entries, want predictions.npy, probabilities.npy, predictions.json", len(ents))
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 2 {
		t.Fatalf("leftovers beside the output: %v", ents)
	}
	foreign := filepath.Join(dir, "foreign")
	os.Mkdir(foreign, 0o755)
	os.WriteFile(filepath.Join(foreign, "report.pdf"), []byte("x"), 0o644)
	if _, err := run(t, "predict", "--load", ckpt, "--out", foreign); err == nil || !strings.Contains(err.Error(), "report.pdf") {
		t.Fatalf("predict into a foreign folder: %v", err)
	}
}

// TestPartitionedDatasetIsDescribed: data info shows the book of a
// partitioned dataset; train says what it is and what to give instead.
func TestPartitionedDatasetIsDescribed(t *testing.T) {
	t.Setenv("GRAPHMILL_CACHE", t.TempDir())
	parts := filepath.Join(t.TempDir(), "parts")
	if _, err := run(t, "partition", "--parts", "2", "cora", "--out", parts); err != nil {
		t.Fatal(err)
	}
	out, err := run(t, "data", "info", parts)
	if err != nil || !strings.Contains(out, "partitioned dataset") || !strings.Contains(out, "part 1") {
		t.Fatalf("data info: %v\n%s", err, out)
	}
	_, err = run(t, "train", "--dataset", parts, "--quiet")
	if err == nil || !strings.Contains(err.Error(), "is a partitioned dataset") || !strings.Contains(err.Error(), "part0") {
		t.Fatalf("train: %v", err)
	}
}

// TestVersionAndHelp: --version names the build; no help shows two
// defaults for one flag; APPNP is in the root and train help.
func TestVersionAndHelp(t *testing.T) {
	if v := versionString(); !strings.Contains(v, "kernel") || !strings.Contains(v, "commit") {
		t.Fatalf("version %q", v)
	}
	var walk func(args []string)
	walk = func(args []string) {
		out, err := run(t, append(args, "--help")...)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(out, "\n") {
			if strings.Count(line, "(default") > 1 {
				t.Errorf("graphmill %v --help: %q", args, line)
			}
		}
		if len(args) <= 1 && (len(args) == 0 || args[0] == "train") && !strings.Contains(strings.ToUpper(out), "APPNP") {
			t.Errorf("graphmill %v --help does not mention APPNP", args)
		}
	}
	walk(nil)
	for _, c := range rootCmd.Commands() {
		walk([]string{c.Name()})
		for _, s := range c.Commands() {
			walk([]string{c.Name(), s.Name()})
		}
	}
}

package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/graphmill/graphmill/npy"
	"github.com/graphmill/graphmill/safetensors"
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
	npyFile := filepath.Join(dir, "features.npy")
	if err := os.WriteFile(npyFile, []byte("\x93NUMPY\x01\x00v\x00{'descr': '<f4'}"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--save", "/nonexistent/dir/x.safetensors"}, "--save /nonexistent/dir/x.safetensors: folder /nonexistent/dir does not exist"},
		{[]string{"--metrics-out", filepath.Join(dir, "missing", "run.json")}, "--metrics-out"},
		{[]string{"--plot", filepath.Join(dir, "out.gif")}, "unsupported extension \"gif\""},
		{[]string{"--save", dir}, "is a directory"},
		// One file for two outputs; an existing file of another kind (a
		// dataset's array) is not replaced.
		{[]string{"--save", filepath.Join(dir, "same"), "--metrics-out", filepath.Join(dir, "same")}, "--save and --metrics-out name the same file"},
		{[]string{"--save", npyFile}, "exists and is not a safetensors checkpoint"},
		{[]string{"--metrics-out", npyFile}, "exists and is not a JSON file"},
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

// TestDivergedRunKeepsItsBestModel: a loss that turns NaN after an
// evaluation stops the run with an error, and the best model evaluated
// and the metrics (NaN as null) are still written; the checkpoint of a
// run never evaluated records no accuracies.
func TestDivergedRunKeepsItsBestModel(t *testing.T) {
	t.Setenv("GRAPHMILL_CACHE", t.TempDir())
	dir := t.TempDir()
	ckpt, metrics := filepath.Join(dir, "m.safetensors"), filepath.Join(dir, "m.json")
	out, err := run(t, "train", "--lr", "1e19", "--weight-decay", "0", "--epochs", "60", "--quiet", "--save", ckpt, "--metrics-out", metrics)
	if err == nil || !strings.Contains(err.Error(), "loss is NaN") || !strings.Contains(out, "the loss diverged after") {
		t.Fatalf("diverged run: %v\n%s", err, out)
	}
	var m struct {
		BestValAcc float64 `json:"best_val_acc"`
		History    []struct {
			ValLoss *float64 `json:"val_loss"`
		} `json:"history"`
	}
	b, rerr := os.ReadFile(metrics)
	if rerr != nil || json.Unmarshal(b, &m) != nil || len(m.History) == 0 || m.BestValAcc <= 0 {
		t.Fatalf("metrics of the diverged run: %v %s", rerr, b)
	}
	js, err := run(t, "eval", "--load", ckpt, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var ev struct {
		ValAcc float64 `json:"val_acc"`
	}
	if err := json.Unmarshal([]byte(js), &ev); err != nil || ev.ValAcc != m.BestValAcc {
		t.Fatalf("saved model's val acc %v, the run's best %v (%v)", ev.ValAcc, m.BestValAcc, err)
	}
	if _, err := run(t, "train", "--epochs", "2", "--quiet", "--no-eval", "--save", ckpt); err != nil {
		t.Fatal(err)
	}
	f, err := safetensors.Read(ckpt)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := f.Metadata["test_acc"]; ok {
		t.Errorf("a model never evaluated records test_acc %s", f.Metadata["test_acc"])
	}
}

// TestInferenceWithoutLabelsOrSplits: predict runs on a dataset without
// labels (the usual case for predictions), with the same predictions as on
// the labelled copy; eval refuses it, and reports a split without nodes
// as n/a rather than 0 %.
func TestInferenceWithoutLabelsOrSplits(t *testing.T) {
	t.Setenv("GRAPHMILL_CACHE", t.TempDir())
	dir := t.TempDir()
	syn := filepath.Join(dir, "syn")
	if _, err := run(t, "data", "generate", "--nodes", "600", "--edges", "3000", "--feature-dim", "8", "--classes", "3", "--out", syn); err != nil {
		t.Fatal(err)
	}
	ckpt := filepath.Join(dir, "m.safetensors")
	if _, err := run(t, "train", "--dataset", syn, "--epochs", "3", "--quiet", "--save", ckpt); err != nil {
		t.Fatal(err)
	}
	strip := func(name string, arrays []string, splits []string, classes bool) string {
		d := filepath.Join(dir, name)
		if err := os.CopyFS(d, os.DirFS(syn)); err != nil {
			t.Fatal(err)
		}
		var meta map[string]any
		b, _ := os.ReadFile(filepath.Join(d, "meta.json"))
		if err := json.Unmarshal(b, &meta); err != nil {
			t.Fatal(err)
		}
		for _, a := range arrays {
			arr := meta["arrays"].(map[string]any)
			os.Remove(filepath.Join(d, arr[a].(map[string]any)["file"].(string)))
			delete(arr, a)
		}
		for _, s := range splits {
			delete(meta["splits"].(map[string]any), s)
		}
		if classes {
			meta["num_classes"] = 0
		}
		b, _ = json.Marshal(meta)
		os.WriteFile(filepath.Join(d, "meta.json"), b, 0o644)
		return d
	}
	nolab := strip("nolab", []string{"labels", "train_idx", "val_idx", "test_idx"}, []string{"train", "val", "test"}, true)
	notest := strip("notest", []string{"test_idx"}, []string{"test"}, false)
	for _, ds := range []string{syn, nolab} {
		if _, err := run(t, "predict", "--load", ckpt, "--dataset", ds, "--out", ds+"-pred"); err != nil {
			t.Fatalf("predict on %s: %v", ds, err)
		}
	}
	for _, f := range []string{"predictions.npy", "probabilities.npy"} {
		a, _ := os.ReadFile(filepath.Join(syn+"-pred", f))
		b, _ := os.ReadFile(filepath.Join(nolab+"-pred", f))
		if len(a) == 0 || !bytes.Equal(a, b) {
			t.Errorf("%s differs between the labelled and unlabelled copies", f)
		}
	}
	if _, err := run(t, "eval", "--load", ckpt, "--dataset", nolab); err == nil || !strings.Contains(err.Error(), "has no labels") {
		t.Errorf("eval without labels: %v", err)
	}
	out, err := run(t, "eval", "--load", ckpt, "--dataset", notest)
	if err != nil || !strings.Contains(out, "test accuracy n/a") {
		t.Errorf("eval without a test split: %v %q", err, out)
	}
	js, err := run(t, "eval", "--load", ckpt, "--dataset", notest, "--json")
	if err != nil || !strings.Contains(js, `"test_acc": null`) {
		t.Errorf("eval --json without a test split: %v %q", err, js)
	}
}

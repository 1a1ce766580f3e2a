package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/graphmill/graphmill/dataset"
	"github.com/graphmill/graphmill/npy"
)

// TestPackIsInvisible packs Cora and checks that what goes in and comes out
// is by original id: sampled training gives bitwise the original's losses
// and accuracy, a model trained on the packed copy predicts, for every
// original node, what it predicts on Cora itself (full-graph GCN does not
// depend on the numbering), partition --assignment gives every original
// node its part, and a partitioned dataset of a packed one is refused.
func TestPackIsInvisible(t *testing.T) {
	t.Setenv("GRAPHMILL_CACHE", t.TempDir())
	dir := t.TempDir()
	packed := filepath.Join(dir, "packed")
	out, err := run(t, "data", "pack", "cora", "--out", packed, "--quiet")
	if err != nil || !strings.Contains(out, "sample order") {
		t.Fatalf("pack: %v\n%s", err, out)
	}
	if out, err = run(t, "data", "info", packed); err != nil || !strings.Contains(out, "packed      nodes renumbered by sample") {
		t.Fatalf("info: %v\n%s", err, out)
	}
	d, err := dataset.Open(packed)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if d.OrigIDs == nil || slices.IsSorted(d.OrigIDs) {
		t.Fatal("the packed copy keeps the original order")
	}
	ckpt := filepath.Join(dir, "m.safetensors")
	if _, err := run(t, "train", "--dataset", packed, "--model", "gcn", "--epochs", "20", "--quiet", "--save", ckpt); err != nil {
		t.Fatal(err)
	}
	preds := map[string][]int32{}
	for _, ds := range []string{packed, "cora"} {
		pd := filepath.Join(dir, "pred-"+filepath.Base(ds))
		if _, err := run(t, "predict", "--load", ckpt, "--dataset", ds, "--out", pd); err != nil {
			t.Fatal(err)
		}
		p, _, err := npy.ReadFile[int32](filepath.Join(pd, "predictions.npy"))
		if err != nil {
			t.Fatal(err)
		}
		preds[ds] = p
	}
	if !slices.Equal(preds[packed], preds["cora"]) {
		t.Error("predictions on the packed copy are not those of the original nodes")
	}
	// Sampled training draws by original id (neighbours and dropout
	// masks): the packed copy trains bitwise as the original.
	var runs [2]struct {
		TestAcc float64 `json:"test_acc"`
		History []struct {
			Loss float64 `json:"loss"`
		} `json:"history"`
	}
	for i, ds := range []string{packed, "cora"} {
		mf := filepath.Join(dir, filepath.Base(ds)+"-sage.json")
		if _, err := run(t, "train", "--dataset", ds, "--model", "sage", "--epochs", "3", "--quiet", "--metrics-out", mf); err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(mf)
		if err := json.Unmarshal(b, &runs[i]); err != nil || len(runs[i].History) != 3 {
			t.Fatalf("metrics %s: %v", mf, err)
		}
	}
	if !reflect.DeepEqual(runs[0], runs[1]) {
		t.Errorf("sampled training on the packed copy %+v, on the original %+v", runs[0], runs[1])
	}
	var parts [2][]int32
	for i, ds := range []string{packed, "cora"} {
		f := filepath.Join(dir, filepath.Base(ds)+"-parts.npy")
		if _, err := run(t, "partition", "--parts", "4", "--method", "random", "--seed", "3", "--assignment", f, ds); err != nil {
			t.Fatal(err)
		}
		if parts[i], _, err = npy.ReadFile[int32](f); err != nil {
			t.Fatal(err)
		}
	}
	// Random parts are drawn per node id: node v of the packed copy got the
	// part of id v; the file gives it under its original id.
	for v, o := range d.OrigIDs {
		if parts[0][o] != parts[1][v] {
			t.Fatalf("original node %d (packed %d): part %d in the file, want %d", o, v, parts[0][o], parts[1][v])
		}
	}
	if _, err := run(t, "partition", "--parts", "2", "--out", filepath.Join(dir, "p"), packed); err == nil || !strings.Contains(err.Error(), "packed") {
		t.Errorf("partitioning a packed dataset: %v", err)
	}
	if _, err := run(t, "data", "pack", "cora", "--out", filepath.Join(dir, "x"), "--method", "bogus"); err == nil || !strings.Contains(err.Error(), "--method") {
		t.Errorf("--method bogus: %v", err)
	}
}

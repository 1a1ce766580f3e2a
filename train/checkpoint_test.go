package train

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/graphmill/graphmill/nn"
	"github.com/graphmill/graphmill/safetensors"
)

// TestSaveRecordsFeatureHandling: a model trained on raw features (not
// the kind's default) and saved with Save reloads with Load scoring what
// it scored in training; the same model saved with nn.Model.Save alone
// (no feature handling recorded) is refused rather than read with the
// kind's default (which cost 11 points on Cora); a checkpoint from
// elsewhere without graphmill's marker still loads, with the guess
// flagged.
func TestSaveRecordsFeatureHandling(t *testing.T) {
	d := cora(t)
	ctx := context.Background()
	cfg := Defaults(nn.SAGE)
	cfg.Epochs, cfg.NormalizeFeatures = 5, false // the kind's default is true
	res := run(t, d, cfg)
	if res.Config.NormalizeFeatures || res.Config.Model.Kind != nn.SAGE {
		t.Fatalf("Result.Config %+v: want the run's config", res.Config)
	}
	dir := t.TempDir()

	saved := filepath.Join(dir, "saved.safetensors")
	if err := Save(saved, res, map[string]string{"note": "mine", MetaNormalize: "true"}); err != nil {
		t.Fatal(err)
	}
	r, m, err := Load(d, saved, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.Config().NormalizeFeatures {
		t.Error("Load normalises the features of a model trained on raw ones")
	}
	ev, err := r.Evaluate(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	if ev.ValAcc != res.Summary.BestValAcc || ev.TestAcc != res.Summary.TestAcc {
		t.Errorf("reloaded model scores %.4f/%.4f, trained %.4f/%.4f", ev.ValAcc, ev.TestAcc, res.Summary.BestValAcc, res.Summary.TestAcc)
	}
	c, err := ReadCheckpoint(saved)
	if err != nil {
		t.Fatal(err)
	}
	if md := c.File.Metadata; md["note"] != "mine" || md[MetaDataset] != "cora" || md[MetaTestAcc] == "" || c.NormalizeGuessed {
		t.Errorf("metadata %v (guessed %v): want the caller's key, the dataset and the accuracies, normalisation recorded", md, c.NormalizeGuessed)
	}

	bare := filepath.Join(dir, "bare.safetensors")
	if err := res.Model.Save(bare, nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Load(d, bare, 0, 0); err == nil || !strings.Contains(err.Error(), "records no normalize_features") || !strings.Contains(err.Error(), "train.Save") {
		t.Errorf("Load of a Model.Save checkpoint without its feature handling: %v, want a refusal naming train.Save", err)
	}

	// Written elsewhere (PyTorch) with graphmill's config alone: loads
	// with the kind's default, flagged as a guess.
	f, err := safetensors.Read(bare)
	if err != nil {
		t.Fatal(err)
	}
	var ts []safetensors.Tensor
	for _, name := range f.Order {
		ts = append(ts, f.Tensors[name])
	}
	foreign := filepath.Join(dir, "foreign.safetensors")
	if err := safetensors.Write(foreign, ts, map[string]string{"graphmill_config": f.Metadata["graphmill_config"]}); err != nil {
		t.Fatal(err)
	}
	c, err = ReadCheckpoint(foreign)
	if err != nil {
		t.Fatal(err)
	}
	if !c.NormalizeGuessed || c.NormalizeFeatures != Defaults(nn.SAGE).NormalizeFeatures {
		t.Errorf("foreign checkpoint: guessed %v normalise %v, want the kind's default, flagged", c.NormalizeGuessed, c.NormalizeFeatures)
	}
	r2, _, err := Load(d, foreign, 0, 0)
	if err != nil {
		t.Fatalf("a checkpoint without graphmill's marker must still load: %v", err)
	}
	r2.Close()

	if err := Save(filepath.Join(dir, "x.safetensors"), &Result{Model: res.Model}, nil); err == nil || !strings.Contains(err.Error(), "Result.Config") {
		t.Errorf("Save of a result without its config: %v", err)
	}
	if err := Save(filepath.Join(dir, "x.safetensors"), nil, nil); err == nil {
		t.Error("Save of a nil result accepted")
	}
}

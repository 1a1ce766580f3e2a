package nn_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/graphmill/graphmill/dataset/builtin"
	"github.com/graphmill/graphmill/nn"
	"github.com/graphmill/graphmill/npy"
	"github.com/graphmill/graphmill/train"
)

// TestPyTorchLoadsCheckpoints saves each model kind, loads the checkpoint
// into PyTorch modules with PyG's names and layouts (load_state_dict with
// strict=True: PyG's buffers too, such as GINConv's eps) and checks that
// PyTorch computes the same logits on Cora. Then PyTorch saves the
// modules' state_dict (BatchNorm's I64 num_batches_tracked included) and
// graphmill loads it back and predicts exactly as before.
func TestPyTorchLoadsCheckpoints(t *testing.T) {
	py := "/usr/bin/python3"
	if exec.Command(py, "-c", "import torch, numpy").Run() != nil {
		t.Skip("PyTorch is not installed for /usr/bin/python3 (apt-get install python3-torch)")
	}
	t.Setenv("GRAPHMILL_CACHE", t.TempDir())
	ctx := context.Background()
	dir, err := builtin.Resolve(ctx, "cora")
	if err != nil {
		t.Fatal(err)
	}
	d, err := builtin.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	for _, kind := range nn.Kinds() {
		if strings.HasPrefix(string(kind), "test-") {
			continue // registered by the tests, with no PyTorch twin
		}
		t.Run(string(kind), func(t *testing.T) {
			cfg := train.Defaults(kind)
			cfg.Epochs = 2
			r, err := train.NewRunner(d, cfg, train.Hooks{})
			if err != nil {
				t.Fatal(err)
			}
			res, err := r.Run(ctx)
			if err != nil {
				t.Fatal(err)
			}
			tmp := t.TempDir()
			ckpt := filepath.Join(tmp, "m.safetensors")
			if err := res.Model.Save(ckpt, map[string]string{"normalize_features": strconv.FormatBool(cfg.NormalizeFeatures)}); err != nil {
				t.Fatal(err)
			}
			logits, err := r.Predict(ctx, res.Model)
			if err != nil {
				t.Fatal(err)
			}
			lp := filepath.Join(tmp, "logits.npy")
			if err := npy.WriteFile(lp, logits.Data, logits.Rows, logits.Cols); err != nil {
				t.Fatal(err)
			}
			back := filepath.Join(tmp, "torch.safetensors")
			out, err := exec.Command(py, "testdata/torch_check.py", ckpt, dir, lp, back).CombinedOutput()
			if err != nil {
				t.Fatalf("PyTorch check failed: %v\n%s", err, out)
			}
			t.Logf("%s", out)

			r2, m2, err := train.Load(d, back, 0, 0)
			if err != nil {
				t.Fatalf("loading PyTorch's state_dict: %v", err)
			}
			want, err := r2.Predict(ctx, res.Model)
			if err != nil {
				t.Fatal(err)
			}
			got, err := r2.Predict(ctx, m2)
			if err != nil {
				t.Fatal(err)
			}
			for i := range want.Data {
				if got.Data[i] != want.Data[i] {
					t.Fatalf("logit %d: %v from PyTorch's state_dict, %v from graphmill's", i, got.Data[i], want.Data[i])
				}
			}
		})
	}
}

package train

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/graphmill/graphmill/dataset"
	"github.com/graphmill/graphmill/importer"
	"github.com/graphmill/graphmill/internal/shareddata"
	"github.com/graphmill/graphmill/nn"
)

// planetoidDir honours $GRAPHMILL_DATA (see internal/shareddata).
var planetoidDir = shareddata.Path("planetoid")

// quality skips the published-accuracy checks unless GRAPHMILL_QUALITY=1:
// each trains 5 seeds to convergence (minutes in all), so they run in CI's
// quality step, not in every 'go test ./...'.
func quality(t *testing.T) {
	t.Helper()
	if os.Getenv("GRAPHMILL_QUALITY") != "1" {
		t.Skip("accuracy bars run with GRAPHMILL_QUALITY=1 (CI runs them)")
	}
}

// planetoid imports a Planetoid dataset from the shared data into a
// temporary native dataset, or skips if the files are absent.
func planetoid(t testing.TB, name string) *dataset.Dataset {
	t.Helper()
	if _, err := os.Stat(filepath.Join(planetoidDir, "ind."+name+".graph")); err != nil {
		t.Skipf("shared Planetoid %s not present: %v", name, err)
	}
	raw, err := importer.Planetoid(planetoidDir, name)
	if err != nil {
		t.Fatal(err)
	}
	return writeDataset(t, name, raw)
}

// writeDataset writes raw as a native dataset in a temporary directory
// and opens it (closed at the test's end).
func writeDataset(t testing.TB, name string, raw *dataset.Raw) *dataset.Dataset {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	if err := dataset.Write(context.Background(), dir, raw, dataset.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	d, err := dataset.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// fullGCN caches the mean test accuracy of full-graph GCN per dataset, which
// both the GCN bar and the GAS comparison need.
var fullGCN = map[string]float64{}

func fullGCNAcc(t *testing.T, name string, d *dataset.Dataset) float64 {
	if acc, ok := fullGCN[name]; ok {
		return acc
	}
	acc := meanTestAcc(t, d, Defaults(nn.GCN))
	fullGCN[name] = acc
	return acc
}

// meanTestAcc trains with seeds 0..4 and returns the mean test accuracy.
func meanTestAcc(t *testing.T, d *dataset.Dataset, cfg Config) float64 {
	t.Helper()
	return meanTestAccN(t, d, cfg, 5)
}

// meanTestAccN trains with seeds 0..n-1 and returns the mean test
// accuracy.
func meanTestAccN(t *testing.T, d *dataset.Dataset, cfg Config, n int) float64 {
	t.Helper()
	sum := 0.0
	for seed := uint64(0); seed < uint64(n); seed++ {
		cfg.Seed, cfg.Model.Seed = seed, seed
		r, err := NewRunner(d, cfg, Hooks{}, withTestParts)
		if err != nil {
			t.Fatal(err)
		}
		res, err := r.Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("seed %d: best val %.3f test %.3f (epoch %d, %.1f ms/epoch)", seed, res.Summary.BestValAcc, res.Summary.TestAcc, res.Summary.BestEpoch, 1000*res.Summary.EpochSeconds)
		sum += res.Summary.TestAcc
	}
	return sum / float64(n)
}

// TestGCNPlanetoid checks the published GCN setting (2 layers, 16 hidden,
// dropout 0.5, lr 0.01, weight decay 5e-4, 200 epochs) against Kipf &
// Welling's published accuracies: Cora 81.5, CiteSeer 70.3; our bar is one
// point below.
func TestGCNPlanetoid(t *testing.T) {
	quality(t)
	for _, c := range []struct {
		name string
		bar  float64
	}{{"cora", 0.805}, {"citeseer", 0.695}} {
		t.Run(c.name, func(t *testing.T) {
			d := planetoid(t, c.name)
			acc := fullGCNAcc(t, c.name, d)
			t.Logf("GCN %s: mean test accuracy %.4f over 5 seeds (bar %.3f)", c.name, acc, c.bar)
			if acc < c.bar {
				t.Errorf("GCN %s: mean test accuracy %.4f is below %.3f", c.name, acc, c.bar)
			}
		})
	}
}

// TestGATCora checks GAT with the published settings (8 heads x 8 hidden,
// ELU, dropout 0.6 on inputs and attention, lr 0.005, weight decay 5e-4,
// one averaged output head) against Veličković et al.'s 83.0 on Cora; our
// bar is one point below.
func TestGATCora(t *testing.T) {
	quality(t)
	d := planetoid(t, "cora")
	acc := meanTestAcc(t, d, Defaults(nn.GAT))
	t.Logf("GAT cora: mean test accuracy %.4f over 5 seeds (bar 0.820)", acc)
	if acc < 0.820 {
		t.Errorf("GAT cora: mean test accuracy %.4f is below 0.820", acc)
	}
}

// TestSAGESampledCora checks minibatch GraphSAGE (fanouts [25,10]) on Cora
// against the bar of 79.0 (Hamilton et al. did not report Planetoid Cora;
// PyG's GraphSAGE reaches about 80 on it).
func TestSAGESampledCora(t *testing.T) {
	quality(t)
	d := planetoid(t, "cora")
	cfg := Defaults(nn.SAGE)
	if cfg.Mode != Sampled || len(cfg.Fanouts) != 2 || cfg.Fanouts[0] != 25 || cfg.Fanouts[1] != 10 {
		t.Fatalf("SAGE defaults are not sampled with fanouts [25,10]: %+v", cfg)
	}
	acc := meanTestAcc(t, d, cfg)
	t.Logf("SAGE cora (sampled): mean test accuracy %.4f over 5 seeds (bar 0.790)", acc)
	if acc < 0.790 {
		t.Errorf("SAGE cora: mean test accuracy %.4f is below 0.790", acc)
	}
}

// TestGASMatchesFullGCN checks GNNAutoScale training of GCN (40 parts, 10
// per batch, halo rows from histories) against our full-graph GCN: the
// mean test accuracy over 5 seeds must be within one point, as the issue
// asks (GAS reports no loss of accuracy against full-batch training).
func TestGASMatchesFullGCN(t *testing.T) {
	quality(t)
	for _, name := range []string{"cora", "citeseer"} {
		t.Run(name, func(t *testing.T) {
			d := planetoid(t, name)
			full := fullGCNAcc(t, name, d)
			cfg := Defaults(nn.GCN)
			cfg.Mode = GAS
			gas := meanTestAcc(t, d, cfg)
			t.Logf("GCN %s: full-graph %.4f, GAS %.4f", name, full, gas)
			if gas < full-0.01 {
				t.Errorf("GCN %s: GAS mean test accuracy %.4f is more than 1 point below full-graph %.4f", name, gas, full)
			}
		})
	}
}

// TestGCNIICora checks GCNII's published setting (64 layers of 64, α 0.1,
// λ 0.5, dropout 0.6, weight decay 0.01 on the convolutions and 5e-4 on
// the linear layers, patience 100) against Chen et al.'s Cora 85.5, in
// full-graph mode and under GNNAutoScale; our bar is one point below.
// About 15 minutes a mode on two cores: not in CI's quality step.
func TestGCNIICora(t *testing.T) {
	quality(t)
	d := planetoid(t, "cora")
	for _, mode := range []Mode{Full, GAS} {
		cfg := Defaults(nn.GCNII)
		cfg.Mode = mode
		acc := meanTestAcc(t, d, cfg)
		t.Logf("GCNII %s on Cora: mean test accuracy %.1f %% (published 85.5)", mode, 100*acc)
		if acc < 0.845 {
			t.Errorf("GCNII %s on Cora: mean test accuracy %.1f %% < 84.5", mode, 100*acc)
		}
	}
}

// TestGINPNAMatchPyTorch trains GIN and PNA with their defaults on Cora,
// 20 seeds each (a seed's test accuracy varies by about 2 points: at 10
// seeds PNA's means were still 1.3 points apart, at 20 0.5), in
// graphmill and in plain PyTorch (nn/testdata's modules: the same layers,
// initialisation, settings and model selection): the mean test
// accuracies are within one point. About an hour: not in CI's quality
// step.
func TestGINPNAMatchPyTorch(t *testing.T) {
	quality(t)
	py := "/usr/bin/python3"
	if exec.Command(py, "-c", "import torch").Run() != nil {
		t.Skip("PyTorch is not installed for /usr/bin/python3")
	}
	d := planetoid(t, "cora")
	for _, kind := range []nn.Kind{nn.GIN, nn.PNA} {
		cfg := Defaults(kind)
		const seeds = 20
		ours := meanTestAccN(t, d, cfg, seeds)
		spec, _ := json.Marshal(map[string]any{"kind": kind, "hidden": cfg.Model.Hidden, "layers": cfg.Model.Layers, "dropout": cfg.Model.Dropout,
			"epochs": cfg.Epochs, "lr": cfg.Optimizer.LR, "weight_decay": cfg.Optimizer.WeightDecay, "normalize": cfg.NormalizeFeatures})
		args := []string{"../nn/testdata/torch_train.py", d.Dir, string(spec)}
		for s := range seeds {
			args = append(args, strconv.Itoa(s))
		}
		out, err := exec.Command(py, args...).Output()
		if err != nil {
			t.Fatalf("%s in PyTorch: %v", kind, err)
		}
		var res struct {
			TestAcc []float64 `json:"test_acc"`
		}
		if err := json.Unmarshal(out, &res); err != nil || len(res.TestAcc) != seeds {
			t.Fatalf("%s in PyTorch: %v (%s)", kind, err, out)
		}
		theirs := 0.0
		for _, a := range res.TestAcc {
			theirs += a / seeds
		}
		t.Logf("%s on Cora: graphmill %.1f %%, PyTorch %.1f %% (%v)", kind, 100*ours, 100*theirs, res.TestAcc)
		if math.Abs(ours-theirs) > 0.01 {
			t.Errorf("%s on Cora: graphmill %.1f %%, PyTorch %.1f %%: more than a point apart", kind, 100*ours, 100*theirs)
		}
	}
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/graphmill/graphmill/dist/launch"
	"github.com/graphmill/graphmill/internal/units"
	"github.com/graphmill/graphmill/train"
)

// TestLaunchSAR trains GCN on Cora in 4 parts under 2 ranks in sar mode
// (2 parts per rank) and checks the run against single-process full-graph
// training, then evaluates and predicts with the checkpoint on the ranks.
func TestLaunchSAR(t *testing.T) {
	if testing.Short() {
		t.Skip("trains 2 ranks")
	}
	t.Setenv("GRAPHMILL_TEST_AS_CLI", "1")
	t.Setenv("GRAPHMILL_CACHE", t.TempDir())
	dir := t.TempDir()
	pdir := filepath.Join(dir, "cora4")
	if out, err := run(t, "partition", "--parts", "4", "cora", "--out", pdir); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	single := filepath.Join(dir, "single.json")
	if out, err := run(t, "train", "--model", "gcn", "--mode", "full", "--epochs", "30", "--seed", "5", "--quiet", "--metrics-out", single); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	launch := func(args ...string) string {
		t.Helper()
		var out, errb bytes.Buffer
		if err := launch.Local(ctx, 2, 0, time.Second, append([]string{os.Args[0]}, args...), &out, &errb); err != nil {
			t.Fatalf("%v\n%s\n%s", err, out.String(), errb.String())
		}
		return out.String()
	}
	dist := filepath.Join(dir, "dist.json")
	model := filepath.Join(dir, "gcn.safetensors")
	launch("train", "--dataset", pdir, "--model", "gcn", "--mode", "sar", "--epochs", "30", "--seed", "5", "--quiet", "--metrics-out", dist, "--save", model)
	type metrics struct {
		TestAcc float64 `json:"test_acc"`
		History []struct {
			Loss float64 `json:"loss"`
		} `json:"history"`
	}
	read := func(p string) metrics {
		var m metrics
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	s, d := read(single), read(dist)
	if s.TestAcc != d.TestAcc || len(s.History) != len(d.History) {
		t.Fatalf("sar: test accuracy %v over %d epochs, single process %v over %d", d.TestAcc, len(d.History), s.TestAcc, len(s.History))
	}
	for i := range s.History {
		if diff := s.History[i].Loss - d.History[i].Loss; diff > 1e-4 || diff < -1e-4 {
			t.Fatalf("epoch %d: loss %v, single process %v", i, d.History[i].Loss, s.History[i].Loss)
		}
	}
	out := launch("eval", "--load", model, "--dataset", pdir, "--mode", "one-shot")
	if !strings.Contains(out, "[rank 0] gcn on cora (2 ranks, one-shot mode)") || strings.Contains(out, "[rank 1] gcn") {
		t.Errorf("eval: want rank 0's line only:\n%s", out)
	}
	pred := filepath.Join(dir, "pred")
	launch("predict", "--load", model, "--dataset", pdir, "--out", pred)
	for _, r := range []string{"rank-00000", "rank-00001"} {
		for _, f := range []string{"predictions.npy", "probabilities.npy", "node_ids.npy", "predictions.json"} {
			if _, err := os.Stat(filepath.Join(pred, r, f)); err != nil {
				t.Error(err)
			}
		}
	}
}

func TestSARModeNeedsPartitions(t *testing.T) {
	out, err := run(t, "train", "--mode", "sar", "--epochs", "1")
	if err == nil || !strings.Contains(err.Error(), "graphmill partition") {
		t.Fatalf("got %v\n%s", err, out)
	}
	if _, err := run(t, "train", "--mode", "full", "--mfg", "--epochs", "1"); err == nil || !strings.Contains(err.Error(), "--mfg is for") {
		t.Fatalf("--mfg in full mode: %v", err)
	}
	if _, err := run(t, "train", "--mode", "one-shot", "--max-memory", "1GiB", "--epochs", "1"); err == nil || !strings.Contains(err.Error(), "--max-memory does not apply") {
		t.Fatalf("--max-memory in one-shot mode: %v", err)
	}
}

// TestLaunchSARTraffic trains in sar mode under launch and checks the
// bytes reported over all ranks: rank 0's line, and --metrics-out's
// summary.traffic. The rows and gradients the training steps sent over
// all ranks are > 0 over parts with halos and equal their analytic
// minimum exactly (with --mfg the minimum is left out); a rank whose part
// has no halo (CiteSeer's part 0 under the 4-way METIS partition, as the
// lead's run) sent none, the others did.
func TestLaunchSARTraffic(t *testing.T) {
	if testing.Short() {
		t.Skip("trains 2 and 4 ranks")
	}
	t.Setenv("GRAPHMILL_TEST_AS_CLI", "1")
	t.Setenv("GRAPHMILL_CACHE", t.TempDir())
	dir := t.TempDir()
	cases := []struct {
		name    string
		dataset string // "cora" (built in) or a planetoid name to import
		ranks   int
		args    []string
		noHalo  bool // some part has no halo: its rank sends no row
	}{
		{"cora-4/sar/N=2", "cora", 2, []string{"--mode", "sar"}, false},
		{"cora-4/one-shot+mfg/N=4", "cora", 4, []string{"--mode", "one-shot", "--mfg"}, false},
		{"citeseer-4/sar/N=4", "citeseer", 4, []string{"--mode", "sar"}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := tc.dataset
			if src != "cora" {
				src = filepath.Join(dir, tc.dataset)
				if _, err := os.Stat(src); err != nil {
					if out, err := run(t, "data", "import", "--format", "planetoid", "--name", tc.dataset, "--src", need(t, "planetoid"), "--out", src); err != nil {
						t.Fatalf("%v\n%s", err, out)
					}
				}
			}
			pdir := filepath.Join(dir, tc.dataset+"-4")
			if _, err := os.Stat(pdir); err != nil {
				if out, err := run(t, "partition", "--parts", "4", src, "--out", pdir); err != nil {
					t.Fatalf("%v\n%s", err, out)
				}
			}
			js, err := run(t, "data", "info", "--json", pdir)
			if err != nil {
				t.Fatal(err)
			}
			var info struct {
				Parts []struct {
					NumHalo int `json:"num_halo"`
				} `json:"parts"`
			}
			if err := json.Unmarshal([]byte(js), &info); err != nil || len(info.Parts) != 4 {
				t.Fatalf("%v: %d parts in %s", err, len(info.Parts), js)
			}
			// Rank r holds parts r*k .. r*k+k-1 (k = 4/ranks).
			k := 4 / tc.ranks
			halo := make([]bool, tc.ranks)
			for p, part := range info.Parts {
				halo[p/k] = halo[p/k] || part.NumHalo > 0
			}
			metrics := filepath.Join(dir, tc.name+".json")
			if err := os.MkdirAll(filepath.Dir(metrics), 0o755); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			var out, errb bytes.Buffer
			args := append([]string{os.Args[0], "train", "--dataset", pdir, "--model", "gcn", "--epochs", "5", "--seed", "5", "--quiet", "--metrics-out", metrics}, tc.args...)
			if err := launch.Local(ctx, tc.ranks, 0, time.Second, args, &out, &errb); err != nil {
				t.Fatalf("%v\n%s\n%s", err, out.String(), errb.String())
			}
			b, err := os.ReadFile(metrics)
			if err != nil {
				t.Fatal(err)
			}
			var m struct {
				Summary struct {
					Traffic *train.Traffic `json:"traffic"`
				} `json:"summary"`
			}
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatal(err)
			}
			tr := m.Summary.Traffic
			if tr == nil || tr.Ranks != tc.ranks || len(tr.RankSent) != tc.ranks || len(tr.RankExchange) != tc.ranks {
				t.Fatalf("summary.traffic %+v for %d ranks in\n%s", tr, tc.ranks, b)
			}
			mfg := slices.Contains(tc.args, "--mfg")
			if tr.StepExchange <= 0 || tr.Exchange < tr.StepExchange || tr.Sent != tr.Exchange+tr.Reduce || tr.Reduce <= 0 {
				t.Errorf("per epoch: sent %d = rows and gradients %d (steps %d) + all-reduce %d", tr.Sent, tr.Exchange, tr.StepExchange, tr.Reduce)
			}
			if mfg && tr.MinStepExchange != 0 || !mfg && tr.StepExchange != tr.MinStepExchange {
				t.Errorf("the steps sent %d bytes of rows and gradients per epoch, analytic minimum %d (mfg %v)", tr.StepExchange, tr.MinStepExchange, mfg)
			}
			// Each rank's figure is divided by the epochs apart: within a
			// byte per rank of the total's.
			var sent, exchange int64
			for r := range tc.ranks {
				sent += tr.RankSent[r]
				exchange += tr.RankExchange[r]
				if halo[r] != (tr.RankExchange[r] > 0) {
					t.Errorf("rank %d: halo %v, sent %d bytes of rows and gradients per epoch", r, halo[r], tr.RankExchange[r])
				}
				if tr.RankSent[r] > tr.RankSent[tr.BusiestRank] {
					t.Errorf("rank %d sent %d per epoch, busiest rank %d %d", r, tr.RankSent[r], tr.BusiestRank, tr.RankSent[tr.BusiestRank])
				}
			}
			if d := sent - tr.Sent; d > 0 || d <= -int64(tc.ranks) {
				t.Errorf("ranks sent %v per epoch, %d in all; total %d", tr.RankSent, sent, tr.Sent)
			}
			if d := exchange - tr.Exchange; d > 0 || d <= -int64(tc.ranks) {
				t.Errorf("ranks sent %v bytes of rows and gradients per epoch, %d in all; total %d", tr.RankExchange, exchange, tr.Exchange)
			}
			if tc.noHalo {
				if !slices.Contains(halo, false) {
					t.Fatalf("no part without halo in %s: the case needs one", js)
				}
				if !halo[tr.BusiestRank] {
					t.Errorf("busiest rank %d has no halo", tr.BusiestRank)
				}
			}
			want := fmt.Sprintf("[rank 0] sent per epoch: all %d ranks %s (rows and gradients %s: training steps %s", tc.ranks, units.Bytes(tr.Sent), units.Bytes(tr.Exchange), units.Bytes(tr.StepExchange))
			if !mfg {
				want += ", analytic minimum " + units.Bytes(tr.MinStepExchange)
			}
			want += ", evaluation "
			s := out.String()
			if !strings.Contains(s, want) || strings.Count(s, "sent per epoch") != 1 ||
				!strings.Contains(s, fmt.Sprintf("busiest rank %d: %s\n", tr.BusiestRank, units.Bytes(tr.RankSent[tr.BusiestRank]))) {
				t.Errorf("want rank 0's line %q... once:\n%s", want, s)
			}
		})
	}
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
		if err := runLaunch(ctx, 2, 0, time.Second, append([]string{os.Args[0]}, args...), &out, &errb); err != nil {
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

func TestParseBandwidth(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want float64
		ok   bool
	}{{"25Gbit", 25e9, true}, {"100Gbit/s", 100e9, true}, {"400Mbit", 400e6, true}, {"10G", 10e9, true}, {"1e9", 1e9, true}, {"fast", 0, false}, {"-1Gbit", 0, false}, {"0", 0, false}} {
		got, err := parseBandwidth(tc.in)
		if (err == nil) != tc.ok || tc.ok && got != tc.want {
			t.Errorf("parseBandwidth(%q) = %v, %v; want %v (ok %v)", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

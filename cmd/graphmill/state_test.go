package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/graphmill/graphmill/dist/launch"
	"github.com/graphmill/graphmill/train"
)

// TestResumeAfterSIGTERM runs 'graphmill train --state-file' as a process
// of its own, sends it SIGTERM a few epochs in, and resumes the run with
// --resume: every epoch's loss and accuracies in --metrics-out, the kept
// model's test accuracy and the model saved must be those of the same
// run left alone, bit for bit. It also checks the refusals: an existing
// state file without --resume, and a resume with another learning rate.
func TestResumeAfterSIGTERM(t *testing.T) {
	if testing.Short() {
		t.Skip("trains the run three times")
	}
	t.Setenv("GRAPHMILL_CACHE", t.TempDir())
	dir := t.TempDir()
	state := filepath.Join(dir, "run.state")
	args := []string{"train", "--model", "sage", "--mode", "sampled", "--epochs", "24", "--seed", "5"}
	straight, resumed := filepath.Join(dir, "straight.json"), filepath.Join(dir, "resumed.json")
	straightCk, resumedCk := filepath.Join(dir, "straight.safetensors"), filepath.Join(dir, "resumed.safetensors")
	if _, err := run(t, append(args, "--quiet", "--metrics-out", straight, "--save", straightCk)...); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := cliCmd(ctx, append(args, "--state-file", state, "--metrics-out", filepath.Join(dir, "part.json"))...)
	out, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errb strings.Builder
	c.Stderr = &errb
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer c.Process.Kill()
	seen := make(chan struct{})
	rest := make(chan string, 1)
	go func() {
		var b strings.Builder
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			b.WriteString(sc.Text() + "\n")
			if strings.HasPrefix(sc.Text(), "epoch    3 ") {
				close(seen)
			}
		}
		rest <- b.String()
	}()
	select {
	case <-seen:
	case <-time.After(2 * time.Minute):
		t.Fatalf("no epoch 3 within 2 minutes:\n%s", errb.String())
	}
	c.Process.Signal(syscall.SIGTERM)
	werr := c.Wait()
	stdout := <-rest
	var ee *exec.ExitError
	if !errors.As(werr, &ee) || ee.ExitCode() != 143 {
		t.Fatalf("train ended with %v, want exit status 143\n%s\n%s", werr, stdout, errb.String())
	}
	st, err := train.ReadState(state)
	if err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	if st.Done || st.Epoch < 4 || st.Epoch >= 24 {
		t.Fatalf("the state after SIGTERM holds %d epochs (done %v); the run was stopped after epoch 3:\n%s", st.Epoch, st.Done, stdout)
	}

	t.Logf("stopped with %d epochs done", st.Epoch)
	// The state file is not overwritten by a fresh run, nor resumed with
	// other settings.
	if _, err := run(t, append(args, "--quiet", "--state-file", state)...); err == nil || !strings.Contains(err.Error(), "--resume "+state) {
		t.Errorf("a fresh run over the state file: %v", err)
	}
	if _, err := run(t, append(args, "--quiet", "--resume", state, "--lr", "0.02")...); err == nil || !strings.Contains(err.Error(), "optimizer.lr 0.01 there, 0.02 here") {
		t.Errorf("resumed with another learning rate: %v", err)
	}

	got, err := run(t, append(args, "--resume", state, "--metrics-out", resumed, "--save", resumedCk)...)
	if err != nil {
		t.Fatalf("%v\n%s", err, got)
	}
	if !strings.Contains(got, "resuming "+state) {
		t.Errorf("the resumed run does not say so:\n%s", got)
	}
	a, b := readFullMetrics(t, straight), readFullMetrics(t, resumed)
	if len(a.History) != 24 || len(b.History) != len(a.History) {
		t.Fatalf("%d epochs straight, %d resumed", len(a.History), len(b.History))
	}
	for i := range a.History {
		x, y := a.History[i], b.History[i]
		if math.Float64bits(x.Loss) != math.Float64bits(y.Loss) || x.TrainAcc != y.TrainAcc || *x.ValAcc != *y.ValAcc || *x.TestAcc != *y.TestAcc {
			t.Fatalf("epoch %d: resumed loss %v val %v, straight loss %v val %v", i, y.Loss, *y.ValAcc, x.Loss, *x.ValAcc)
		}
	}
	if a.TestAcc != b.TestAcc || a.Summary.BestEpoch != b.Summary.BestEpoch || b.Summary.Epochs != 24 || b.Summary.ResumedFrom != st.Epoch {
		t.Errorf("resumed summary %+v (test %v), straight %+v (test %v)", b.Summary, b.TestAcc, a.Summary, a.TestAcc)
	}
	x, err := os.ReadFile(straightCk)
	if err != nil {
		t.Fatal(err)
	}
	y, err := os.ReadFile(resumedCk)
	if err != nil {
		t.Fatal(err)
	}
	if string(x) != string(y) {
		t.Error("the resumed run saved another model than the run left alone")
	}
}

type fullMetrics struct {
	TestAcc float64 `json:"test_acc"`
	Summary struct {
		BestEpoch   int `json:"best_epoch"`
		Epochs      int `json:"epochs"`
		ResumedFrom int `json:"resumed_from"`
	} `json:"summary"`
	History []struct {
		Loss     float64  `json:"loss"`
		TrainAcc float64  `json:"train_acc"`
		ValAcc   *float64 `json:"val_acc"`
		TestAcc  *float64 `json:"test_acc"`
	} `json:"history"`
}

func readFullMetrics(t *testing.T, path string) fullMetrics {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m fullMetrics
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, h := range m.History {
		if h.ValAcc == nil || h.TestAcc == nil {
			t.Fatalf("%s: an epoch not evaluated", path)
		}
	}
	return m
}

// TestStateRefusedWhereUnsupported: the training state is for one process
// on a whole dataset; under a launcher, and over a partitioned dataset
// (SAR, distributed sampling), --state-file and --resume are refused with
// an error saying so, before any training.
func TestStateRefusedWhereUnsupported(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 2 ranks")
	}
	t.Setenv("GRAPHMILL_CACHE", t.TempDir())
	dir := t.TempDir()
	ds, pd := generate(t, filepath.Join(dir, "syn")), filepath.Join(dir, "syn-2")
	if _, err := run(t, "partition", "--parts", "2", ds, "--out", pd); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(dir, "run.state")
	for _, mode := range []string{"sar", "sampled"} {
		if _, err := run(t, "train", "--mode", mode, "--dataset", pd, "--epochs", "1", "--quiet", "--state-file", state); err == nil || !strings.Contains(err.Error(), "cannot save or resume its state") {
			t.Errorf("--mode %s over a partitioned dataset: %v", mode, err)
		}
	}
	if _, err := run(t, "train", "--epochs", "1", "--quiet", "--state-every", "2"); err == nil || !strings.Contains(err.Error(), "--state-every applies with --state-file") {
		t.Errorf("--state-every alone: %v", err)
	}
	t.Setenv("GRAPHMILL_TEST_AS_CLI", "1")
	var out, errb strings.Builder
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	err := launch.Local(ctx, 2, 0, time.Second, []string{os.Args[0], "train", "--model", "sage", "--epochs", "2", "--quiet", "--state-file", state}, &out, &errb)
	if err == nil || !strings.Contains(errb.String(), "--state-file and --resume are for one process") {
		t.Errorf("under a launcher: %v\n%s\n%s", err, out.String(), errb.String())
	}
	if _, serr := os.Stat(state); serr == nil {
		t.Error("a refused run wrote a state")
	}
}

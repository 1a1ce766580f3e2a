package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/graphmill/graphmill/dist/launch"
)

// cliCmd returns the test binary run as the CLI.
func cliCmd(ctx context.Context, args ...string) *exec.Cmd {
	c := exec.CommandContext(ctx, os.Args[0], args...)
	c.Env = append(os.Environ(), "GRAPHMILL_TEST_AS_CLI=1")
	return c
}

type metrics struct {
	TestAcc float64 `json:"test_acc"`
	History []struct {
		Loss float64 `json:"loss"`
	} `json:"history"`
}

func readMetrics(t *testing.T, path string) metrics {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m metrics
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// sameRun checks two runs trained the same: equal test accuracy and equal
// losses epoch by epoch (up to float32 summation order across ranks).
func sameRun(t *testing.T, what string, a, b metrics) {
	t.Helper()
	if len(a.History) != len(b.History) {
		t.Fatalf("%s: %d epochs vs %d", what, len(a.History), len(b.History))
	}
	for i := range a.History {
		if d := a.History[i].Loss - b.History[i].Loss; d > 1e-3 || d < -1e-3 {
			t.Fatalf("%s: epoch %d loss %.6f vs single process %.6f", what, i, b.History[i].Loss, a.History[i].Loss)
		}
	}
	if d := a.TestAcc - b.TestAcc; d > 0.005 || d < -0.005 {
		t.Fatalf("%s: test accuracy %.4f vs single process %.4f (bar: within 0.5 pt)", what, b.TestAcc, a.TestAcc)
	}
}

// TestDistSampledEqualsSingleProcess trains GraphSAGE on Cora and CiteSeer
// partitioned 4 ways under 4 ranks, and checks it trains as the single
// process does on the whole dataset with the same seed.
func TestDistSampledEqualsSingleProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("trains 4 ranks twice")
	}
	need(t, "planetoid/ind.citeseer.graph")
	for _, name := range []string{"cora", "citeseer"} {
		dir := t.TempDir()
		ds, pd := filepath.Join(dir, name), filepath.Join(dir, name+"-4")
		if _, err := run(t, "data", "import", "--format", "planetoid", "--name", name, "--src", filepath.Join(sharedData, "planetoid"), "--out", ds); err != nil {
			t.Fatal(err)
		}
		if _, err := run(t, "partition", "--parts", "4", "--balance-train", ds, "--out", pd); err != nil {
			t.Fatal(err)
		}
		single, multi := filepath.Join(dir, "s.json"), filepath.Join(dir, "d.json")
		if _, err := run(t, "train", "--dataset", ds, "--model", "sage", "--epochs", "10", "--seed", "3", "--quiet", "--metrics-out", single); err != nil {
			t.Fatal(err)
		}
		t.Setenv("GRAPHMILL_TEST_AS_CLI", "1")
		var out, errb bytes.Buffer
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		err := launch.Local(ctx, 4, 0, time.Second, []string{os.Args[0], "train", "--dataset", pd, "--model", "sage", "--epochs", "10", "--seed", "3", "--remote-cache", "64KiB", "--metrics-out", multi}, &out, &errb)
		cancel()
		os.Unsetenv("GRAPHMILL_TEST_AS_CLI")
		if err != nil {
			t.Fatalf("%s: %v\n%s\n%s", name, err, out.String(), errb.String())
		}
		if !strings.Contains(out.String(), "remote-row cache hit rate") {
			t.Errorf("%s: no traffic report:\n%s", name, out.String())
		}
		sameRun(t, name+" 4 ranks", readMetrics(t, single), readMetrics(t, multi))
	}
}

// startSampler starts "serve sampler" as a process and returns it and its
// address.
func startSampler(t *testing.T, ds string) (*exec.Cmd, string) {
	t.Helper()
	c := cliCmd(context.Background(), "serve", "sampler", "--dataset", ds, "--listen", "127.0.0.1:0")
	stdout, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c.Stderr = os.Stderr
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Process.Kill(); c.Wait() })
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if a, ok := strings.CutPrefix(sc.Text(), "listening on "); ok {
			go func() {
				for sc.Scan() {
				}
			}()
			return c, a
		}
	}
	t.Fatal("the sampler never said where it listens")
	return nil, ""
}

// TestKillOneOfThreeSamplers kills -9 one of three sampler processes while
// a trainer streams from them: its unsent batches go to the other two, and
// the run trains exactly as local sampling does (every seed of every epoch
// exactly once, in the same batches).
func TestKillOneOfThreeSamplers(t *testing.T) {
	if testing.Short() || runtime.GOOS == "windows" {
		t.Skip("runs four processes")
	}
	dir := t.TempDir()
	t.Setenv("GRAPHMILL_CACHE", dir)
	ds := filepath.Join(dir, "cora")
	if _, err := run(t, "data", "import", "--format", "planetoid", "--name", "cora", "--src", need(t, "planetoid"), "--out", ds); err != nil {
		t.Fatal(err)
	}
	args := []string{"train", "--dataset", ds, "--model", "sage", "--epochs", "25", "--batch", "2", "--seed", "5", "--quiet"}
	local := filepath.Join(dir, "local.json")
	if _, err := run(t, append(args, "--metrics-out", local)...); err != nil {
		t.Fatal(err)
	}
	var addrs []string
	var procs []*exec.Cmd
	for i := 0; i < 3; i++ {
		p, a := startSampler(t, ds)
		procs, addrs = append(procs, p), append(addrs, a)
	}
	remote := filepath.Join(dir, "remote.json")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// Not --quiet: the trainer says when it has reached its samplers.
	rargs := append(slices.Clone(args[:len(args)-1]), "--sampler", strings.Join(addrs, ","), "--metrics-out", remote)
	tr := cliCmd(ctx, rargs...)
	pr, pw := io.Pipe()
	tr.Stdout, tr.Stderr = pw, pw
	var trOut bytes.Buffer
	connected := make(chan struct{})
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(pr)
		once := false
		for sc.Scan() {
			trOut.WriteString(sc.Text() + "\n")
			if !once && strings.Contains(sc.Text(), "minibatches from 3 sampler service(s)") {
				once = true
				close(connected)
			}
		}
	}()
	if err := tr.Start(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-connected:
	case <-time.After(time.Minute):
		t.Fatal("the trainer never reached its samplers")
	}
	time.Sleep(300 * time.Millisecond)              // into the first epochs of a run of a few seconds
	if err := procs[1].Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	err := tr.Wait()
	pw.Close()
	<-scanned
	if err != nil {
		t.Fatalf("trainer: %v\n%s", err, trOut.String())
	}
	if !strings.Contains(trOut.String(), "sampler 1 ("+addrs[1]+") lost") {
		t.Fatalf("the trainer did not report the lost sampler:\n%s", trOut.String())
	}
	sameRun(t, "3 samplers, one killed", readMetrics(t, local), readMetrics(t, remote))
}

// TestServeSamplerRefusesOpenListenWithoutSecret: without a shared secret
// a non-loopback --listen is refused unless --insecure.
func TestServeSamplerRefusesOpenListenWithoutSecret(t *testing.T) {
	t.Setenv("GRAPHMILL_DIST_TOKEN", "")
	_, err := run(t, "serve", "sampler", "--dataset", "cora", "--listen", "0.0.0.0:0")
	if err == nil || !strings.Contains(err.Error(), "not a loopback address and no shared secret") || !strings.Contains(err.Error(), "--insecure") {
		t.Fatalf("got %v", err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"train", "--model", "sage", "--sampler", "127.0.0.1:1", "--connect-timeout", "soon"}, "--connect-timeout"},
		{[]string{"train", "--model", "sage", "--remote-cache", "1MiB"}, "--remote-cache applies to distributed sampling"},
		{[]string{"train", "--model", "sage", "--sampler", "127.0.0.1:1", "--remote-cache", "1MiB"}, "--remote-cache applies"},
	} {
		if _, err := run(t, tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.args, err, tc.want)
		}
	}
}

// TestDataParallelFromSampler: two data-parallel ranks streaming their
// shards from one sampler service train as two ranks sampling locally.
func TestDataParallelFromSampler(t *testing.T) {
	if testing.Short() || runtime.GOOS == "windows" {
		t.Skip("runs three processes")
	}
	dir := t.TempDir()
	t.Setenv("GRAPHMILL_CACHE", dir)
	ds := filepath.Join(dir, "cora")
	if _, err := run(t, "data", "import", "--format", "planetoid", "--name", "cora", "--src", need(t, "planetoid"), "--out", ds); err != nil {
		t.Fatal(err)
	}
	_, addr := startSampler(t, ds)
	args := []string{os.Args[0], "train", "--dataset", ds, "--model", "sage", "--epochs", "3", "--batch", "16", "--seed", "2", "--quiet"}
	t.Setenv("GRAPHMILL_TEST_AS_CLI", "1")
	results := map[string]metrics{}
	for _, mode := range []string{"local", "sampler"} {
		out := filepath.Join(dir, mode+".json")
		a := append(slices.Clone(args), "--metrics-out", out)
		if mode == "sampler" {
			a = append(a, "--sampler", addr)
		}
		var o, e bytes.Buffer
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		err := launch.Local(ctx, 2, 0, time.Second, a, &o, &e)
		cancel()
		if err != nil {
			t.Fatalf("%s: %v\n%s\n%s", mode, err, o.String(), e.String())
		}
		results[mode] = readMetrics(t, out)
	}
	sameRun(t, "2 ranks from a sampler service", results["local"], results["sampler"])
}

// TestDistSampledGCNAndGAT: GCN (global degrees) and GAT (attention
// dropout keyed by node) distributed over 2 parts train as one process.
func TestDistSampledGCNAndGAT(t *testing.T) {
	if testing.Short() {
		t.Skip("trains 2 ranks twice")
	}
	dir := t.TempDir()
	ds, pd := filepath.Join(dir, "cora"), filepath.Join(dir, "cora-2")
	if _, err := run(t, "data", "import", "--format", "planetoid", "--name", "cora", "--src", need(t, "planetoid"), "--out", ds); err != nil {
		t.Fatal(err)
	}
	if _, err := run(t, "partition", "--parts", "2", "--balance-train", ds, "--out", pd); err != nil {
		t.Fatal(err)
	}
	for _, model := range []string{"gcn", "gat"} {
		args := []string{"--model", model, "--mode", "sampled", "--epochs", "3", "--seed", "6", "--quiet"}
		single, multi := filepath.Join(dir, model+"-s.json"), filepath.Join(dir, model+"-d.json")
		if _, err := run(t, append([]string{"train", "--dataset", ds, "--metrics-out", single}, args...)...); err != nil {
			t.Fatal(err)
		}
		t.Setenv("GRAPHMILL_TEST_AS_CLI", "1")
		var out, errb bytes.Buffer
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		err := launch.Local(ctx, 2, 0, time.Second, append([]string{os.Args[0], "train", "--dataset", pd, "--metrics-out", multi}, args...), &out, &errb)
		cancel()
		os.Unsetenv("GRAPHMILL_TEST_AS_CLI")
		if err != nil {
			t.Fatalf("%s: %v\n%s\n%s", model, err, out.String(), errb.String())
		}
		sameRun(t, model+" 2 ranks", readMetrics(t, single), readMetrics(t, multi))
	}
}

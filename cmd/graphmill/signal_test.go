package main

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestLaunchPassesOnSIGTERM runs 'graphmill launch -n 2 -- graphmill
// train' as a process of its own and sends the launcher SIGTERM: the
// ranks stop at the end of their step, rank 0 writes --save and
// --metrics-out, and launch exits 143 once they are done (its own signal
// handler neither cancels it nor quits after stopGrace).
func TestLaunchPassesOnSIGTERM(t *testing.T) {
	if testing.Short() {
		t.Skip("trains 2 ranks")
	}
	t.Setenv("GRAPHMILL_TEST_AS_CLI", "1")
	t.Setenv("GRAPHMILL_CACHE", t.TempDir())
	dir := t.TempDir()
	ck, m := filepath.Join(dir, "ck.safetensors"), filepath.Join(dir, "m.json")
	c := exec.Command(os.Args[0], "launch", "-n", "2", "--grace", "60s", "--", os.Args[0], "train", "--model", "sage", "--epochs", "100000", "--save", ck, "--metrics-out", m)
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
	sc := bufio.NewScanner(out)
	started := make(chan struct{})
	rest := make(chan string, 1)
	go func() {
		var b strings.Builder
		signalled := false
		for sc.Scan() {
			b.WriteString(sc.Text() + "\n")
			if !signalled && strings.HasPrefix(sc.Text(), "[rank 0] epoch") {
				signalled = true
				close(started)
			}
		}
		rest <- b.String()
	}()
	select {
	case <-started:
	case <-time.After(2 * time.Minute):
		t.Fatalf("no epoch within 2 minutes:\n%s", errb.String())
	}
	time.Sleep(300 * time.Millisecond) // a few steps: well past setup
	t0 := time.Now()
	c.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	var werr error
	select {
	case werr = <-done:
	case <-time.After(time.Minute):
		t.Fatalf("launch still running a minute after SIGTERM:\n%s", errb.String())
	}
	stdout := <-rest
	var ee *exec.ExitError
	if !errors.As(werr, &ee) || ee.ExitCode() != 143 {
		t.Errorf("launch ended with %v, want exit status 143\n%s\n%s", werr, stdout, errb.String())
	}
	for _, f := range []string{ck, m} {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("%v\nstdout:\n%s\nstderr:\n%s", err, stdout, errb.String())
		}
	}
	if !strings.Contains(stdout, "[rank 0] model saved to") {
		t.Errorf("rank 0 did not save:\n%s", stdout)
	}
	if e := errb.String(); strings.Contains(e, ": quit") || strings.Contains(e, "SIGKILL") {
		t.Errorf("something quit instead of stopping:\n%s", errb.String())
	}
	t.Logf("stopped %v after SIGTERM", time.Since(t0))
}

//go:build unix

package launch

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// helperEnv makes the test binary one rank of a small program: "obey"
// waits for SIGINT or SIGTERM, records it in $launchTestDir/rank-$RANK
// and exits with 128+signal, as graphmill train does; "ignore" records
// every signal and goes on running; "fail" exits 3 at once on rank 1 and
// behaves as "obey" on the others.
const (
	helperEnv     = "GRAPHMILL_LAUNCH_TEST_HELPER"
	launchTestDir = "GRAPHMILL_LAUNCH_TEST_DIR"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		helperRank(mode)
		return
	}
	os.Exit(m.Run())
}

func helperRank(mode string) {
	rank, dir := os.Getenv("RANK"), os.Getenv(launchTestDir)
	if mode == "fail" && rank == "1" {
		for { // until rank 0 catches signals
			if _, err := os.Stat(filepath.Join(dir, "ready-0")); err == nil {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		fmt.Println("failing")
		fmt.Fprintln(os.Stderr, "helper: the reason it failed")
		os.Exit(3)
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	os.WriteFile(filepath.Join(dir, "ready-"+rank), nil, 0o644)
	fmt.Println("ready")
	for s := range sigs {
		fmt.Printf("got %v\n", s)
		f, err := os.OpenFile(filepath.Join(dir, "rank-"+rank), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err == nil {
			fmt.Fprintln(f, s)
			f.Close()
		}
		if mode != "ignore" {
			os.Exit(128 + int(s.(syscall.Signal)))
		}
	}
}

// lines collects the output of the ranks and tells when some line has
// appeared on every one of them.
type lines struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (l *lines) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(b)
}

func (l *lines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// waitAll waits until every rank of n printed line.
func (l *lines) waitAll(t *testing.T, n int, line string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		s, all := l.String(), true
		for r := range n {
			if !strings.Contains(s, fmt.Sprintf("[rank %d] %s\n", r, line)) {
				all = false
			}
		}
		if all {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the ranks never all printed %q:\n%s", line, s)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

type launched struct {
	out, errOut lines
	err         chan error
	t0          time.Time
}

// start runs n ranks of the helper in mode, with grace.
func start(t *testing.T, ctx context.Context, n int, mode string, grace time.Duration) (*launched, string) {
	t.Helper()
	dir := t.TempDir()
	t.Setenv(helperEnv, mode)
	t.Setenv(launchTestDir, dir)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	l := &launched{err: make(chan error, 1), t0: time.Now()}
	go func() { l.err <- Local(ctx, n, 0, grace, []string{self}, &l.out, &l.errOut) }()
	return l, dir
}

func (l *launched) wait(t *testing.T, within time.Duration) error {
	t.Helper()
	select {
	case err := <-l.err:
		return err
	case <-time.After(within):
		t.Fatalf("Local still running after %v:\n%s\n%s", within, l.out.String(), l.errOut.String())
		return nil
	}
}

func exitCode(t *testing.T, err error) int {
	t.Helper()
	var ee *ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("got %v (%T), want an *ExitError", err, err)
	}
	return ee.Code
}

// TestSignalIsPassedOn sends this process (the launcher) SIGTERM or
// SIGINT: each rank gets it once, stops on its own, and Local returns
// the signal's status without waiting for the grace period.
func TestSignalIsPassedOn(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			const n = 2
			l, dir := start(t, context.Background(), n, "obey", time.Minute)
			l.out.waitAll(t, n, "ready")
			if !Forwarding() {
				t.Error("Forwarding() false while Local runs")
			}
			syscall.Kill(os.Getpid(), sig)
			err := l.wait(t, 20*time.Second)
			if code := exitCode(t, err); code != 128+int(sig) {
				t.Errorf("exit status %d, want %d (%v)", code, 128+int(sig), err)
			}
			for r := range n {
				b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("rank-%d", r)))
				if err != nil {
					t.Fatalf("rank %d: %v\n%s", r, err, l.out.String())
				}
				if got := strings.TrimSpace(string(b)); got != sig.String() {
					t.Errorf("rank %d received %q, want %q once", r, got, sig.String())
				}
			}
			if d := time.Since(l.t0); d > 20*time.Second {
				t.Errorf("took %v: Local waited for the grace period", d)
			}
			if Forwarding() {
				t.Error("Forwarding() still true after Local returned")
			}
			if !strings.Contains(l.errOut.String(), "passed on to the ranks") {
				t.Errorf("stderr does not say the signal was passed on:\n%s", l.errOut.String())
			}
		})
	}
}

// TestSecondSignalKills: ranks that ignore the signal are killed by a
// second one, long before the grace period ends.
func TestSecondSignalKills(t *testing.T) {
	const n = 2
	l, _ := start(t, context.Background(), n, "ignore", 10*time.Minute)
	l.out.waitAll(t, n, "ready")
	syscall.Kill(os.Getpid(), syscall.SIGTERM)
	l.out.waitAll(t, n, "got terminated")
	syscall.Kill(os.Getpid(), syscall.SIGINT)
	err := l.wait(t, 20*time.Second)
	if code := exitCode(t, err); code != 143 {
		t.Errorf("exit status %d, want 143, the first signal's (%v)", code, err)
	}
	if !strings.Contains(l.errOut.String(), "killing the ranks") {
		t.Errorf("stderr:\n%s", l.errOut.String())
	}
}

// TestGraceKills: ranks that ignore the signal are killed after grace.
func TestGraceKills(t *testing.T) {
	const n = 2
	l, _ := start(t, context.Background(), n, "ignore", 300*time.Millisecond)
	l.out.waitAll(t, n, "ready")
	syscall.Kill(os.Getpid(), syscall.SIGINT)
	err := l.wait(t, 20*time.Second)
	if code := exitCode(t, err); code != 130 {
		t.Errorf("exit status %d, want 130 (%v)", code, err)
	}
	if !strings.Contains(l.errOut.String(), "SIGKILL") {
		t.Errorf("stderr does not tell of the kill:\n%s", l.errOut.String())
	}
}

// TestCancelStopsRanks: a cancelled context stops the ranks with SIGTERM
// (not SIGKILL: they may save) and Local's error wraps ctx.Err().
func TestCancelStopsRanks(t *testing.T) {
	const n = 2
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	l, dir := start(t, ctx, n, "obey", time.Minute)
	l.out.waitAll(t, n, "ready")
	cancel()
	err := l.wait(t, 20*time.Second)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("got %v, want one wrapping context.Canceled", err)
	}
	for r := range n {
		if b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("rank-%d", r))); err != nil || strings.TrimSpace(string(b)) != "terminated" {
			t.Errorf("rank %d: got %q, %v; want SIGTERM", r, b, err)
		}
	}
}

// TestFailureStopsTheOthers: rank 1 exits 3; rank 0 gets SIGTERM and
// Local returns status 3.
func TestFailureStopsTheOthers(t *testing.T) {
	const n = 2
	l, dir := start(t, context.Background(), n, "fail", time.Minute)
	err := l.wait(t, 20*time.Second)
	if code := exitCode(t, err); code != 3 {
		t.Errorf("exit status %d, want 3 (%v)", code, err)
	}
	if !strings.Contains(fmt.Sprint(err), "rank 1 failed (exit status 3: helper: the reason it failed)") {
		t.Errorf("launch's error %q does not repeat the failed rank's last error line", err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "rank-0")); err != nil || strings.TrimSpace(string(b)) != "terminated" {
		t.Errorf("rank 0: got %q, %v; want SIGTERM\n%s", b, err, l.out.String())
	}
}

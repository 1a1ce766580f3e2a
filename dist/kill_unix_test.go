//go:build unix

package dist

import (
	"bufio"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestKilledRankProcess: four rank processes on this host (so through
// shared memory) all-reduce in a loop; rank 1 gets SIGKILL mid-run. The
// others must each end with an error naming rank 1 within 10 s.
func TestKilledRankProcess(t *testing.T) {
	if os.Getenv(cutHelperEnv) != "" {
		t.Skip("in a helper")
	}
	const n = 4
	port := freePort(t)
	secret := NewSecret()
	running := make(chan int, n)
	procs := make([]*rankHelper, n)
	for r := range n {
		procs[r] = startRankHelper(t, r, []string{os.Args[0]}, []string{"GRAPHMILL_CUTLINK_PORT=" + strconv.Itoa(port), "GRAPHMILL_CUTLINK_SIZE=" + strconv.Itoa(n),
			"GRAPHMILL_CUTLINK_MASTER=127.0.0.1", "GRAPHMILL_CUTLINK_BIND=127.0.0.1", TokenEnv + "=" + secret}, running)
	}
	waitRunning(t, procs, running)
	if transport := procs[0].result(); transport != "TRANSPORT shared memory" {
		t.Errorf("rank 0: %q, want shared memory between local processes", transport)
	}
	if err := procs[1].cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	dt := waitEnded(t, procs, "rank 1 was killed")
	t.Logf("every rank ended %v after rank 1 was killed", dt.Round(time.Millisecond))
	if dt > 10*time.Second {
		t.Errorf("took %v, want at most 10 s", dt)
	}
	for r, p := range procs {
		if r == 1 {
			continue
		}
		l := p.result()
		t.Logf("rank %d: %s", r, l)
		if !strings.HasPrefix(l, "ERROR") || !strings.Contains(l, "rank 1") || !strings.Contains(l, "all-reduce #") {
			t.Errorf("rank %d: %q, want an all-reduce error naming rank 1", r, l)
		}
	}
}

// rankHelper is one TestRankHelper process of a multi-process test.
type rankHelper struct {
	cmd  *exec.Cmd
	done chan struct{} // closed once its output is read and it has exited
	mu   sync.Mutex
	last string // its TRANSPORT line, then its latest ERROR or JOIN-ERROR line
}

// startRankHelper starts rank r's TestRankHelper: argv runs the test
// binary (itself, or through a command such as "ip netns exec NS"), env is
// added to this process's environment. r is sent on running when the rank
// prints RUNNING. The process is killed at cleanup if still running.
func startRankHelper(t *testing.T, r int, argv, env []string, running chan<- int) *rankHelper {
	t.Helper()
	cmd := exec.Command(argv[0], append(argv[1:], "-test.run=^TestRankHelper$")...)
	cmd.Env = append(append(os.Environ(), cutHelperEnv+"="+strconv.Itoa(r)), env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &rankHelper{cmd: cmd, done: make(chan struct{})}
	lines := make(chan struct{})
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			l := sc.Text()
			if l == "RUNNING" {
				running <- r
			}
			p.mu.Lock()
			if strings.HasPrefix(l, "ERROR") || strings.HasPrefix(l, "JOIN-ERROR") || strings.HasPrefix(l, "TRANSPORT") && p.last == "" {
				p.last = l
			}
			p.mu.Unlock()
		}
	}()
	go func() { <-lines; cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// result returns the rank's TRANSPORT line, or its latest error line.
func (p *rankHelper) result() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.last
}

// waitRunning waits until every rank has printed RUNNING (60 s at most).
func waitRunning(t *testing.T, procs []*rankHelper, running <-chan int) {
	t.Helper()
	for range procs {
		select {
		case <-running:
		case <-time.After(60 * time.Second):
			res := make([]string, len(procs))
			for r, p := range procs {
				res[r] = p.result()
			}
			t.Fatalf("ranks did not start all-reducing within 60 s: %q", res)
		}
	}
}

// waitEnded waits until every rank process has ended (15 s at most after
// the event named by after) and returns how long that took.
func waitEnded(t *testing.T, procs []*rankHelper, after string) time.Duration {
	t.Helper()
	t0 := time.Now()
	for r, p := range procs {
		select {
		case <-p.done:
		case <-time.After(time.Until(t0.Add(15 * time.Second))):
			t.Fatalf("rank %d still running 15 s after %s", r, after)
		}
	}
	return time.Since(t0)
}

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
	type proc struct {
		cmd  *exec.Cmd
		done chan struct{}
	}
	var mu sync.Mutex
	last := make([]string, n)
	running := make(chan int, n)
	procs := make([]*proc, n)
	for r := range n {
		cmd := exec.Command(os.Args[0], "-test.run=^TestRankHelper$")
		cmd.Env = append(os.Environ(), cutHelperEnv+"="+strconv.Itoa(r), "GRAPHMILL_CUTLINK_PORT="+strconv.Itoa(port), "GRAPHMILL_CUTLINK_SIZE="+strconv.Itoa(n),
			"GRAPHMILL_CUTLINK_MASTER=127.0.0.1", "GRAPHMILL_CUTLINK_BIND=127.0.0.1", TokenEnv+"="+secret)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		p := &proc{cmd: cmd, done: make(chan struct{})}
		procs[r] = p
		lines := make(chan struct{})
		go func() {
			defer close(lines)
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				l := sc.Text()
				if l == "RUNNING" {
					running <- r
				}
				mu.Lock()
				if strings.HasPrefix(l, "ERROR") || strings.HasPrefix(l, "JOIN-ERROR") || last[r] == "" {
					last[r] = l
				}
				mu.Unlock()
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
	}
	for range n {
		select {
		case <-running:
		case <-time.After(60 * time.Second):
			mu.Lock()
			defer mu.Unlock()
			t.Fatalf("ranks did not start all-reducing within 60 s: %q", last)
		}
	}
	mu.Lock()
	transport := last[0]
	mu.Unlock()
	if transport != "TRANSPORT shared memory" {
		t.Errorf("rank 0: %q, want shared memory between local processes", transport)
	}
	if err := procs[1].cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	for r, p := range procs {
		select {
		case <-p.done:
		case <-time.After(time.Until(t0.Add(15 * time.Second))):
			t.Fatalf("rank %d still running 15 s after rank 1 was killed", r)
		}
	}
	dt := time.Since(t0)
	t.Logf("every rank ended %v after rank 1 was killed", dt.Round(time.Millisecond))
	if dt > 10*time.Second {
		t.Errorf("took %v, want at most 10 s", dt)
	}
	mu.Lock()
	defer mu.Unlock()
	for r, l := range last {
		if r == 1 {
			continue
		}
		t.Logf("rank %d: %s", r, l)
		if !strings.HasPrefix(l, "ERROR") || !strings.Contains(l, "rank 1") || !strings.Contains(l, "all-reduce #") {
			t.Errorf("rank %d: %q, want an all-reduce error naming rank 1", r, l)
		}
	}
}

package dist

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The cut-link test: three ranks in two network namespaces joined by a
// veth pair (ranks 0 and 1 in one, so through shared memory to each
// other, rank 2 in the other), all-reducing in a loop; the link is taken
// down mid-run. Every rank must end with an
// error naming a rank across the cut within 10 s, and nothing may hang.
// It needs root and iproute2's ip; it sends traffic only between its own
// namespaces.

func TestCutLinkBetweenNamespaces(t *testing.T) {
	if os.Getenv(cutHelperEnv) != "" {
		t.Skip("in a helper")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root (network namespaces)")
	}
	ipPath, err := exec.LookPath("ip")
	if err != nil {
		t.Skip("needs iproute2's ip")
	}
	ip := func(args ...string) error {
		out, err := exec.Command(ipPath, args...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	id := strconv.Itoa(os.Getpid() % 100000)
	nsA, nsB := "gm-cut-a-"+id, "gm-cut-b-"+id
	vA, vB := "gmca"+id, "gmcb"+id
	if err := ip("netns", "add", nsA); err != nil {
		t.Skipf("cannot create network namespaces here: %v", err)
	}
	t.Cleanup(func() { ip("netns", "del", nsA) })
	if err := ip("netns", "add", nsB); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ip("netns", "del", nsB) })
	addrA, addrB := "10.213.77.1", "10.213.77.2"
	for _, args := range [][]string{
		{"link", "add", vA, "netns", nsA, "type", "veth", "peer", "name", vB, "netns", nsB},
		{"-n", nsA, "addr", "add", addrA + "/24", "dev", vA},
		{"-n", nsB, "addr", "add", addrB + "/24", "dev", vB},
		{"-n", nsA, "link", "set", "lo", "up"},
		{"-n", nsB, "link", "set", "lo", "up"},
		{"-n", nsA, "link", "set", vA, "up"},
		{"-n", nsB, "link", "set", vB, "up"},
	} {
		if err := ip(args...); err != nil {
			t.Fatal(err)
		}
	}

	type rankProc struct {
		cmd   *exec.Cmd
		lines chan string
		done  chan struct{}
		last  string
	}
	secret := NewSecret()
	procs := make([]*rankProc, 3)
	for r, ns := range []string{nsA, nsA, nsB} {
		bind := addrA
		if ns == nsB {
			bind = addrB
		}
		cmd := exec.Command(ipPath, "netns", "exec", ns, os.Args[0], "-test.run=^TestRankHelper$")
		cmd.Env = append(os.Environ(), cutHelperEnv+"="+strconv.Itoa(r), "GRAPHMILL_CUTLINK_PORT=29517", "GRAPHMILL_CUTLINK_SIZE=3", "GRAPHMILL_CUTLINK_MASTER="+addrA,
			"GRAPHMILL_CUTLINK_BIND="+bind, TokenEnv+"="+secret)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		p := &rankProc{cmd: cmd, lines: make(chan string, 100), done: make(chan struct{})}
		procs[r] = p
		go func() {
			defer close(p.lines)
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				p.lines <- sc.Text()
			}
		}()
		go func() { cmd.Wait(); close(p.done) }()
		t.Cleanup(func() {
			select {
			case <-p.done:
			default:
				cmd.Process.Kill()
				<-p.done
			}
		})
	}
	// wait until every rank is all-reducing
	var mu sync.Mutex
	results := make([]string, 3)
	running := make(chan int, 3)
	for r, p := range procs {
		go func() {
			for l := range p.lines {
				if l == "RUNNING" {
					running <- r
				}
				if strings.HasPrefix(l, "ERROR") || strings.HasPrefix(l, "JOIN-ERROR") || strings.HasPrefix(l, "TRANSPORT") {
					mu.Lock()
					if !strings.HasPrefix(l, "TRANSPORT") || results[r] == "" {
						results[r] = l
					}
					mu.Unlock()
				}
			}
		}()
	}
	for range 3 {
		select {
		case <-running:
		case <-time.After(60 * time.Second):
			mu.Lock()
			defer mu.Unlock()
			t.Fatalf("ranks did not start all-reducing within 60 s: %q", results)
		}
	}
	mu.Lock()
	for r, want := range []string{"shared memory with ranks 0, 1 on this host, tcp with the others", "shared memory with ranks 0, 1 on this host, tcp with the others", "tcp (no other rank on this host)"} {
		if results[r] != "TRANSPORT "+want {
			t.Errorf("rank %d: %q, want %q (ranks 0 and 1 share a namespace)", r, results[r], want)
		}
	}
	mu.Unlock()
	// cut the link mid all-reduce
	if err := ip("-n", nsB, "link", "set", vB, "down"); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	for r, p := range procs {
		select {
		case <-p.done:
		case <-time.After(time.Until(t0.Add(15 * time.Second))):
			t.Fatalf("rank %d still running 15 s after the link was cut", r)
		}
	}
	dt := time.Since(t0)
	t.Logf("every rank failed %v after the cut", dt.Round(time.Millisecond))
	if dt > 10*time.Second {
		t.Errorf("took %v to fail every rank, want at most 10 s", dt)
	}
	time.Sleep(100 * time.Millisecond) // the readers' last lines
	mu.Lock()
	defer mu.Unlock()
	for r, l := range results {
		t.Logf("rank %d: %s", r, l)
		across := "rank 2"
		if r == 2 {
			across = "rank 0"
			if !strings.Contains(l, across) {
				across = "rank 1"
			}
		}
		if !strings.HasPrefix(l, "ERROR") || !strings.Contains(l, across) || !strings.Contains(l, "all-reduce #") {
			t.Errorf("rank %d: %q, want an all-reduce error naming %s", r, l, across)
		}
		if code := procs[r].cmd.ProcessState.ExitCode(); code != 2 {
			t.Errorf("rank %d exited with %d", r, code)
		}
	}
}

package dist

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
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

	secret := NewSecret()
	running := make(chan int, 3)
	procs := make([]*rankHelper, 3)
	for r, ns := range []string{nsA, nsA, nsB} {
		bind := addrA
		if ns == nsB {
			bind = addrB
		}
		procs[r] = startRankHelper(t, r, []string{ipPath, "netns", "exec", ns, os.Args[0]}, []string{"GRAPHMILL_CUTLINK_PORT=29517", "GRAPHMILL_CUTLINK_SIZE=3",
			"GRAPHMILL_CUTLINK_MASTER=" + addrA, "GRAPHMILL_CUTLINK_BIND=" + bind, TokenEnv + "=" + secret}, running)
	}
	// wait until every rank is all-reducing
	waitRunning(t, procs, running)
	for r, want := range []string{"shared memory with ranks 0, 1 on this host, tcp with the others", "shared memory with ranks 0, 1 on this host, tcp with the others", "tcp (no other rank on this host)"} {
		if got := procs[r].result(); got != "TRANSPORT "+want {
			t.Errorf("rank %d: %q, want %q (ranks 0 and 1 share a namespace)", r, got, want)
		}
	}
	// cut the link mid all-reduce
	if err := ip("-n", nsB, "link", "set", vB, "down"); err != nil {
		t.Fatal(err)
	}
	dt := waitEnded(t, procs, "the link was cut")
	t.Logf("every rank failed %v after the cut", dt.Round(time.Millisecond))
	if dt > 10*time.Second {
		t.Errorf("took %v to fail every rank, want at most 10 s", dt)
	}
	for r, p := range procs {
		l := p.result()
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

package dist

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"
)

// TestShmFallsBackToTCP: when the segment cannot be created, every rank
// says why and runs on TCP.
func TestShmFallsBackToTCP(t *testing.T) {
	old := shmDir
	shmDir = "/nonexistent-graphmill-shm"
	defer func() { shmDir = old }()
	var logged []string
	var mu sync.Mutex
	gs := group(t, 3, Options{Security: &Security{Secret: []byte("s"), Log: func(s string) { mu.Lock(); logged = append(logged, s); mu.Unlock() }}})
	for r, g := range gs {
		if !strings.HasPrefix(g.Transport(), "tcp (shared memory failed on rank 0: creating /nonexistent-graphmill-shm/") {
			t.Errorf("rank %d: transport %q", r, g.Transport())
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(logged) != 3 {
		t.Errorf("logged %q, want one line per rank", logged)
	}
	errs, _ := each(gs, func(g *TCP) error {
		x := []float64{1, 2}
		if err := g.AllReduce(context.Background(), x, Sum); err != nil {
			return err
		}
		if x[1] != 6 {
			t.Errorf("sum %v", x)
		}
		return nil
	})
	for r, err := range errs {
		if err != nil {
			t.Errorf("rank %d: %v", r, err)
		}
	}
}

// TestShmSegmentUnlinked: once the group is up, nothing of it is left in
// /dev/shm (a crash cannot leak it).
func TestShmSegmentUnlinked(t *testing.T) {
	before, _ := os.ReadDir(shmDir)
	gs := group(t, 2, Options{})
	if gs[0].Transport() != "shared memory" {
		t.Fatalf("transport %q", gs[0].Transport())
	}
	after, _ := os.ReadDir(shmDir)
	names := map[string]bool{}
	for _, e := range before {
		names[e.Name()] = true
	}
	for _, e := range after {
		if !names[e.Name()] && strings.HasPrefix(e.Name(), "graphmill-dist-") {
			t.Errorf("%s left in %s", e.Name(), shmDir)
		}
	}
}

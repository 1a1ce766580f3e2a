package dist_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/graphmill/graphmill/dist"
	"github.com/graphmill/graphmill/dist/disttest"
)

// TestShmAcrossHosts: ranks on two "hosts" (even ranks on one, odd on
// the other): each host's ranks send their messages and collective
// traffic to each other through their segment's rings, the hosts talk
// over TCP; the conformance suite passes, and a rank alone on its host
// runs on TCP.
func TestShmAcrossHosts(t *testing.T) {
	dist.SetTestHostKey(func(r int) string { return []string{"A", "B"}[r%2] })
	defer dist.SetTestHostKey(nil)
	for _, tc := range []struct {
		n    int
		want []string
	}{
		{5, []string{"shared memory with ranks 0, 2, 4 on this host, tcp with the others", "shared memory with ranks 1, 3 on this host, tcp with the others"}},
		{3, []string{"shared memory with ranks 0, 2 on this host, tcp with the others", "tcp (no other rank on this host)"}},
	} {
		if testing.Short() && tc.n > 3 {
			continue
		}
		t.Run(fmt.Sprintf("%d ranks", tc.n), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			gs, err := dist.LocalGroup(ctx, tc.n, dist.Options{ShmRingBytes: 4096, OpTimeout: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			defer closeAll(gs)
			for r, w := range tc.want {
				if gs[r].Transport() != w {
					t.Errorf("rank %d: transport %q, want %q", r, gs[r].Transport(), w)
				}
			}
			for r, err := range runAll(t, gs, func(c dist.Comm) error { return disttest.Run(ctx, c) }) {
				if err != nil {
					t.Errorf("rank %d: %v", r, err)
				}
			}
		})
	}
}

package dist_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/graphmill/graphmill/dist"
	"github.com/graphmill/graphmill/dist/disttest"
)

// runAll runs f on every rank of a local group and returns the errors.
func runAll(t *testing.T, gs []*dist.TCP, f func(c dist.Comm) error) []error {
	t.Helper()
	errs := make([]error, len(gs))
	var wg sync.WaitGroup
	for r, g := range gs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[r] = f(g)
		}()
	}
	wg.Wait()
	return errs
}

func closeAll(gs []*dist.TCP) {
	var wg sync.WaitGroup
	for _, g := range gs {
		wg.Add(1)
		go func() { defer wg.Done(); g.Close() }()
	}
	wg.Wait()
}

func TestConformanceTCP(t *testing.T) {
	cases := []struct {
		n     int
		opts  dist.Options
		label string
	}{
		{1, dist.Options{}, "defaults"},
		{2, dist.Options{}, "shared memory"},
		{3, dist.Options{}, "shared memory"},
		{4, dist.Options{}, "shared memory"},
		{3, dist.Options{ShmSlotBytes: 4096, SmallBytes: 512}, "shared memory, small slots"},
		{2, dist.Options{NoSharedMemory: true}, "tcp"},
		{3, dist.Options{NoSharedMemory: true}, "tcp"},
		{4, dist.Options{NoSharedMemory: true}, "tcp"},
		{5, dist.Options{NoSharedMemory: true, ChunkBytes: 4 << 10, SmallBytes: 512}, "tcp, small chunks"},
	}
	if testing.Short() {
		cases = []struct {
			n     int
			opts  dist.Options
			label string
		}{cases[2], cases[4], cases[6]}
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%d ranks %s", tc.n, tc.label), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			tc.opts.OpTimeout = time.Minute
			gs, err := dist.LocalGroup(ctx, tc.n, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			defer closeAll(gs)
			want := "shared memory"
			if tc.opts.NoSharedMemory {
				want = "tcp (shared memory turned off)"
			}
			if tc.n > 1 && gs[0].Transport() != want {
				t.Fatalf("transport %q, want %q", gs[0].Transport(), want)
			}
			for r, err := range runAll(t, gs, func(c dist.Comm) error { return disttest.Run(ctx, c) }) {
				if err != nil {
					t.Errorf("rank %d: %v", r, err)
				}
			}
		})
	}
}

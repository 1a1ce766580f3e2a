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
		{2, dist.Options{}, "defaults"},
		{3, dist.Options{}, "defaults"},
		{4, dist.Options{}, "defaults"},
		{5, dist.Options{ChunkBytes: 4 << 10, SmallBytes: 512}, "small chunks"},
	}
	if testing.Short() {
		cases = cases[1:3]
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
			for r, err := range runAll(t, gs, func(c dist.Comm) error { return disttest.Run(ctx, c) }) {
				if err != nil {
					t.Errorf("rank %d: %v", r, err)
				}
			}
		})
	}
}

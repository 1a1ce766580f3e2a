package comm

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/graphmill/graphmill/dist"
)

func TestMeasure(t *testing.T) {
	for _, o := range []dist.Options{{}, {NoSharedMemory: true}} {
		gs, err := dist.LocalGroup(context.Background(), 2, o)
		if err != nil {
			t.Fatal(err)
		}
		pts := make([][]Point, 2)
		errs := make([]error, 2)
		var wg sync.WaitGroup
		for r, g := range gs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer g.Close()
				pts[r], errs[r] = Measure(context.Background(), g, "go", []int64{4096, 1 << 20}, 10*time.Millisecond)
			}()
		}
		wg.Wait()
		for r, err := range errs {
			if err != nil {
				t.Fatalf("rank %d: %v", r, err)
			}
		}
		if pts[1] != nil || len(pts[0]) != 4 {
			t.Fatalf("rank 0 has %d points, rank 1 %d: want 4 and none", len(pts[0]), len(pts[1]))
		}
		for _, p := range pts[0] {
			if p.Ranks != 2 || p.Seconds <= 0 || p.BusGBps <= 0 || p.Iters < 3 {
				t.Errorf("%s: %+v", gs[0].Transport(), p)
			}
			want := 2 * 0.5 * float64(p.Bytes) / p.Seconds / 1e9
			if p.Op == "all-to-all-v" {
				want /= 2
			}
			if d := p.BusGBps - want; d > 1e-9 || d < -1e-9 {
				t.Errorf("%s %d bytes: bus bandwidth %v, want %v", p.Op, p.Bytes, p.BusGBps, want)
			}
		}
	}
}

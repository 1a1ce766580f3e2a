package comm

import (
	"context"
	"strings"
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

// TestMPIRatiosText checks the pure-Go / Open MPI line for size sets that
// leave some ratios unmeasured: "-" for each, with a note saying why,
// never a panic on a missing ratio.
func TestMPIRatiosText(t *testing.T) {
	pts := func(sizes ...int64) []Point {
		var out []Point
		for _, b := range sizes {
			for _, op := range []string{"all-reduce", "all-to-all-v"} {
				out = append(out, Point{Backend: "go", Ranks: 2, Op: op, Bytes: b, Seconds: 2e-3, BusGBps: 1},
					Point{Backend: "mpi", Ranks: 2, Op: op, Bytes: b, Seconds: 1e-3, BusGBps: 2})
			}
		}
		return out
	}
	for _, c := range []struct {
		name      string
		rep       commReport
		want, not []string
	}{
		{name: "no 4 KiB size", rep: commReport{MPI: true, Points: pts(1<<20, 16<<20)},
			want: []string{">= 1 MiB 0.50 (smallest), all-to-all-v 0.50, all-reduce latency at 4 KiB -\n", "needs the 4 KiB size"}},
		{name: "no size of 1 MiB", rep: commReport{MPI: true, Points: pts(4 << 10)},
			want: []string{">= 1 MiB - (smallest), all-to-all-v -, all-reduce latency at 4 KiB 2.00x\n", "need a size of at least 1 MiB"}},
		{name: "all measured", rep: commReport{MPI: true, Points: pts(4<<10, 1<<20)},
			want: []string{">= 1 MiB 0.50 (smallest), all-to-all-v 0.50, all-reduce latency at 4 KiB 2.00x\n"}, not: []string{"not measured"}},
		{name: "an Open MPI figure of 0", rep: commReport{MPI: true, Points: append(pts(4<<10), Point{Backend: "go", Ranks: 2, Op: "all-reduce", Bytes: 1 << 20, BusGBps: 1}, Point{Backend: "mpi", Ranks: 2, Op: "all-reduce", Bytes: 1 << 20})},
			want: []string{">= 1 MiB - (smallest)"}, not: []string{"+Inf", "NaN"}},
		{name: "without MPI", rep: commReport{Note: "built without -tags mpi", Points: pts(4 << 10)},
			want: []string{"built without -tags mpi"}, not: []string{"pure Go / Open MPI"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.rep.MPI {
				c.rep.setMPIRatios()
			}
			var b strings.Builder
			printComm(&b, &c.rep)
			for _, w := range c.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("text lacks %q:\n%s", w, b.String())
				}
			}
			for _, w := range c.not {
				if strings.Contains(b.String(), w) {
					t.Errorf("text has %q:\n%s", w, b.String())
				}
			}
		})
	}
}

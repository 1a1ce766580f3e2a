package membench

import (
	"fmt"
	"testing"
	"time"

	"github.com/graphmill/graphmill/internal/hugemem"
)

func TestMeasurements(t *testing.T) {
	a, free := hugemem.Alloc[uint32](1 << 20)
	defer free()
	for i := range a {
		if a[i] != 0 {
			t.Fatal("AllocHuge memory is not zeroed")
		}
		a[i] = uint32(i)
	}
	table := make([]float32, 4096*16)
	for _, tc := range []struct {
		name string
		r    Result
	}{
		{"reads", RandomReads(a, 2, 10*time.Millisecond)},
		{"copy", SeqCopy(1<<20, 1, 10*time.Millisecond)},
		{"rows", RandomRows(table, 16, 2048, 2, 10*time.Millisecond)},
		{"half rows", RandomRowBytes(make([]byte, 4096*32), 32, 2048, 2, 10*time.Millisecond)},
		{"arithmetic", Arithmetic(2, 10*time.Millisecond)},
	} {
		r := tc.r
		if r.Ops <= 0 || r.PerSec <= 0 || r.CPUPerSec <= 0 || r.Elapsed < 10*time.Millisecond {
			t.Errorf("%s: %+v", tc.name, r)
		}
	}
}

func TestWork(t *testing.T) {
	r := Work(3, func(w int) int64 { return int64(w + 1) })
	if r.Ops != 6 || r.Workers != 3 {
		t.Fatalf("Work summed %d ops over %d workers, want 6 over 3", r.Ops, r.Workers)
	}
}

func TestAdd(t *testing.T) {
	a := result([]int64{10, 20}, []time.Duration{time.Second, 2 * time.Second}, time.Second)
	b := result([]int64{30, 20}, []time.Duration{time.Second, 2 * time.Second}, 3*time.Second)
	c := Result{}.Add(a).Add(b)
	// Worker 0: 40 ops in 2 s; worker 1: 40 ops in 4 s.
	if c.Ops != 80 || c.Elapsed != 4*time.Second || c.PerSec != 20 || c.CPUPerSec != 30 || c.Workers != 2 {
		t.Fatalf("Add: %+v", c)
	}
}

func TestPaired(t *testing.T) {
	var slices []time.Duration
	w, c := Paired(3, func(round int) Result {
		return result([]int64{int64(round + 1)}, []time.Duration{10 * time.Millisecond}, time.Duration(round+1)*10*time.Millisecond)
	}, func(d time.Duration) Result {
		slices = append(slices, d)
		return result([]int64{100}, []time.Duration{d}, d)
	})
	if w.Ops != 6 || w.Elapsed != 60*time.Millisecond {
		t.Errorf("work: %+v", w)
	}
	// Each ceiling slice lasts as long as the round before it.
	if len(slices) != 3 || slices[0] != 10*time.Millisecond || slices[2] != 30*time.Millisecond {
		t.Errorf("ceiling slices %v", slices)
	}
	if c.Ops != 300 || c.CPUPerSec != 300/0.06 {
		t.Errorf("ceiling: %+v", c)
	}
}

// TestPairedSet: contenders take turns within each round, each followed
// by its own ceiling for as long as its work took.
func TestPairedSet(t *testing.T) {
	var order []string
	work := func(name string, ms int) func(int) Result {
		return func(round int) Result {
			order = append(order, name)
			d := time.Duration(ms) * time.Millisecond
			return result([]int64{int64(round + 1)}, []time.Duration{d}, d)
		}
	}
	ceiling := func(name string) func(time.Duration) Result {
		return func(d time.Duration) Result {
			order = append(order, fmt.Sprintf("%s %v", name, d))
			return result([]int64{1}, []time.Duration{d}, d)
		}
	}
	w, c := PairedSet(2, []func(int) Result{work("a", 10), work("b", 2)}, []func(time.Duration) Result{ceiling("ca"), ceiling("cb")})
	want := []string{"a", "ca 10ms", "b", "cb 5ms", "a", "ca 10ms", "b", "cb 5ms"}
	if fmt.Sprint(order) != fmt.Sprint(want) {
		t.Errorf("order %q, want %q", order, want)
	}
	if len(w) != 2 || w[0].Ops != 3 || w[1].Ops != 3 || w[1].Elapsed != 4*time.Millisecond {
		t.Errorf("work results %+v", w)
	}
	if len(c) != 2 || c[0].Elapsed != 20*time.Millisecond || c[1].Elapsed != 10*time.Millisecond {
		t.Errorf("ceiling results %+v", c)
	}
}

// TestLoadLatency: a chase through 16 KiB (the core's L1 on any machine
// here) is several times faster than one through 128 MiB (beyond any last-
// level cache a 2-core VM gets).
func TestLoadLatency(t *testing.T) {
	l1 := LoadLatency(16<<10, 1<<18)
	mem := LoadLatency(128<<20, 1<<17)
	if !(l1 > 0 && mem > 3*l1) {
		t.Fatalf("load latency %.1f ns over 16 KiB, %.1f ns over 128 MiB: want the second over 3x the first", l1, mem)
	}
}

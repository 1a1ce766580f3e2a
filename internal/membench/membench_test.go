package membench

import (
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

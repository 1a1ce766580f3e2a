package cli

import (
	"testing"
	"time"
)

// TestRate: rates are averages in the bar's unit with the time left; slow
// ones are given as time per unit (no "0 it/s", no "42024 it/s" for 200
// epochs).
func TestRate(t *testing.T) {
	for _, c := range []struct {
		n, total int64
		el       time.Duration
		unit     string
		want     string
	}{
		{50, 200, 2 * time.Second, "epochs", "25 epochs/s, 6s left"},
		{3_000_000, 10_000_000, time.Second, "nodes", "3M nodes/s, 2.33s left"},
		{1, 10, 4 * time.Second, "epochs", "0.25 epochs/s, 36s left"},
		{1, 0, 20 * time.Second, "epochs", "20s per epoch"},
		{0, 10, time.Second, "epochs", ""},
		{10, 10, time.Second, "parts", "10 parts/s"},
	} {
		if got := Rate(c.n, c.total, c.el, c.unit); got != c.want {
			t.Errorf("Rate(%d, %d, %v, %s) = %q, want %q", c.n, c.total, c.el, c.unit, got, c.want)
		}
	}
}

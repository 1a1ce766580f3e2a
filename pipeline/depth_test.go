package pipeline

import (
	"context"
	"testing"
	"time"

	"github.com/graphmill/graphmill/batch"
)

func TestDepthFor(t *testing.T) {
	ms := time.Millisecond
	rep := func(d time.Duration, n int) []time.Duration {
		out := make([]time.Duration, n)
		for i := range out {
			out[i] = d
		}
		return out
	}
	// Every 8th preparation is slow: 4 steps' time.
	spiky := func(fast, slow time.Duration) []time.Duration {
		out := rep(fast, 32)
		for i := 0; i < 32; i += 8 {
			out[i] = slow
		}
		return out
	}
	for _, c := range []struct {
		name         string
		preps, steps []time.Duration
		want         int
	}{
		{"preparing within a step", rep(5*ms, 32), rep(10*ms, 32), 2},
		{"preparation the bottleneck", rep(30*ms, 32), rep(10*ms, 32), 2},
		{"slow batches, fast on average", spiky(2*ms, 40*ms), rep(10*ms, 32), 5},
		{"slow batches, slower on average", spiky(20*ms, 80*ms), rep(10*ms, 32), 2},
		{"a slow batch just over a step", spiky(1*ms, 11*ms), rep(10*ms, 32), 3},
	} {
		if got := depthFor(c.preps, c.steps); got != c.want {
			t.Errorf("%s: %d buffers, want %d", c.name, got, c.want)
		}
	}
}

// TestDepthGrows runs a pipeline whose second stage is slow on every 8th
// batch (40 ms, four steps of 10 ms) and fast otherwise: with MaxBuffers
// the epoch grows its buffers so that batches prepared ahead cover the slow
// ones, and never beyond MaxBuffers; a uniformly fast stage keeps two.
// The uniform stage does not sleep at all: a 1 ms sleep took over a
// step's 10 ms often enough on a loaded machine (CI compiling beside it)
// to read as slow batches, which rightly grows the buffers.
func TestDepthGrows(t *testing.T) {
	for _, c := range []struct {
		name           string
		fast, slow     time.Duration
		max, min, most int
	}{
		{"spiky", time.Millisecond, 40 * time.Millisecond, 4, 4, 4},
		{"spiky, more allowed", time.Millisecond, 40 * time.Millisecond, 16, 4, 6},
		{"uniform", 0, 0, 8, 2, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := New(Config{Buffers: 2, Prefetch: 1, MaxBuffers: c.max, Stages: []Stage{
				{Name: "sample", Workers: 1, Run: fill},
				{Name: "read", Run: func(ctx context.Context, i int, mb *batch.MiniBatch) error {
					d := c.fast
					if i%8 == 0 {
						d = c.slow
					}
					if d > 0 {
						time.Sleep(d)
					}
					return nil
				}},
			}})
			if err != nil {
				t.Fatal(err)
			}
			it := p.Epoch(context.Background(), 0, 48)
			defer it.Close()
			for it.Next() {
				time.Sleep(10 * time.Millisecond)
				it.Batch().Release()
			}
			if err := it.Err(); err != nil {
				t.Fatal(err)
			}
			if b := it.Stats().Buffers; b < c.min || b > c.most {
				t.Errorf("%d buffers at the end, want %d to %d", b, c.min, c.most)
			}
		})
	}
}

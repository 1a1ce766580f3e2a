package pipeline

import (
	"slices"
	"sync"
	"time"
)

// depthWindow is the number of recent batches depthLog sizes the depth
// from, and depthWarmup the number it waits for first.
const (
	depthWindow = 32
	depthWarmup = 8
)

// depthLog keeps the last preparation times of the later stages (each
// batch's, e.g. reading its rows from disk) and the consumer's last step
// times, and sizes the buffers from them (want).
type depthLog struct {
	mu           sync.Mutex
	preps, steps []time.Duration
	np, ns       int // counts so far (the slices are rings)
}

func (l *depthLog) prep(d time.Duration) {
	l.mu.Lock()
	l.preps = ring(l.preps, l.np, d)
	l.np++
	l.mu.Unlock()
}

// step records a step (called by the consumer's goroutine only).
func (l *depthLog) step(d time.Duration) {
	l.mu.Lock()
	l.steps = ring(l.steps, l.ns, d)
	l.ns++
	l.mu.Unlock()
}

func ring(r []time.Duration, n int, d time.Duration) []time.Duration {
	if len(r) < depthWindow {
		return append(r, d)
	}
	r[n%depthWindow] = d
	return r
}

// want returns the buffers the recent times call for: 2 (one batch
// stepping, the next being prepared) when preparing takes longer than a
// step on average (the preparation is the bottleneck: reads then run back
// to back, and batches held beyond that only take memory), or when every
// batch is prepared within a step; otherwise 1 + ceil(slow / step), where
// slow is the 90th percentile of the preparation times and step the
// median step, so that the batches prepared ahead last while a slow one is
// prepared. 0 until depthWarmup batches are measured.
func (l *depthLog) want() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.np < depthWarmup || l.ns < depthWarmup {
		return 0
	}
	return depthFor(l.preps, l.steps)
}

// depthFor is want's rule on the given times.
func depthFor(preps, steps []time.Duration) int {
	p, s := slices.Clone(preps), slices.Clone(steps)
	slices.Sort(p)
	slices.Sort(s)
	var sum time.Duration
	for _, d := range p {
		sum += d
	}
	step := s[len(s)/2]
	if step <= 0 || sum/time.Duration(len(p)) >= step {
		return 2
	}
	slow := p[len(p)*9/10]
	return 1 + int((slow+step-1)/step)
}

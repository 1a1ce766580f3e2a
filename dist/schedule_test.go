package dist

import (
	"fmt"
	"math"
	"sync"
	"testing"
)

// runSchedules runs every rank's schedule over an in-memory network (a
// queue per ordered pair of ranks): segment j of rank r's buffer is
// bufs[r][j] (seg -1: every segment), reduction is addition. It fails the
// test when a receive finds nothing queued (a send missing), and returns
// the messages still queued (receives missing).
func runSchedules(t *testing.T, bufs [][]float64, sched func(rank int) []action) int {
	t.Helper()
	n := len(bufs)
	type msg struct{ seg []float64 }
	var mu sync.Mutex
	queues := map[[2]int][]msg{}
	// Ranks run in turn, each until it would wait for a message: the
	// schedules must not deadlock, whatever the interleaving.
	pos := make([]int, n)
	segs := func(r, j int) []float64 {
		if j < 0 {
			return bufs[r]
		}
		return bufs[r][j : j+1]
	}
	send := func(from, to int, b []float64) {
		mu.Lock()
		defer mu.Unlock()
		queues[[2]int{from, to}] = append(queues[[2]int{from, to}], msg{append([]float64(nil), b...)})
	}
	for progress := true; progress; {
		progress = false
		for r := range n {
			s := sched(r)
			for pos[r] < len(s) {
				a := s[pos[r]]
				b := segs(r, a.seg)
				if a.kind == actSend {
					send(r, a.peer, b)
					pos[r]++
					progress = true
					continue
				}
				q := queues[[2]int{a.peer, r}]
				if len(q) == 0 {
					break // waits for the peer
				}
				m := q[0]
				queues[[2]int{a.peer, r}] = q[1:]
				if len(m.seg) != len(b) {
					t.Fatalf("rank %d step %d: received %d values for %d", r, pos[r], len(m.seg), len(b))
				}
				for i := range b {
					if a.kind == actRecvReduce {
						b[i] += m.seg[i]
					} else {
						b[i] = m.seg[i]
					}
				}
				if a.forward >= 0 {
					send(r, a.forward, b)
				}
				pos[r]++
				progress = true
			}
		}
	}
	for r := range n {
		if s := sched(r); pos[r] != len(s) {
			t.Fatalf("rank %d stopped at step %d of %d: a send is missing (deadlock)", r, pos[r], len(s))
		}
	}
	left := 0
	for _, q := range queues {
		left += len(q)
	}
	return left
}

// start gives rank r segment j the value (r+1)·1.1^j + 1/(r+3): sums
// whose floating-point result depends on the order of additions.
func start(n int) [][]float64 {
	bufs := make([][]float64, n)
	for r := range bufs {
		bufs[r] = make([]float64, n)
		for j := range bufs[r] {
			bufs[r][j] = float64(r+1)*math.Pow(1.1, float64(j)) + 1/float64(r+3)
		}
	}
	return bufs
}

func TestDoublingSchedule(t *testing.T) {
	for n := 1; n <= 9; n++ {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			bufs := start(n)
			want := make([]float64, n)
			for r := range bufs {
				for j, v := range bufs[r] {
					want[j] += v
				}
			}
			if left := runSchedules(t, bufs, func(r int) []action { return doublingSchedule(r, n) }); left != 0 {
				t.Fatalf("%d messages never received", left)
			}
			for r := range bufs {
				for j, v := range bufs[r] {
					if math.Abs(v-want[j]) > 1e-9*math.Abs(want[j]) {
						t.Fatalf("rank %d segment %d: %v, want %v", r, j, v, want[j])
					}
					if math.Float64bits(v) != math.Float64bits(bufs[0][j]) {
						t.Fatalf("rank %d segment %d: %v, rank 0 has %v: not bitwise the same", r, j, v, bufs[0][j])
					}
				}
			}
		})
	}
}

func TestRingSchedule(t *testing.T) {
	for n := 2; n <= 7; n++ {
		for _, c := range []struct {
			name   string
			rs, ag bool
		}{{"all-reduce", true, true}, {"reduce-scatter", true, false}, {"all-gather", false, true}} {
			t.Run(fmt.Sprintf("%s/%d", c.name, n), func(t *testing.T) {
				bufs := start(n)
				sum := make([]float64, n)
				for r := range bufs {
					for j, v := range bufs[r] {
						sum[j] += v
					}
				}
				own := make([]float64, n) // all-gather: rank j's own segment j
				for j := range own {
					own[j] = bufs[j][j]
				}
				if left := runSchedules(t, bufs, func(r int) []action { return ringSchedule(r, n, c.rs, c.ag) }); left != 0 {
					t.Fatalf("%d messages never received", left)
				}
				for r := range bufs {
					for j, v := range bufs[r] {
						switch {
						case c.rs && c.ag, c.rs && j == r:
							if math.Abs(v-sum[j]) > 1e-9*math.Abs(sum[j]) {
								t.Fatalf("rank %d segment %d: %v, want the sum %v", r, j, v, sum[j])
							}
						case !c.rs && v != own[j]:
							t.Fatalf("rank %d segment %d: %v, want rank %d's %v", r, j, v, j, own[j])
						}
						if c.rs && c.ag && math.Float64bits(v) != math.Float64bits(bufs[0][j]) {
							t.Fatalf("rank %d segment %d not bitwise rank 0's", r, j)
						}
					}
				}
			})
		}
	}
}

package sample

import (
	"slices"
	"testing"

	"github.com/graphmill/graphmill/internal/rng"
)

// checkTakeRing runs takeRing on a group of destinations with lists of
// the degrees ds (one after another in a neighbour array, from lo0 on),
// each drawing min(degree, k): by mask up to 64 neighbours, by positions
// in pos beyond. It wants takeRingGo's sources and positions, and nothing
// written outside the group's edges.
func checkTakeRing(t *testing.T, ds []int, k int, seed uint64, lo0 int64) {
	t.Helper()
	r := rng.New(seed)
	n := len(ds)
	total := lo0
	for _, d := range ds {
		total += int64(d)
	}
	ind := make([]int32, total)
	for i := range ind {
		ind[i] = int32(r.IntN(1 << 30))
	}
	span := make([]int64, 2*n)
	ring := make([]uint64, n)
	ip := make([]int64, n+1)
	ip[0] = int64(r.IntN(5)) // the group's edges start past others'
	var drawn []int64        // positions drawn for lists longer than 64
	lo := lo0
	for j, d := range ds {
		span[2*j], span[2*j+1] = lo, lo+int64(d)
		c := min(d, k)
		switch {
		case d <= k:
			ring[j] = 1<<d - 1
		case d <= 64:
			ring[j] = r.FloydMask(d, k)
		default:
			seen := map[int]bool{}
			for len(seen) < k {
				if t := r.IntN(d); !seen[t] {
					seen[t] = true
					drawn = append(drawn, lo+int64(t))
				}
			}
		}
		ip[j+1] = ip[j] + int64(c)
		lo += int64(d)
	}
	m := ip[n]
	const junk = -7
	pos := slices.Repeat([]int64{junk}, int(m)+3)
	q := 0
	for j, d := range ds {
		if d > 64 {
			copy(pos[ip[j]:ip[j+1]], drawn[q:q+k])
			q += k
		}
	}
	out := slices.Repeat([]int32{junk}, int(m)+3)
	w := slices.Repeat([]int64{junk}, int(m-ip[0])+3)
	takeRing(ind, span, ring, ip, out, pos, w)
	wantOut := slices.Repeat([]int32{junk}, int(m)+3)
	wantW := slices.Repeat([]int64{junk}, int(m-ip[0])+3)
	takeRingGo(ind, span, ring, ip, wantOut, pos, wantW[:m-ip[0]])
	if !slices.Equal(out, wantOut) || !slices.Equal(w, wantW) {
		t.Fatalf("degrees %v, k %d, lo %d: sources %v positions %v, want %v and %v", ds, k, lo0, out, w, wantOut, wantW)
	}
	for x := range ip[0] {
		if out[x] != junk {
			t.Fatalf("degrees %v: source written at %d, before the group's edges", ds, x)
		}
	}
}

// TestTakeRing checks takeRing (the amd64 kernel, or takeRingGo) against
// takeRingGo on groups of 1 to 16 destinations whose lists take every
// neighbour, a mask's (up to 64) or pick's positions (longer), with
// empty lists among them.
func TestTakeRing(t *testing.T) {
	r := rng.New(3)
	for _, k := range []int{1, 5, 8} {
		for trial := range 300 {
			ds := make([]int, 1+r.IntN(16))
			for j := range ds {
				switch r.IntN(5) {
				case 0:
					ds[j] = r.IntN(k + 1)
				case 1:
					ds[j] = 65 + r.IntN(100)
				case 2:
					ds[j] = 64
				default:
					ds[j] = k + 1 + r.IntN(64-k)
				}
			}
			checkTakeRing(t, ds, k, uint64(trial), int64(r.IntN(3)))
		}
	}
}

// FuzzTakeRing is TestTakeRing on groups from the input: a degree per
// byte (up to 16), k from the first.
func FuzzTakeRing(f *testing.F) {
	f.Add([]byte{5, 20, 3, 0, 64, 200})
	f.Add([]byte{1, 1, 2, 65})
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) < 2 {
			return
		}
		k := 1 + int(b[0])%aheadMaxDraws
		b = b[1:min(len(b), 17)]
		ds := make([]int, len(b))
		for j, x := range b {
			ds[j] = int(x)
		}
		checkTakeRing(t, ds, k, uint64(len(b)), 1)
	})
}

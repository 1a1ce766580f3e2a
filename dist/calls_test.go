package dist

import (
	"strings"
	"testing"
)

func TestCallSequence(t *testing.T) {
	var s callSeq
	a := s.next(KindAllReduce, Float32, Sum, 10)
	b := s.next(KindBarrier, Bytes, 0, 0)
	if a.seq != 0 || b.seq != 1 || uint64(s) != 2 {
		t.Fatalf("sequence numbers %d, %d, next %d", a.seq, b.seq, s)
	}
}

func TestCallMismatch(t *testing.T) {
	ar := callDesc{kind: KindAllReduce, seq: 4, dtype: Float32, op: Sum, count: 10}
	with := func(f func(*callDesc)) callDesc { d := ar; f(&d); return d }
	a2a := callDesc{kind: KindAllToAllV, seq: 2, dtype: Bytes, count: 3}
	for _, c := range []struct {
		name       string
		mine, peer callDesc
		want       string // "" for a match
	}{
		{"same call", ar, ar, ""},
		{"another sequence number", ar, with(func(d *callDesc) { d.seq = 5 }), "rank 1 called all-reduce #5 (sum, float32 × 10) while rank 0 called all-reduce #4 (sum, float32 × 10)"},
		{"another collective", ar, with(func(d *callDesc) { d.kind = KindBroadcast }), "rank 1 called broadcast #4"},
		{"another size", ar, with(func(d *callDesc) { d.count = 11 }), "float32 × 11) while"},
		{"another type", ar, with(func(d *callDesc) { d.dtype = Float64 }), "float64 × 10"},
		{"another operation", ar, with(func(d *callDesc) { d.op = Max }), "(max, float32"},
		{"all-to-all-v counts differ by rank", a2a, callDesc{kind: KindAllToAllV, seq: 2, dtype: Bytes, count: 9}, ""},
		{"all-to-all-v, another sequence number", a2a, callDesc{kind: KindAllToAllV, seq: 3, dtype: Bytes, count: 3}, "all-to-all-v #3"},
	} {
		err := c.mine.mismatch(0, 1, c.peer)
		if (err == nil) != (c.want == "") || err != nil && !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
		if got := descFromWords(c.peer.words()); got != c.peer {
			t.Errorf("%s: shared memory's words give %+v back for %+v", c.name, got, c.peer)
		}
	}
}

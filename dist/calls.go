package dist

import "fmt"

// The collectives' call state, as pure data: every collective a rank calls
// gets the next sequence number, and what arrives from a peer, over TCP or
// shared memory, must describe the same call (sequence, collective,
// element type, operation and count) or the group fails with a descriptor
// of both sides' calls.

// callDesc describes one collective call.
type callDesc struct {
	kind  Kind
	seq   uint64
	dtype DType
	op    Op
	count uint64
}

// callSeq numbers a rank's collective calls.
type callSeq uint64

// next describes the next call and advances the sequence.
func (s *callSeq) next(kind Kind, dt DType, op Op, count int) callDesc {
	d := callDesc{kind: kind, seq: uint64(*s), dtype: dt, op: op, count: uint64(count)}
	*s++
	return d
}

// String names the call for errors.
func (d callDesc) String() string { return describe(d.kind, d.seq, d.dtype, d.op, d.count) }

// describe names a collective call for errors.
func describe(k Kind, seq uint64, dt DType, op Op, count uint64) string {
	switch k {
	case KindAllReduce, KindReduceScatter:
		return fmt.Sprintf("%s #%d (%s, %s × %d)", k, seq, op, dt, count)
	case KindAllToAllV, KindBarrier:
		return fmt.Sprintf("%s #%d", k, seq)
	}
	return fmt.Sprintf("%s #%d (%s × %d)", k, seq, dt, count)
}

// matches reports whether peer's call is the same as d: all-to-all-v's
// counts differ from rank to rank, so its count is not compared.
func (d callDesc) matches(peer callDesc) bool {
	if d.kind == KindAllToAllV && peer.kind == KindAllToAllV {
		peer.count = d.count
	}
	return d == peer
}

// mismatch is the error of rank's call d meeting call peer of rank from,
// or nil when they match.
func (d callDesc) mismatch(rank, from int, peer callDesc) error {
	if d.matches(peer) {
		return nil
	}
	return fmt.Errorf("collective mismatch: rank %d called %s while rank %d called %s", from, peer, rank, d)
}

// words packs d as shared memory's descriptor words; descFromWords unpacks.
func (d callDesc) words() [3]uint64 {
	return [3]uint64{d.seq, uint64(d.kind) | uint64(d.dtype)<<8 | uint64(d.op)<<16, d.count}
}

func descFromWords(w [3]uint64) callDesc {
	return callDesc{kind: Kind(w[1]), dtype: DType(w[1] >> 8), op: Op(w[1] >> 16), seq: w[0], count: w[2]}
}

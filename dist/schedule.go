package dist

// The collectives' schedules, as pure data: for one rank of a group, the
// sends and receives a collective makes, in order, with no sockets and no
// clocks. A transport runs them (TCP.run); the tests run every rank's
// schedule over an in-memory network (schedule_test.go).

// actKind says what a step does.
type actKind uint8

const (
	actSend       actKind = iota // send the segment to peer
	actRecvReduce                // receive the segment from peer and reduce it into ours
	actRecvCopy                  // receive the segment from peer and copy it over ours
)

// action is one step of a schedule. seg is the segment it reads or
// writes, of the schedule's segments (-1: the whole buffer). A receive
// with forward >= 0 passes the segment on to rank forward as soon as it
// is reduced or copied, piece by piece (the ring's pipelining).
type action struct {
	kind    actKind
	peer    int
	seg     int
	forward int
}

// doublingSchedule is recursive doubling's all-reduce for rank of size
// ranks, on the whole buffer: the ranks beyond the largest power of two p
// first fold into a partner, the p ranks exchange and reduce with the
// partner at distance 1, 2, 4, ..., and the folded ranks get the result
// back. Every rank adds the same values in the same order, so the result
// is bitwise the same everywhere.
func doublingSchedule(rank, size int) []action {
	var s []action
	add := func(k actKind, peer int) { s = append(s, action{kind: k, peer: peer, seg: -1, forward: -1}) }
	p := 1
	for p*2 <= size {
		p *= 2
	}
	rem := size - p
	newr := rank - rem
	if rank < 2*rem {
		if rank%2 == 0 {
			add(actSend, rank+1)
			newr = -1
		} else {
			add(actRecvReduce, rank-1)
			newr = rank / 2
		}
	}
	if newr >= 0 {
		for mask := 1; mask < p; mask <<= 1 {
			pn := newr ^ mask
			pr := pn + rem
			if pn < rem {
				pr = 2*pn + 1
			}
			add(actSend, pr)
			add(actRecvReduce, pr)
		}
	}
	if rank < 2*rem {
		if rank%2 == 1 {
			add(actSend, rank-1)
		} else {
			add(actRecvCopy, rank+1)
		}
	}
	return s
}

// ringSchedule is the ring algorithm for rank of size ranks over size
// segments: its reduce-scatter phase (rs) leaves rank r with the full
// reduction of segment r, its all-gather phase (ag) copies every segment
// everywhere. Each segment received is passed on to the next rank as it
// arrives.
func ringSchedule(rank, size int, rs, ag bool) []action {
	next, prev := mod(rank+1, size), mod(rank-1, size)
	var s []action
	if rs {
		s = append(s, action{kind: actSend, peer: next, seg: mod(rank-1, size), forward: -1})
		for k := 0; k < size-1; k++ {
			fw := -1
			if k < size-2 || ag {
				fw = next
			}
			s = append(s, action{kind: actRecvReduce, peer: prev, seg: mod(rank-k-2, size), forward: fw})
		}
	} else if ag {
		s = append(s, action{kind: actSend, peer: next, seg: rank, forward: -1})
	}
	if ag {
		for k := 0; k < size-1; k++ {
			fw := -1
			if k < size-2 {
				fw = next
			}
			s = append(s, action{kind: actRecvCopy, peer: prev, seg: mod(rank-k-1, size), forward: fw})
		}
	}
	return s
}

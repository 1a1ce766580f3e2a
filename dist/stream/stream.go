// Package stream is the protocol of sampler services streaming an epoch's
// minibatches to a trainer (docs/wire.md, "The sampler service stream"),
// as two state machines with no sockets, goroutines or clocks inside (as
// etcd's raft): Sender is one sampler's side of one stream, Receiver the
// trainer's side of all its streams. The caller moves their messages (the
// gRPC transport in package samplersvc, or the simulated network of the
// tests, which drops, delays and reorders) and passes the time in.
//
// What the protocol guarantees: every frame carries (sender, epoch,
// sequence), so a frame of another epoch, a repeated or a missing frame is
// an error naming the sender; each sender ends what it was assigned with
// an END frame giving its batch count, which the receiver checks; the
// receiver hands batches out in index order and grants credits so that at
// most Credits frames per sender wait in memory, yet never deadlocks; a
// lost sender's unsent batches are reassigned to the survivors, so the
// epoch still delivers every batch exactly once; a sender silent past the
// deadline is lost, and named.
package stream

import (
	"errors"
	"fmt"
	"slices"
	"time"
)

// Kind is a frame's kind.
type Kind uint8

// The frame kinds (the values of graphmill.v1.Frame.Kind).
const (
	KindBatch     Kind = 1
	KindEnd       Kind = 2
	KindHeartbeat Kind = 3
)

// Frame is the protocol's view of a sampler's frame.
type Frame struct {
	Sender   uint32
	Epoch    uint64
	Sequence uint64
	Kind     Kind
	// Batch is a BATCH frame's index in the epoch.
	Batch uint32
	// Count is an END frame's number of BATCH frames sent so far.
	Count uint64
	// Payload is a BATCH frame's minibatch (opaque here).
	Payload []byte
}

// Start is what opens a sender's stream for an epoch.
type Start struct {
	Sender  uint32
	Epoch   uint64
	Batches []uint32
	Credits uint32
}

// Msg is a message from the receiver to one sender: exactly one of Start,
// Credit (> 0) or Assign is set.
type Msg struct {
	To     int
	Start  *Start
	Credit uint32
	Assign []uint32
}

// Action is what a Sender does next.
type Action uint8

// The sender's actions.
const (
	// Wait: nothing to send (no credit, or no work): wait for a message or
	// the heartbeat interval (then send Heartbeat()).
	Wait Action = iota
	// SendBatch: prepare batch NextBatch() and send Batch(payload).
	SendBatch
	// SendEnd: send End().
	SendEnd
)

// Sender is one sampler's side of one stream.
type Sender struct {
	id      uint32
	epoch   uint64
	pending []uint32 // assigned, unsent, increasing
	credits uint64
	seq     uint64
	sent    uint64
	ended   bool // an END was sent after the last assignment
	started bool
}

// NewSender starts a stream from its Start message.
func NewSender(s Start) (*Sender, error) {
	snd := &Sender{id: s.Sender, epoch: s.Epoch, credits: uint64(s.Credits), started: true}
	if err := snd.add(s.Batches); err != nil {
		return nil, err
	}
	return snd, nil
}

// add merges batches into the pending list.
func (s *Sender) add(batches []uint32) error {
	seen := map[uint32]bool{}
	for _, b := range s.pending {
		seen[b] = true
	}
	for _, b := range batches {
		if seen[b] {
			return fmt.Errorf("stream: batch %d assigned twice to sender %d", b, s.id)
		}
		seen[b] = true
	}
	s.pending = append(s.pending, batches...)
	slices.Sort(s.pending)
	if len(batches) > 0 {
		s.ended = false
	}
	return nil
}

// Credit adds n credits.
func (s *Sender) Credit(n uint32) { s.credits += uint64(n) }

// Assign adds batches of epoch epoch to the sender's share.
func (s *Sender) Assign(epoch uint64, batches []uint32) error {
	if epoch != s.epoch {
		return fmt.Errorf("stream: sender %d got batches of epoch %d during epoch %d", s.id, epoch, s.epoch)
	}
	return s.add(batches)
}

// Next returns what to do next.
func (s *Sender) Next() Action {
	switch {
	case len(s.pending) > 0 && s.credits > 0:
		return SendBatch
	case len(s.pending) == 0 && !s.ended:
		return SendEnd
	}
	return Wait
}

// NextBatch returns the batch to prepare (the smallest pending).
func (s *Sender) NextBatch() uint32 { return s.pending[0] }

// Batch returns the BATCH frame of NextBatch with payload, and marks it
// sent (taking a credit).
func (s *Sender) Batch(payload []byte) Frame {
	b := s.pending[0]
	s.pending = s.pending[1:]
	s.credits--
	s.sent++
	return s.frame(KindBatch, b, payload)
}

// End returns the END frame and marks it sent.
func (s *Sender) End() Frame {
	s.ended = true
	f := s.frame(KindEnd, 0, nil)
	f.Count = s.sent
	return f
}

// Heartbeat returns a HEARTBEAT frame.
func (s *Sender) Heartbeat() Frame { return s.frame(KindHeartbeat, 0, nil) }

func (s *Sender) frame(k Kind, b uint32, payload []byte) Frame {
	f := Frame{Sender: s.id, Epoch: s.epoch, Sequence: s.seq, Kind: k, Batch: b, Payload: payload}
	s.seq++
	return f
}

// Peek returns up to n of the batches to send next, in order (a
// transport prepares them ahead). The slice is valid until the next call.
func (s *Sender) Peek(n int) []uint32 { return s.pending[:min(n, len(s.pending))] }

// Credits returns the credits left.
func (s *Sender) Credits() uint64 { return s.credits }

// Pending returns the number of unsent assigned batches.
func (s *Sender) Pending() int { return len(s.pending) }

// senderState is the receiver's record of one sender.
type senderState struct {
	alive    bool
	lost     error
	seq      uint64   // next expected sequence
	batches  uint64   // BATCH frames received
	credit   int64    // credits granted and not used
	assigned []uint32 // every batch assigned to it (received or not)
	// known[j] is the number of batches in its Start and first j
	// Assigns: an END may only count one of these (an Assign still on
	// its way is not yet known to the sender).
	known []uint64
	heard time.Time
	ended bool // its last END matched
}

// Receiver is the trainer's side of an epoch over several senders.
type Receiver struct {
	epoch    uint64
	n        int
	credits  uint32
	deadline time.Duration
	senders  []senderState
	owner    []int // batch -> current sender
	got      []bool
	buf      map[uint32][]byte
	next     int
	out      []Msg
}

// ErrAllLost is wrapped by the error of an epoch whose senders were all
// lost.
var ErrAllLost = errors.New("every sampler was lost")

// NewReceiver plans epoch epoch of numBatches batches over senders
// senders (batch i to sender i mod senders), each allowed credits frames
// in flight, a sender silent for deadline (0: never) counting as lost. It
// returns the Start messages to send.
func NewReceiver(epoch uint64, numBatches, senders int, credits uint32, deadline time.Duration, now time.Time) (*Receiver, []Msg, error) {
	if senders < 1 {
		return nil, nil, errors.New("stream: no senders")
	}
	if numBatches < 0 || credits < 1 {
		return nil, nil, fmt.Errorf("stream: %d batches, %d credits", numBatches, credits)
	}
	r := &Receiver{epoch: epoch, n: numBatches, credits: credits, deadline: deadline,
		senders: make([]senderState, senders), owner: make([]int, numBatches), got: make([]bool, numBatches), buf: map[uint32][]byte{}}
	shares := make([][]uint32, senders)
	for i := 0; i < numBatches; i++ {
		s := i % senders
		shares[s] = append(shares[s], uint32(i))
		r.owner[i] = s
	}
	var msgs []Msg
	for s := range r.senders {
		r.senders[s] = senderState{alive: true, credit: int64(credits), assigned: shares[s], known: []uint64{uint64(len(shares[s]))}, heard: now}
		msgs = append(msgs, Msg{To: s, Start: &Start{Sender: uint32(s), Epoch: epoch, Batches: shares[s], Credits: credits}})
	}
	return r, msgs, nil
}

// Epoch returns the receiver's epoch.
func (r *Receiver) Epoch() uint64 { return r.epoch }

// NextIndex returns the index of the batch to deliver next.
func (r *Receiver) NextIndex() int { return r.next }

// Done reports whether every batch was delivered.
func (r *Receiver) Done() bool { return r.next == r.n }

// Alive reports whether sender s is still part of the epoch.
func (r *Receiver) Alive(s int) bool { return r.senders[s].alive }

// Buffered returns the number of batches received and not yet delivered.
func (r *Receiver) Buffered() int { return len(r.buf) }

// OnFrame takes a frame that arrived on sender s's stream. An error means
// the sender broke the protocol: the caller should drop its stream and
// call OnLost (which the error names).
func (r *Receiver) OnFrame(s int, f Frame, now time.Time) error {
	st := &r.senders[s]
	if !st.alive {
		return nil // a late frame of a sender already given up
	}
	st.heard = now
	switch {
	case f.Sender != uint32(s):
		return fmt.Errorf("sampler %d sent a frame signed as sender %d", s, f.Sender)
	case f.Epoch != r.epoch:
		return fmt.Errorf("sampler %d sent a frame of epoch %d during epoch %d", s, f.Epoch, r.epoch)
	case f.Sequence != st.seq:
		return fmt.Errorf("sampler %d sent frame %d where frame %d was due (a frame was lost or repeated)", s, f.Sequence, st.seq)
	}
	st.seq++
	switch f.Kind {
	case KindHeartbeat:
	case KindBatch:
		b := int(f.Batch)
		switch {
		case b >= r.n:
			return fmt.Errorf("sampler %d sent batch %d of an epoch of %d", s, b, r.n)
		case r.owner[b] != s:
			return fmt.Errorf("sampler %d sent batch %d, assigned to sampler %d", s, b, r.owner[b])
		case r.got[b]:
			return fmt.Errorf("sampler %d sent batch %d twice", s, b)
		case st.credit <= 0:
			return fmt.Errorf("sampler %d sent batch %d without a credit", s, b)
		}
		r.got[b] = true
		r.buf[uint32(b)] = f.Payload
		st.batches++
		st.credit--
		st.ended = false
	case KindEnd:
		if f.Count != st.batches {
			return fmt.Errorf("sampler %d ended with %d batches sent, but %d arrived", s, f.Count, st.batches)
		}
		// The sender ends when it has sent everything it knows of; the
		// batches of an Assign it had not yet received when it ended
		// follow in a later stream of frames and a later END.
		// It knew at least the smallest share that holds Count batches.
		j := 0
		for j+1 < len(st.known) && st.known[j] < f.Count {
			j++
		}
		for _, b := range st.assigned[:st.known[j]] {
			if !r.got[b] {
				return fmt.Errorf("sampler %d ended without sending batch %d", s, b)
			}
		}
		st.ended = j == len(st.known)-1
	default:
		return fmt.Errorf("sampler %d sent a frame of unknown kind %d", s, f.Kind)
	}
	return nil
}

// OnLost gives up sender s (its stream failed, broke the protocol or was
// silent): the batches assigned to it and not received are reassigned to
// the surviving senders (round robin, with a credit each so none waits on
// another). It fails, naming every sender's cause, when none survives.
func (r *Receiver) OnLost(s int, cause error) error {
	st := &r.senders[s]
	if !st.alive {
		return nil
	}
	st.alive, st.lost = false, cause
	var unsent []uint32
	for _, b := range st.assigned {
		if !r.got[b] {
			unsent = append(unsent, b)
		}
	}
	var alive []int
	for q := range r.senders {
		if r.senders[q].alive {
			alive = append(alive, q)
		}
	}
	if len(unsent) == 0 {
		return nil
	}
	if len(alive) == 0 {
		var msgs []string
		for q := range r.senders {
			msgs = append(msgs, fmt.Sprintf("sampler %d: %v", q, r.senders[q].lost))
		}
		return fmt.Errorf("%w with %d batches of epoch %d undelivered (%s)", ErrAllLost, len(unsent), r.epoch, joinSemi(msgs))
	}
	shares := map[int][]uint32{}
	for i, b := range unsent {
		q := alive[i%len(alive)]
		shares[q] = append(shares[q], b)
		r.owner[b] = q
	}
	for _, q := range alive {
		if len(shares[q]) == 0 {
			continue
		}
		qs := &r.senders[q]
		qs.assigned = append(qs.assigned, shares[q]...)
		qs.known = append(qs.known, uint64(len(qs.assigned)))
		qs.ended = false
		r.out = append(r.out, Msg{To: q, Assign: shares[q]})
	}
	return nil
}

func joinSemi(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += "; "
		}
		out += x
	}
	return out
}

// Next returns the next batch in index order when it has arrived (ok
// false otherwise). Delivering it returns its credit to its sender.
func (r *Receiver) Next() (index int, payload []byte, ok bool) {
	if r.next >= r.n {
		return 0, nil, false
	}
	p, ok := r.buf[uint32(r.next)]
	if !ok {
		// The batch we wait for: make sure its sender may send it.
		s := r.owner[r.next]
		if st := &r.senders[s]; st.alive && st.credit <= 0 {
			st.credit++
			r.out = append(r.out, Msg{To: s, Credit: 1})
		}
		return 0, nil, false
	}
	delete(r.buf, uint32(r.next))
	index = r.next
	r.next++
	// Its sender (whoever sent it) gets the credit back.
	s := r.owner[index]
	if st := &r.senders[s]; st.alive {
		st.credit++
		r.out = append(r.out, Msg{To: s, Credit: 1})
	}
	return index, p, true
}

// Waiting returns the sender of the batch the receiver waits for next
// (-1 when done).
func (r *Receiver) Waiting() int {
	if r.next >= r.n {
		return -1
	}
	return r.owner[r.next]
}

// Tick checks the deadline: the live senders that still owe batches and
// were silent longer than the deadline are returned (the caller names them
// and calls OnLost for each).
func (r *Receiver) Tick(now time.Time) []int {
	if r.deadline <= 0 {
		return nil
	}
	var silent []int
	for s := range r.senders {
		st := &r.senders[s]
		if !st.alive || now.Sub(st.heard) <= r.deadline {
			continue
		}
		owes := false
		for _, b := range st.assigned {
			if !r.got[b] {
				owes = true
				break
			}
		}
		if owes {
			silent = append(silent, s)
		}
	}
	return silent
}

// Outbox returns and clears the messages to send.
func (r *Receiver) Outbox() []Msg {
	m := r.out
	r.out = nil
	return m
}

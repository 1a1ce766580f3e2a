package stream

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// sim is a simulated network: one ordered stream each way per sender (as
// gRPC streams are), whose messages are delivered after random delays, so
// the streams interleave in any order; a sender can die (its stream
// breaks: the receiver learns it at a random later point), stop talking
// (silent), or have a frame dropped.
type sim struct {
	t       *testing.T
	r       *Receiver
	rnd     *rand.Rand
	snd     []*Sender
	toRecv  [][]Frame // per sender, frames in flight to the receiver
	toSend  [][]Msg   // per sender, messages in flight to it
	dead    []bool
	silent  []bool
	dropAt  []int // drop the sender's frame with this sequence (-1: none)
	broken  []bool
	now     time.Time
	got     []int
	maxBuf  int
	credits uint32
}

func newSim(t *testing.T, seed uint64, batches, senders int, credits uint32, deadline time.Duration) *sim {
	s := &sim{t: t, rnd: rand.New(rand.NewPCG(seed, 1)), now: time.Unix(1000, 0), credits: credits}
	r, msgs, err := NewReceiver(7, batches, senders, credits, deadline, s.now)
	if err != nil {
		t.Fatal(err)
	}
	s.r = r
	s.snd = make([]*Sender, senders)
	s.toRecv = make([][]Frame, senders)
	s.toSend = make([][]Msg, senders)
	s.dead, s.silent, s.broken = make([]bool, senders), make([]bool, senders), make([]bool, senders)
	s.dropAt = make([]int, senders)
	for i := range s.dropAt {
		s.dropAt[i] = -1
	}
	for _, m := range msgs {
		s.toSend[m.To] = append(s.toSend[m.To], m)
	}
	return s
}

// step moves one random message or lets one sender act; it returns false
// when nothing could happen.
func (s *sim) step() (bool, error) {
	s.now = s.now.Add(10 * time.Millisecond)
	var choices []func() error
	for q := range s.snd {
		if s.dead[q] {
			if !s.broken[q] && s.rnd.IntN(4) == 0 {
				choices = append(choices, func() error {
					s.broken[q] = true
					return s.r.OnLost(q, errors.New("connection reset"))
				})
			}
			continue
		}
		if len(s.toSend[q]) > 0 {
			choices = append(choices, func() error {
				m := s.toSend[q][0]
				s.toSend[q] = s.toSend[q][1:]
				switch {
				case m.Start != nil:
					snd, err := NewSender(*m.Start)
					if err != nil {
						return err
					}
					s.snd[q] = snd
				case m.Credit > 0:
					s.snd[q].Credit(m.Credit)
				default:
					return s.snd[q].Assign(7, m.Assign)
				}
				return nil
			})
		}
		if s.snd[q] != nil && !s.silent[q] && s.snd[q].Next() != Wait {
			choices = append(choices, func() error {
				snd := s.snd[q]
				var f Frame
				if snd.Next() == SendBatch {
					f = snd.Batch([]byte(fmt.Sprintf("batch %d", snd.NextBatch())))
				} else {
					f = snd.End()
				}
				if int(f.Sequence) == s.dropAt[q] {
					return nil
				}
				s.toRecv[q] = append(s.toRecv[q], f)
				return nil
			})
		}
		if len(s.toRecv[q]) > 0 {
			choices = append(choices, func() error {
				f := s.toRecv[q][0]
				s.toRecv[q] = s.toRecv[q][1:]
				if err := s.r.OnFrame(q, f, s.now); err != nil {
					return fmt.Errorf("protocol: %w", err)
				}
				return nil
			})
		}
	}
	if len(choices) == 0 {
		return false, nil
	}
	if err := choices[s.rnd.IntN(len(choices))](); err != nil {
		return true, err
	}
	for {
		i, p, ok := s.r.Next()
		if !ok {
			break
		}
		if want := fmt.Sprintf("batch %d", i); string(p) != want {
			return true, fmt.Errorf("batch %d carries %q", i, p)
		}
		s.got = append(s.got, i)
	}
	s.maxBuf = max(s.maxBuf, s.r.Buffered())
	for _, m := range s.r.Outbox() {
		s.toSend[m.To] = append(s.toSend[m.To], m)
	}
	return true, nil
}

func (s *sim) run(maxSteps int, kill func(step int)) error {
	for i := 0; i < maxSteps && !s.r.Done(); i++ {
		if kill != nil {
			kill(i)
		}
		moved, err := s.step()
		if err != nil {
			return err
		}
		if !moved {
			for _, q := range s.r.Tick(s.now.Add(time.Hour)) {
				if err := s.r.OnLost(q, errors.New("silent")); err != nil {
					return err
				}
				s.dead[q], s.broken[q] = true, true
			}
			for _, m := range s.r.Outbox() {
				s.toSend[m.To] = append(s.toSend[m.To], m)
			}
		}
	}
	if !s.r.Done() {
		return fmt.Errorf("not done after %d steps: delivered %d", maxSteps, len(s.got))
	}
	return nil
}

func (s *sim) checkExactlyOnce(n int) {
	s.t.Helper()
	if len(s.got) != n {
		s.t.Fatalf("delivered %d batches, want %d", len(s.got), n)
	}
	for i, b := range s.got {
		if b != i {
			s.t.Fatalf("position %d delivered batch %d", i, b)
		}
	}
}

func TestStreamsInterleaved(t *testing.T) {
	for seed := uint64(0); seed < 50; seed++ {
		for _, tc := range []struct {
			batches, senders int
			credits          uint32
		}{{40, 3, 2}, {7, 3, 1}, {1, 4, 1}, {0, 2, 3}, {100, 1, 4}} {
			s := newSim(t, seed, tc.batches, tc.senders, tc.credits, 0)
			if err := s.run(100000, nil); err != nil {
				t.Fatalf("seed %d %+v: %v", seed, tc, err)
			}
			s.checkExactlyOnce(tc.batches)
			// The memory bound: credits per sender, plus the one extra
			// credit the receiver grants the sender it waits for.
			if lim := tc.senders*int(tc.credits) + tc.senders; s.maxBuf > lim {
				t.Fatalf("seed %d %+v: %d batches buffered, bound %d", seed, tc, s.maxBuf, lim)
			}
		}
	}
}

// TestSenderLostMidEpoch kills one of three senders at a random point: its
// unsent batches go to the survivors and every batch arrives exactly once.
func TestSenderLostMidEpoch(t *testing.T) {
	for seed := uint64(0); seed < 100; seed++ {
		s := newSim(t, seed, 60, 3, 2, 0)
		at := int(seed % 97)
		victim := int(seed % 3)
		if err := s.run(100000, func(i int) {
			if i == at {
				s.dead[victim] = true
			}
		}); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		s.checkExactlyOnce(60)
	}
}

// TestSenderLostAfterOthersEnded: the survivors may already have sent END
// when a sender is lost; the reassignment reaches them after their END,
// which the receiver must accept (they end again once they have sent the
// new batches). Kills late in the epoch with many credits, where that
// happens.
func TestSenderLostAfterOthersEnded(t *testing.T) {
	for seed := uint64(0); seed < 200; seed++ {
		s := newSim(t, seed, 30, 3, 16, 0)
		at := 40 + int(seed%60)
		victim := int(seed % 3)
		if err := s.run(100000, func(i int) {
			if i == at {
				s.dead[victim] = true
			}
		}); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		s.checkExactlyOnce(30)
	}
	// The same, step by step: sender 0 has sent all of its share and its
	// END when sender 1 is lost.
	now := time.Unix(0, 0)
	r, start, err := NewReceiver(7, 4, 2, 4, 0, now)
	if err != nil {
		t.Fatal(err)
	}
	snd, err := NewSender(*start[0].Start)
	if err != nil {
		t.Fatal(err)
	}
	var inFlight []Frame
	for snd.Next() == SendBatch {
		inFlight = append(inFlight, snd.Batch([]byte{byte(snd.NextBatch())}))
	}
	inFlight = append(inFlight, snd.End())
	if err := r.OnLost(1, errors.New("killed")); err != nil {
		t.Fatal(err)
	}
	for _, f := range inFlight {
		if err := r.OnFrame(0, f, now); err != nil {
			t.Fatalf("END sent before the reassignment arrived: %v", err)
		}
	}
	for _, m := range r.Outbox() {
		if m.Assign != nil {
			if err := snd.Assign(7, m.Assign); err != nil {
				t.Fatal(err)
			}
		}
	}
	for snd.Next() != Wait {
		var f Frame
		if snd.Next() == SendBatch {
			f = snd.Batch([]byte{byte(snd.NextBatch())})
		} else {
			f = snd.End()
		}
		if err := r.OnFrame(0, f, now); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 4; i++ {
		if j, _, ok := r.Next(); !ok || j != i {
			t.Fatalf("batch %d: got %d, %v", i, j, ok)
		}
	}
	if !r.Done() {
		t.Fatal("not done")
	}
	// An END that leaves out a batch of a share the sender knew is still
	// an error.
	r, _, _ = NewReceiver(7, 4, 2, 4, 0, now)
	if err := r.OnLost(1, errors.New("killed")); err != nil {
		t.Fatal(err)
	}
	if err := r.OnFrame(0, Frame{Sender: 0, Epoch: 7, Kind: KindBatch, Batch: 0}, now); err != nil {
		t.Fatal(err)
	}
	if err := r.OnFrame(0, Frame{Sender: 0, Epoch: 7, Sequence: 1, Kind: KindEnd, Count: 1}, now); err == nil || !strings.Contains(err.Error(), "ended without sending batch 2") {
		t.Fatalf("early END: %v", err)
	}
}

// TestAllLost names every sampler's cause.
func TestAllLost(t *testing.T) {
	s := newSim(t, 1, 10, 2, 1, 0)
	if err := s.r.OnLost(0, errors.New("refused")); err != nil {
		t.Fatal(err)
	}
	err := s.r.OnLost(1, errors.New("killed"))
	if !errors.Is(err, ErrAllLost) || !strings.Contains(err.Error(), "sampler 0: refused") || !strings.Contains(err.Error(), "sampler 1: killed") {
		t.Fatalf("error %v", err)
	}
}

// TestSilentSenderNamed: a sender that stops talking is reported by Tick
// after the deadline, and its batches reassigned.
func TestSilentSenderNamed(t *testing.T) {
	s := newSim(t, 3, 30, 3, 2, time.Second)
	s.silent[2] = true
	var named []int
	for i := 0; i < 100000 && !s.r.Done(); i++ {
		moved, err := s.step()
		if err != nil {
			t.Fatal(err)
		}
		if !moved {
			// Idle senders send heartbeats; the silent one does not.
			s.now = s.now.Add(2 * time.Second)
			for q, snd := range s.snd {
				if snd != nil && !s.silent[q] && !s.dead[q] {
					if err := s.r.OnFrame(q, snd.Heartbeat(), s.now); err != nil {
						t.Fatal(err)
					}
				}
			}
			for _, q := range s.r.Tick(s.now) {
				named = append(named, q)
				if err := s.r.OnLost(q, errors.New("silent")); err != nil {
					t.Fatal(err)
				}
				s.dead[q], s.broken[q] = true, true
			}
			for _, m := range s.r.Outbox() {
				s.toSend[m.To] = append(s.toSend[m.To], m)
			}
		}
	}
	s.checkExactlyOnce(30)
	if len(named) != 1 || named[0] != 2 {
		t.Fatalf("named %v as silent, want [2]", named)
	}
}

// TestProtocolViolations: a dropped frame, a foreign epoch, a forged
// sender, a duplicate, an unassigned batch and a wrong END count are errors
// naming the sampler.
func TestProtocolViolations(t *testing.T) {
	// A dropped frame shows as a sequence gap.
	s := newSim(t, 5, 20, 2, 2, 0)
	s.dropAt[1] = 2
	err := s.run(100000, nil)
	if err == nil || !strings.Contains(err.Error(), "sampler 1 sent frame 3 where frame 2 was due") {
		t.Fatalf("dropped frame: %v", err)
	}
	now := time.Unix(0, 0)
	for _, tc := range []struct {
		name string
		f    Frame
		want string
	}{
		{"epoch", Frame{Sender: 0, Epoch: 8, Kind: KindBatch}, "epoch 8 during epoch 7"},
		{"sender", Frame{Sender: 1, Epoch: 7, Kind: KindBatch}, "signed as sender 1"},
		{"unassigned", Frame{Sender: 0, Epoch: 7, Kind: KindBatch, Batch: 1}, "assigned to sampler 1"},
		{"range", Frame{Sender: 0, Epoch: 7, Kind: KindBatch, Batch: 99}, "batch 99 of an epoch of 4"},
		{"count", Frame{Sender: 0, Epoch: 7, Kind: KindEnd, Count: 3}, "ended with 3 batches sent, but 0 arrived"},
		{"early end", Frame{Sender: 0, Epoch: 7, Kind: KindEnd}, "ended without sending batch 0"},
		{"kind", Frame{Sender: 0, Epoch: 7, Kind: 9}, "unknown kind"},
	} {
		r, _, _ := NewReceiver(7, 4, 2, 1, 0, now)
		if err := r.OnFrame(0, tc.f, now); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	r, _, _ := NewReceiver(7, 4, 2, 1, 0, now)
	if err := r.OnFrame(0, Frame{Sender: 0, Epoch: 7, Kind: KindBatch, Batch: 0}, now); err != nil {
		t.Fatal(err)
	}
	if err := r.OnFrame(0, Frame{Sender: 0, Epoch: 7, Sequence: 1, Kind: KindBatch, Batch: 2}, now); err == nil || !strings.Contains(err.Error(), "without a credit") {
		t.Fatalf("no credit: %v", err)
	}
	if _, err := NewSender(Start{Batches: []uint32{1, 1}}); err == nil {
		t.Fatal("duplicate assignment: no error")
	}
	snd, _ := NewSender(Start{Epoch: 3, Batches: []uint32{1}})
	if err := snd.Assign(4, []uint32{2}); err == nil {
		t.Fatal("assignment of another epoch: no error")
	}
}

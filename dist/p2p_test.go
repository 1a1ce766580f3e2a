package dist

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"
)

// p2pMsg is message k from rank from to rank to under its tag.
func p2pMsg(from, to, k int) (uint32, []byte) {
	n := (k * 7919 * (from + 2) * (to + 3)) % 20011
	if k%10 == 3 {
		n = 0
	}
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(from*31 + to*7 + k + i)
	}
	return uint32(k%3 + 1), b
}

// TestP2PStress: every rank sends 60 messages of 0 to 20 KB under three
// tags to every other rank before receiving anything, then receives them
// tag by tag; with 4 KiB rings the messages wrap and stream through.
func TestP2PStress(t *testing.T) {
	transports(t, func(t *testing.T, o Options) {
		o.ShmRingBytes = 4096
		gs := group(t, 3, o)
		if o.NoSharedMemory == (gs[0].Transport() == "shared memory") {
			t.Fatalf("transport %q", gs[0].Transport())
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		const msgs = 60
		errs, _ := each(gs, func(g *TCP) error {
			for k := range msgs {
				for to := range g.Size() {
					if to != g.Rank() {
						tag, b := p2pMsg(g.Rank(), to, k)
						if err := g.Send(ctx, to, tag, b); err != nil {
							return err
						}
					}
				}
			}
			for tag := uint32(3); tag >= 1; tag-- {
				for from := range g.Size() {
					if from == g.Rank() {
						continue
					}
					for k := range msgs {
						if wt, want := p2pMsg(from, g.Rank(), k); wt == tag {
							got, err := g.Recv(ctx, from, tag)
							if err != nil {
								return err
							}
							if !bytes.Equal(got, want) {
								return fmt.Errorf("message %d from rank %d (tag %d): %d bytes, want %d (or other bytes)", k, from, tag, len(got), len(want))
							}
						}
					}
				}
			}
			return g.Barrier(ctx)
		})
		for r, err := range errs {
			if err != nil {
				t.Errorf("rank %d: %v", r, err)
			}
		}
	})
}

// TestSendToDeadRank: a send blocked on a full ring (the receiver died
// without draining it) fails naming the receiver, and so does a receive
// from it.
func TestSendToDeadRank(t *testing.T) {
	transports(t, func(t *testing.T, o Options) {
		o.ShmRingBytes = 4096
		gs := group(t, 3, o)
		gs[1].closing.Store(true) // rank 1 stops draining and reporting
		close(gs[1].closeCh)
		for _, p := range gs[1].peers {
			if p != nil {
				p.c.Close()
			}
		}
		t0 := time.Now()
		err := gs[0].Send(context.Background(), 1, 5, make([]byte, 10<<20))
		if err == nil || !bytesContains(err.Error(), "rank 1") {
			t.Errorf("send: %v, want an error naming rank 1", err)
		}
		_, err = gs[2].Recv(context.Background(), 1, 5)
		if err == nil || !bytesContains(err.Error(), "rank 1") {
			t.Errorf("receive: %v, want an error naming rank 1", err)
		}
		if dt := time.Since(t0); dt > 10*time.Second {
			t.Errorf("took %v", dt)
		}
	})
}

func bytesContains(s, sub string) bool { return bytes.Contains([]byte(s), []byte(sub)) }

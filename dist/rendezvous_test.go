package dist

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestRendezvousAbbreviatesMissingRanks: a world of thousands of missing
// ranks gives a short error naming the first few and the count.
func TestRendezvousAbbreviatesMissingRanks(t *testing.T) {
	port := freePort(t)
	sec := &Security{Secret: []byte("s")}
	_, err := Join(context.Background(), Info{Rank: 0, Size: 5000, MasterAddr: "127.0.0.1", MasterPort: port}, Options{Security: sec, RendezvousTimeout: 500 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "rank(s) 1, 2, 3, 4, 5, 6, 7, 8, ... (4999 in all) of 5000 never arrived") {
		t.Errorf("got %v", err)
	}
	if err != nil && len(err.Error()) > 300 {
		t.Errorf("error of %d bytes", len(err.Error()))
	}
}

func TestAbbreviate(t *testing.T) {
	for _, c := range []struct {
		in   []string
		want string
	}{
		{nil, ""},
		{[]string{"1"}, "1"},
		{[]string{"1", "2", "3", "4", "5", "6", "7", "8"}, "1, 2, 3, 4, 5, 6, 7, 8"},
		{[]string{"1", "2", "3", "4", "5", "6", "7", "8", "9"}, "1, 2, 3, 4, 5, 6, 7, 8, ... (9 in all)"},
	} {
		if got := abbreviate(c.in, ", "); got != c.want {
			t.Errorf("abbreviate(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestRendezvousHonoursContext: cancelling the context ends a rank
// waiting for the others at once, with an error wrapping ctx.Err().
func TestRendezvousHonoursContext(t *testing.T) {
	port := freePort(t)
	sec := &Security{Secret: []byte("s")}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	t0 := time.Now()
	_, err := Join(ctx, Info{Rank: 0, Size: 2, MasterAddr: "127.0.0.1", MasterPort: port}, Options{Security: sec, RendezvousTimeout: time.Minute})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("got %v, want one wrapping context.Canceled", err)
	}
	if d := time.Since(t0); d > 10*time.Second {
		t.Errorf("took %v", d)
	}
}

// TestNegativeTimeoutsRefused: a negative timeout is an error, not the
// default.
func TestNegativeTimeoutsRefused(t *testing.T) {
	sec := &Security{Secret: []byte("s")}
	for name, o := range map[string]Options{
		"RendezvousTimeout": {Security: sec, RendezvousTimeout: -time.Second},
		"OpTimeout":         {Security: sec, OpTimeout: -time.Second},
		"PeerTimeout":       {Security: sec, PeerTimeout: -1},
	} {
		_, err := Join(context.Background(), Info{Rank: 0, Size: 2, MasterAddr: "127.0.0.1", MasterPort: 1}, o)
		if err == nil || !strings.Contains(err.Error(), "Options."+name) {
			t.Errorf("%s: got %v", name, err)
		}
	}
}

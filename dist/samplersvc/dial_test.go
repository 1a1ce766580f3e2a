package samplersvc

import (
	"context"
	"strings"
	"testing"
	"time"

	pb "github.com/graphmill/graphmill/proto/graphmill/v1"
)

// TestDialRefusesMalformedAddresses: an address without a port is refused
// at once (it waited the whole connect timeout for gRPC's resolver).
func TestDialRefusesMalformedAddresses(t *testing.T) {
	for _, a := range []string{"garbage", "127.0.0.1", "127.0.0.1:", "[::1"} {
		start := time.Now()
		_, err := Dial(context.Background(), ClientConfig{Addrs: []string{a}, ConnectTimeout: 30 * time.Second})
		if err == nil || !strings.Contains(err.Error(), "not HOST:PORT") {
			t.Errorf("%q: %v", a, err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("%q refused after %v", a, d)
		}
	}
}

// TestMidStreamMessagesNamed: a second EpochRequest on a stream and an
// empty client message are refused, each with its own message (both
// were "an EpochRequest in the middle of a stream").
func TestMidStreamMessagesNamed(t *testing.T) {
	d := cora(t)
	svc := startService(t, d, nil, nil)
	cl := svc.rawClient(t)
	start := &pb.EpochRequest{Split: "train", Fanouts: []int32{2}, BatchSize: 64, NumShards: 1, InitialCredits: 1}
	for _, c := range []struct {
		msg  *pb.ClientMessage
		want string
	}{
		{&pb.ClientMessage{}, "empty client message"},
		{&pb.ClientMessage{Msg: &pb.ClientMessage_Start{Start: start}}, "in the middle of a stream"},
	} {
		st, err := cl.Stream(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Send(&pb.ClientMessage{Msg: &pb.ClientMessage_Start{Start: start}}); err != nil {
			t.Fatal(err)
		}
		if err := st.Send(c.msg); err != nil {
			t.Fatal(err)
		}
		for {
			if _, err = st.Recv(); err != nil {
				break
			}
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.msg, err, c.want)
		}
	}
}

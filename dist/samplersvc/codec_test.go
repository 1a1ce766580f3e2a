package samplersvc

import (
	"bytes"
	"testing"
	"unsafe"

	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"

	pb "github.com/graphmill/graphmill/proto/graphmill/v1"
)

func TestFrameCodec(t *testing.T) {
	c := newFrameCodec()
	for _, f := range []*pb.Frame{
		{Sender: 2, Epoch: 5, Sequence: 9, Kind: pb.Frame_KIND_BATCH, Batch: 7, Minibatch: bytes.Repeat([]byte{1, 2, 3}, 1000)},
		{Sender: 1, Epoch: 5, Sequence: 10, Kind: pb.Frame_KIND_END, BatchCount: 4},
	} {
		pb.AlignPayload(f)
		raw, err := proto.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		var got pb.Frame
		if err := c.Unmarshal(mem.BufferSlice{mem.SliceBuffer(raw)}, &got); err != nil {
			t.Fatal(err)
		}
		if !proto.Equal(&got, f) {
			t.Fatalf("got %v, want %v", &got, f)
		}
		if len(got.Minibatch) > 0 && uintptr(unsafe.Pointer(&got.Minibatch[0]))%pb.PayloadAlign != 0 {
			t.Fatal("the aliased payload is not aligned")
		}
	}
	// Not a Frame: the standard codec.
	var m pb.ClientMessage
	in := &pb.ClientMessage{Msg: &pb.ClientMessage_Credit{Credit: &pb.Credit{Frames: 3}}}
	raw, _ := proto.Marshal(in)
	if err := c.Unmarshal(mem.BufferSlice{mem.SliceBuffer(raw)}, &m); err != nil || m.GetCredit().GetFrames() != 3 {
		t.Fatalf("client message: %v %v", &m, err)
	}
	if err := c.Unmarshal(mem.BufferSlice{mem.SliceBuffer([]byte{0xff})}, &pb.Frame{}); err == nil {
		t.Fatal("garbage: no error")
	}
}

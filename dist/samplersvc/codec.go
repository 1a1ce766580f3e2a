package samplersvc

import (
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"

	pb "github.com/graphmill/graphmill/proto/graphmill/v1"
)

// frameCodec is the client's protobuf codec with one difference: a Frame
// whose minibatch is its last field (as the Go server writes it) keeps
// its minibatch as a view of the received message instead of a copy,
// sparing one copy of every multi-megabyte frame. Other messages, and
// frames laid out otherwise, go through the standard codec.
type frameCodec struct{ base encoding.CodecV2 }

func newFrameCodec() frameCodec { return frameCodec{base: encoding.GetCodecV2("proto")} }

// Name is the content subtype, the standard codec's.
func (c frameCodec) Name() string { return "proto" }

// Marshal is the standard codec's.
func (c frameCodec) Marshal(v any) (mem.BufferSlice, error) { return c.base.Marshal(v) }

// Unmarshal parses a Frame's fields before the minibatch and aliases the
// minibatch (the message's bytes are copied once, out of gRPC's buffers,
// which are reused once Unmarshal returns).
func (c frameCodec) Unmarshal(data mem.BufferSlice, v any) error {
	f, ok := v.(*pb.Frame)
	if !ok {
		return c.base.Unmarshal(data, v)
	}
	raw := data.Materialize()
	start, off, n, ok := pb.PayloadField(raw)
	if !ok || off+n != len(raw) {
		return proto.Unmarshal(raw, f)
	}
	if err := proto.Unmarshal(raw[:start], f); err != nil {
		return err
	}
	f.Minibatch = raw[off : off+n : off+n]
	return nil
}

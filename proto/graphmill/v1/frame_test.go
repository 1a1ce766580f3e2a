package graphmillv1

import (
	"bytes"
	"testing"

	"google.golang.org/protobuf/proto"
)

func TestAlignPayload(t *testing.T) {
	for _, n := range []int{1, 7, 100, 127, 128, 300, 16383, 16384, 1 << 20} {
		for _, seq := range []uint64{0, 1, 200, 1 << 40} {
			for _, batch := range []uint32{0, 5, 100000} {
				mb := bytes.Repeat([]byte{0xab}, n)
				f := &Frame{Sender: 3, Epoch: 9, Sequence: seq, Kind: Frame_KIND_BATCH, Batch: batch, Minibatch: mb}
				want := AlignPayload(f)
				raw, err := proto.Marshal(f)
				if err != nil {
					t.Fatal(err)
				}
				off, m, ok := PayloadOffset(raw)
				if !ok || m != n || off != want {
					t.Fatalf("n=%d seq=%d: payload at %d (%d bytes, ok %v), AlignPayload said %d", n, seq, off, m, ok, want)
				}
				if off%PayloadAlign != 0 {
					t.Fatalf("n=%d seq=%d: payload offset %d not aligned", n, seq, off)
				}
				if !bytes.Equal(raw[off:off+m], mb) {
					t.Fatal("payload bytes differ")
				}
				var back Frame
				if err := proto.Unmarshal(raw, &back); err != nil || back.Sequence != seq || !bytes.Equal(back.Minibatch, mb) {
					t.Fatalf("round trip: %v", err)
				}
			}
		}
	}
	if AlignPayload(&Frame{Kind: Frame_KIND_END}) != -1 {
		t.Fatal("a frame without payload has an offset")
	}
	for _, bad := range [][]byte{{0xff}, {0x7a, 0x05, 1}, {}} {
		if _, _, ok := PayloadOffset(bad); ok {
			t.Fatalf("%x: ok", bad)
		}
	}
}

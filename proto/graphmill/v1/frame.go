package graphmillv1

import (
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// PayloadAlign is the alignment, in bytes, of a Frame's minibatch field
// inside the serialized frame when AlignPayload was called before
// marshalling.
const PayloadAlign = 16

var zeros [2 * PayloadAlign]byte

// AlignPayload sets f.Pad so that, with the fields serialized in field
// number order (what the Go implementation does), the minibatch bytes begin
// at an offset of the serialized frame that is a multiple of PayloadAlign.
// It returns that offset (or -1 when f has no minibatch). Call it after
// setting every other field.
func AlignPayload(f *Frame) int {
	f.Pad = nil
	if len(f.Minibatch) == 0 {
		return -1
	}
	mb := f.Minibatch
	f.Minibatch = nil
	head := proto.Size(f) // fields 1..6
	f.Minibatch = mb
	prefix := protowire.SizeTag(15) + protowire.SizeBytes(len(mb)) - len(mb)
	base := head + prefix
	if base%PayloadAlign == 0 {
		return base
	}
	// A present pad field costs its tag (1 byte), its length (1 byte) and
	// its content p: choose p > 0 with base+2+p a multiple of PayloadAlign.
	p := (PayloadAlign - (base+2)%PayloadAlign) % PayloadAlign
	if p == 0 {
		p = PayloadAlign
	}
	f.Pad = zeros[:p]
	return base + 2 + p
}

// PayloadOffset returns the offset of the minibatch field's bytes in a
// serialized Frame, and their length, by walking its fields without
// copying; ok is false when raw is malformed or holds no minibatch. It is
// what a zero-copy client does (the Python client has the same walk).
func PayloadOffset(raw []byte) (off, n int, ok bool) {
	_, off, n, ok = PayloadField(raw)
	return off, n, ok
}

// PayloadField is PayloadOffset that also returns where the minibatch
// field (its tag) starts, so that a client can parse the fields before it
// and alias the payload instead of copying it.
func PayloadField(raw []byte) (start, off, n int, ok bool) {
	pos := 0
	for pos < len(raw) {
		num, typ, tl := protowire.ConsumeTag(raw[pos:])
		if tl < 0 {
			return 0, 0, 0, false
		}
		if num == 15 && typ == protowire.BytesType {
			v, vl := protowire.ConsumeVarint(raw[pos+tl:])
			if vl < 0 || uint64(len(raw)-pos-tl-vl) < v {
				return 0, 0, 0, false
			}
			return pos, pos + tl + vl, int(v), true
		}
		fl := protowire.ConsumeFieldValue(num, typ, raw[pos+tl:])
		if fl < 0 {
			return 0, 0, 0, false
		}
		pos += tl + fl
	}
	return 0, 0, 0, false
}

package batch

import (
	"bytes"
	"encoding/binary"
	"io"
	"math"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/graphmill/graphmill/graph"
	"github.com/graphmill/graphmill/internal/fuzzmin"
)

func TestMain(m *testing.M) { fuzzmin.Main(m) }

// sampled returns a two-layer batch as a neighbour sampler makes it: 7
// input nodes, 3 destinations in block 0 (its sources' prefix), 2 seeds.
func sampled() *MiniBatch {
	mb := &MiniBatch{Sender: 3, Epoch: 2, Seq: 41}
	mb.SetInputs([]int32{10, 20, 30, 40, 50, 60, 70}, 2)
	bs := mb.SetBlocks(2)
	bs[0] = graph.Block{NumSrc: 7, NumDst: 3, Indptr: []int64{0, 2, 3, 6}, Indices: []int32{3, 4, 0, 5, 6, 1}, EdgeIDs: []int64{100, 101, 102, 103, 104, 105}}
	bs[1] = graph.Block{NumSrc: 3, NumDst: 2, Indptr: []int64{0, 1, 3}, Indices: []int32{2, 0, 2}, EdgeIDs: []int64{7, 8, 9}, Weights: []float32{0.5, 1, 2}}
	x := mb.Features.SetF32(7, 3)
	for i := range x {
		x[i] = float32(i) * 0.25
	}
	mb.Labels = []int32{1, -1}
	return mb
}

// gas returns a GNNAutoScale-style batch: one block shape reused by both
// layers, 3 batch nodes and 2 halo nodes whose layer-1 rows are history.
func gas() *MiniBatch {
	mb := &MiniBatch{}
	mb.SetInputs64([]int64{5, 6, 7, 1 << 40, 9}, 3)
	blk := graph.Block{NumSrc: 5, NumDst: 3, Indptr: []int64{0, 2, 3, 5}, Indices: []int32{1, 3, 0, 4, 2}}
	mb.Blocks = []graph.Block{blk, blk}
	h := mb.Features.SetHalf(Float16, 5, 2)
	for i := range h {
		h[i] = uint16(0x3c00 + i)
	}
	mb.Halo = []Halo{{Nodes: mb.InputNodes[3:]}}
	b := mb.Halo[0].Rows.SetHalf(BFloat16, 2, 4)
	for i := range b {
		b[i] = uint16(0x3f80 + i)
	}
	mb.Labels = []int32{0, 2, -1}
	return mb
}

// frontier returns a two-layer batch as PyG-style (frontier) draws make
// it, in PyG's layout as well: 7 input nodes, 2 seeds whose in-edges come
// from positions 2, 3 and 0 (hop 0), then the in-edges of the nodes first
// reached at hop 0 (positions 2 and 3) only (hop 1).
func frontier() *MiniBatch {
	mb := &MiniBatch{Seq: 5}
	mb.SetInputs([]int32{1, 4, 2, 6, 0, 5, 3}, 2)
	bs := mb.SetBlocks(2)
	bs[0] = graph.Block{NumSrc: 7, NumDst: 4, Indptr: []int64{0, 0, 0, 2, 3}, Indices: []int32{4, 5, 6}}
	bs[1] = graph.Block{NumSrc: 4, NumDst: 2, Indptr: []int64{0, 2, 3}, Indices: []int32{2, 3, 0}}
	if err := mb.SetEdgeIndex(); err != nil {
		panic(err)
	}
	if err := mb.SetInputLabels([]int32{10, 11, 12, -1, 14, 15, 16}); err != nil {
		panic(err)
	}
	return mb
}

func equal(t *testing.T, got, want *MiniBatch) {
	t.Helper()
	if got.Sender != want.Sender || got.Epoch != want.Epoch || got.Seq != want.Seq {
		t.Errorf("stream metadata %d/%d/%d, want %d/%d/%d", got.Sender, got.Epoch, got.Seq, want.Sender, want.Epoch, want.Seq)
	}
	if !slices.Equal(got.Seeds, want.Seeds) || !slices.Equal(got.InputNodes, want.InputNodes) {
		t.Errorf("seeds %v inputs %v, want %v %v", got.Seeds, got.InputNodes, want.Seeds, want.InputNodes)
	}
	// Block weights are finite (Validate), so DeepEqual is exact.
	if !reflect.DeepEqual(got.Blocks, want.Blocks) {
		t.Errorf("blocks\n%+v\nwant\n%+v", got.Blocks, want.Blocks)
	}
	if !slices.Equal(got.Labels, want.Labels) || (got.Labels == nil) != (want.Labels == nil) {
		t.Errorf("labels %v, want %v", got.Labels, want.Labels)
	}
	if !slices.Equal(got.EdgeIndex, want.EdgeIndex) || (got.EdgeIndex == nil) != (want.EdgeIndex == nil) {
		t.Errorf("edge index %v, want %v", got.EdgeIndex, want.EdgeIndex)
	}
	if !slices.Equal(got.InputLabels, want.InputLabels) || (got.InputLabels == nil) != (want.InputLabels == nil) {
		t.Errorf("input labels %v, want %v", got.InputLabels, want.InputLabels)
	}
	rowsEq := func(what string, a, b Rows) {
		// Compared bit for bit: a decoded frame may hold NaNs.
		if a.DType != b.DType || a.Rows != b.Rows || a.Dim != b.Dim || len(a.F32) != len(b.F32) || len(a.Bits) != len(b.Bits) ||
			!slices.Equal(f32bits(a.F32), f32bits(b.F32)) || !slices.Equal(a.Bits, b.Bits) {
			t.Errorf("%s %+v, want %+v", what, a, b)
		}
	}
	rowsEq("features", got.Features, want.Features)
	if len(got.Halo) != len(want.Halo) || (got.Halo == nil) != (want.Halo == nil) {
		t.Fatalf("halo %+v, want %+v", got.Halo, want.Halo)
	}
	for i := range got.Halo {
		if !reflect.DeepEqual(got.Halo[i].Nodes, want.Halo[i].Nodes) {
			t.Errorf("halo %d nodes %v, want %v", i, got.Halo[i].Nodes, want.Halo[i].Nodes)
		}
		rowsEq("halo rows", got.Halo[i].Rows, want.Halo[i].Rows)
	}
}

func TestRoundTrip(t *testing.T) {
	cases := map[string]func() *MiniBatch{
		"sampled":  sampled,
		"gas":      gas,
		"frontier": frontier,
		"no features or labels": func() *MiniBatch {
			mb := sampled()
			mb.Features, mb.Labels = Rows{}, nil
			mb.Blocks[0].EdgeIDs = nil
			return mb
		},
		"empty": func() *MiniBatch {
			mb := &MiniBatch{}
			mb.SetInputs(nil, 0)
			bs := mb.SetBlocks(1)
			bs[0] = graph.Block{Indptr: []int64{0}, Indices: []int32{}}
			mb.Labels = []int32{}
			return mb
		},
	}
	for name, mk := range cases {
		t.Run(name, func(t *testing.T) {
			want := mk()
			frame, err := want.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			if len(frame) != want.EncodedLen() || len(frame)%Align != 0 {
				t.Fatalf("frame of %d bytes, EncodedLen %d", len(frame), want.EncodedLen())
			}
			// Written over old bytes (a reused payload buffer), the frame
			// is the same: every byte no section writes is zeroed.
			dirty, err := want.AppendBinary(bytes.Repeat([]byte{0xa5}, len(frame))[:0])
			if err != nil || !bytes.Equal(dirty, frame) {
				t.Fatalf("frame written over old bytes differs (%v)", err)
			}
			for _, alias := range []bool{false, true} {
				var got MiniBatch
				if err := Decode(frame, &got, DecodeOptions{Alias: alias}); err != nil {
					t.Fatalf("alias %v: %v", alias, err)
				}
				equal(t, &got, want)
				again, err := got.MarshalBinary()
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(again, frame) {
					t.Errorf("alias %v: re-encoding differs", alias)
				}
			}
		})
	}
}

func inFrame[T any](s []T, frame []byte) bool {
	if len(s) == 0 {
		return false
	}
	p := uintptr(unsafe.Pointer(&s[0]))
	lo := uintptr(unsafe.Pointer(&frame[0]))
	return p >= lo && p < lo+uintptr(len(frame))
}

func TestDecodeAliasesOrCopies(t *testing.T) {
	frame, err := gas().MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	var mb MiniBatch
	if err := Decode(frame, &mb, DecodeOptions{Alias: true}); err != nil {
		t.Fatal(err)
	}
	if littleEndian && (!inFrame(mb.InputNodes, frame) || !inFrame(mb.Blocks[1].Indices, frame) || !inFrame(mb.Features.Bits, frame) || !inFrame(mb.Halo[0].Rows.Bits, frame)) {
		t.Error("aliased decode copied an array")
	}
	// A copying decode into the same batch must not write into the frame
	// it aliased before.
	before := bytes.Clone(frame)
	other, _ := sampled().MarshalBinary()
	if err := Decode(other, &mb, DecodeOptions{}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, frame) {
		t.Error("decoding into an aliased batch wrote into the old frame")
	}
	if inFrame(mb.InputNodes, other) || inFrame(mb.Blocks[0].Indptr, other) {
		t.Error("copying decode aliased the frame")
	}
	equal(t, &mb, sampled())
	// Decoding again reuses the arrays.
	p := &mb.InputNodes[0]
	if err := Decode(other, &mb, DecodeOptions{}); err != nil {
		t.Fatal(err)
	}
	if &mb.InputNodes[0] != p {
		t.Error("a second copying decode did not reuse the input-node array")
	}
	if n := testing.AllocsPerRun(20, func() { _ = Decode(other, &mb, DecodeOptions{}) }); n > 6 {
		t.Errorf("steady-state decode makes %v allocations", n)
	}
}

// TestSetInputsSizes: SetInputs widens small and large id arrays (the
// large ones with streaming stores) into InputNodes, its seeds first,
// and keeps them as Local.
func TestSetInputsSizes(t *testing.T) {
	mb := &MiniBatch{}
	for _, n := range []int{1, 9, streamMin - 1, streamMin, streamMin + 5, 3 * streamMin} {
		local := mb.LocalBuffer()
		for i := range n {
			local = append(local, int32(i*7919%(4*n)))
		}
		mb.SetInputs(local, min(n, 3))
		if len(mb.InputNodes) != n || len(mb.Seeds) != min(n, 3) {
			t.Fatalf("n=%d: %d input nodes, %d seeds", n, len(mb.InputNodes), len(mb.Seeds))
		}
		for i, v := range local {
			if mb.InputNodes[i] != int64(v) {
				t.Fatalf("n=%d: InputNodes[%d] = %d, want %d", n, i, mb.InputNodes[i], v)
			}
		}
		if got, err := mb.Local(); err != nil || !slices.Equal(got, local) {
			t.Fatalf("n=%d: Local differs (%v)", n, err)
		}
	}
}

func TestSetEdgeIndex(t *testing.T) {
	mb := frontier()
	// hop 0: (2,0) (3,0) (0,1); hop 1: (4,2) (5,2) (6,3)
	want := []int64{2, 3, 0, 4, 5, 6, 0, 0, 1, 2, 2, 3}
	if !slices.Equal(mb.EdgeIndex, want) {
		t.Errorf("edge index %v, want %v", mb.EdgeIndex, want)
	}
	if want := []int64{11, 14, 12, 16, 10, 15, -1}; !slices.Equal(mb.InputLabels, want) {
		t.Errorf("input labels %v, want %v", mb.InputLabels, want)
	}
	// The arrays are reused by the next batch.
	p := &mb.EdgeIndex[0]
	mb.Reset()
	if mb.EdgeIndex != nil || mb.InputLabels != nil {
		t.Error("Reset kept the PyG layout")
	}
	mb.SetInputs([]int32{1, 4, 2, 6, 0, 5, 3}, 2)
	bs := mb.SetBlocks(2)
	bs[0] = graph.Block{NumSrc: 7, NumDst: 4, Indptr: []int64{0, 0, 0, 2, 3}, Indices: []int32{4, 5, 6}}
	bs[1] = graph.Block{NumSrc: 4, NumDst: 2, Indptr: []int64{0, 2, 3}, Indices: []int32{2, 3, 0}}
	if err := mb.SetEdgeIndex(); err != nil || &mb.EdgeIndex[0] != p {
		t.Errorf("second SetEdgeIndex: %v, array reused %v", err, &mb.EdgeIndex[0] == p)
	}
	bad := []struct {
		name string
		edit func(mb *MiniBatch)
		want string
	}{
		{"earlier destination", func(mb *MiniBatch) {
			mb.Blocks[0].Indptr = []int64{0, 1, 1, 2, 3}
			mb.Blocks[0].Indices = []int32{6, 4, 5}
		}, "not frontier draws"},
		{"offsets", func(mb *MiniBatch) { mb.Blocks[0].Indptr = []int64{0, 0, 0, 3, 2} }, "outside"},
		{"short indptr", func(mb *MiniBatch) { mb.Blocks[1].Indptr = []int64{0, 2} }, "2 offsets"},
		{"halo", func(mb *MiniBatch) { mb.Halo = []Halo{{}} }, "history"},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			mb := frontier()
			c.edit(mb)
			if err := mb.SetEdgeIndex(); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
		})
	}
	if err := frontier().SetInputLabels([]int32{1, 2}); err == nil || !strings.Contains(err.Error(), "no label") {
		t.Errorf("labels too short: %v", err)
	}
}

func TestFrameVersion(t *testing.T) {
	for _, c := range []struct {
		mk   func() *MiniBatch
		want uint16
	}{{sampled, 1}, {gas, 1}, {frontier, 2}} {
		f, err := c.mk().MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		if v := binary.LittleEndian.Uint16(f[4:]); v != c.want {
			t.Errorf("version %d, want %d", v, c.want)
		}
	}
}

func TestBigEndianPath(t *testing.T) {
	want := gas()
	fast, err := want.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	littleEndian = false
	defer func() { littleEndian = true }()
	slow, err := want.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(fast, slow) {
		t.Fatal("the portable encoder writes different bytes")
	}
	var got MiniBatch
	if err := Decode(slow, &got, DecodeOptions{Alias: true}); err != nil {
		t.Fatal(err)
	}
	equal(t, &got, want)
}

// TestHeaderLayout pins the byte offsets docs/wire.md documents.
func TestHeaderLayout(t *testing.T) {
	mb := sampled()
	f, err := mb.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	le := binary.LittleEndian
	if string(f[:4]) != "GMBF" || le.Uint16(f[4:]) != 1 || le.Uint16(f[6:]) != 64 || le.Uint64(f[8:]) != uint64(len(f)) {
		t.Fatalf("header % x", f[:16])
	}
	if le.Uint32(f[24:]) != 3 || le.Uint32(f[28:]) != 2 || le.Uint64(f[32:]) != 41 || le.Uint64(f[40:]) != 2 || le.Uint64(f[48:]) != 7 ||
		le.Uint16(f[56:]) != 2 || f[58] != byte(Float32) || le.Uint32(f[60:]) != 3 {
		t.Fatalf("header counts % x", f[16:64])
	}
	nsec := int(le.Uint32(f[16:]))
	// blocks, inputs, labels, features, then per layer indptr, indices, eids (+ weights on layer 1)
	if nsec != 4+3+4 {
		t.Fatalf("%d sections", nsec)
	}
	e := f[64+48*1:] // input nodes
	if le.Uint16(e) != KindInputNodes || DType(e[2]) != Int64 || e[3] != 1 || le.Uint64(e[8:]) != 7 || le.Uint64(e[16:]) != 1 || le.Uint64(e[32:]) != 56 {
		t.Fatalf("input-node entry % x", e[:48])
	}
	off := le.Uint64(e[24:])
	if off%64 != 0 || int64(le.Uint64(f[off+8:])) != 20 {
		t.Fatalf("input nodes at %d: % x", off, f[off:off+16])
	}
	e = f[64:] // blocks
	boff := le.Uint64(e[24:])
	if le.Uint16(e) != KindBlocks || le.Uint64(e[8:]) != 2 || le.Uint64(e[16:]) != 3 || boff != 64*((64+48*11+63)/64) {
		t.Fatalf("blocks entry % x", e[:48])
	}
	if le.Uint64(f[boff:]) != 7 || le.Uint64(f[boff+8:]) != 3 || le.Uint64(f[boff+16:]) != 6 || le.Uint64(f[boff+24:]) != 3 {
		t.Fatalf("blocks % x", f[boff:boff+48])
	}
}

func TestValidate(t *testing.T) {
	cases := []struct {
		name string
		edit func(*MiniBatch)
		want string
	}{
		{"no blocks", func(mb *MiniBatch) { mb.Blocks = nil }, "no blocks"},
		{"seed not prefix", func(mb *MiniBatch) { mb.Seeds = []int64{10, 30} }, "first input nodes"},
		{"negative id", func(mb *MiniBatch) { mb.InputNodes[4] = -3 }, "negative"},
		{"block 0 sources", func(mb *MiniBatch) { mb.Blocks[0].NumSrc = 6 }, "block 0 has 6 sources"},
		{"chain", func(mb *MiniBatch) { mb.Blocks[1].NumSrc = 4 }, "block 1 has 4 sources"},
		{"source position", func(mb *MiniBatch) { mb.Blocks[1].Indices[1] = 3 }, "source position 3"},
		{"indptr", func(mb *MiniBatch) { mb.Blocks[0].Indptr[2] = 1 }, "decreases"},
		{"edge ids", func(mb *MiniBatch) { mb.Blocks[0].EdgeIDs = mb.Blocks[0].EdgeIDs[:2] }, "edge ids"},
		{"seeds vs last block", func(mb *MiniBatch) { mb.Seeds = mb.InputNodes[:3]; mb.Labels = nil }, "3 seeds"},
		{"labels", func(mb *MiniBatch) { mb.Labels = mb.Labels[:1] }, "1 labels"},
		{"bad label", func(mb *MiniBatch) { mb.Labels[0] = -2 }, "label -2"},
		{"feature rows", func(mb *MiniBatch) { mb.Features.Rows = 6 }, "6 rows"},
		{"feature values", func(mb *MiniBatch) { mb.Features.F32 = mb.Features.F32[1:] }, "float32 values"},
		{"feature dtype", func(mb *MiniBatch) { mb.Features.DType = Int32 }, "dtype int32"},
		{"halo count", func(mb *MiniBatch) { mb.Halo = []Halo{{}, {}} }, "2 halos"},
		{"edge index length", func(mb *MiniBatch) { mb.EdgeIndex = make([]int64, 17) }, "17 entries for 9 edges"},
		{"edge index entry", func(mb *MiniBatch) { mb.EdgeIndex = make([]int64, 18); mb.EdgeIndex[11] = 7 }, "entry 7 (position 11)"},
		{"edge index negative", func(mb *MiniBatch) { mb.EdgeIndex = make([]int64, 18); mb.EdgeIndex[0] = -1 }, "entry -1"},
		{"input labels length", func(mb *MiniBatch) { mb.InputLabels = make([]int64, 6) }, "6 input labels"},
		{"input label", func(mb *MiniBatch) { mb.InputLabels = make([]int64, 7); mb.InputLabels[6] = -2 }, "label -2"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			mb := sampled()
			c.edit(mb)
			err := mb.Validate(0)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
			if _, err := mb.MarshalBinary(); err == nil {
				t.Fatal("encoded an invalid batch")
			}
		})
	}
	mb := sampled()
	if err := mb.Validate(70); err == nil || !strings.Contains(err.Error(), "not in [0, 70)") {
		t.Fatalf("node bound: %v", err)
	}
	if err := mb.Validate(71); err != nil {
		t.Fatal(err)
	}
}

// TestDecodeRejects corrupts single fields of a valid frame.
func TestDecodeRejects(t *testing.T) {
	good, err := sampled().MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	le := binary.LittleEndian
	entry := func(i int) int { return 64 + 48*i }
	offOf := func(f []byte, i int) uint64 { return le.Uint64(f[entry(i)+24:]) }
	cases := []struct {
		name string
		edit func(f []byte) []byte
		want string
	}{
		{"magic", func(f []byte) []byte { f[0] = 'X'; return f }, "bad magic"},
		{"version", func(f []byte) []byte { le.PutUint16(f[4:], 3); return f }, "version 3"},
		{"version 0", func(f []byte) []byte { le.PutUint16(f[4:], 0); return f }, "version 0"},
		{"version 2 kind in version 1", func(f []byte) []byte {
			le.PutUint16(f[entry(2):], KindInputLabels)
			return f
		}, "unknown kind 12 in a version 1 frame"},
		{"header size", func(f []byte) []byte { le.PutUint16(f[6:], 32); return f }, "header size"},
		{"short", func(f []byte) []byte { return f[:10] }, "too few"},
		{"truncated", func(f []byte) []byte { return f[:len(f)-64] }, "buffer has"},
		{"frame size", func(f []byte) []byte { le.PutUint64(f[8:], 100); return f }, "not a multiple"},
		{"flags", func(f []byte) []byte { le.PutUint32(f[20:], 6); return f }, "flags"},
		{"layers", func(f []byte) []byte { le.PutUint16(f[56:], 0); return f }, "0 layers"},
		{"seeds", func(f []byte) []byte { le.PutUint64(f[40:], 9); return f }, "9 seeds"},
		{"sections", func(f []byte) []byte { le.PutUint32(f[16:], 1<<30); return f }, "do not fit"},
		{"feature dtype", func(f []byte) []byte { f[58] = byte(Int32); return f }, "feature dtype code"},
		{"kind", func(f []byte) []byte { le.PutUint16(f[entry(2):], 99); return f }, "unknown kind"},
		{"dtype", func(f []byte) []byte { f[entry(1)+2] = byte(Int32); return f }, "dtype int32"},
		{"unaligned", func(f []byte) []byte { le.PutUint64(f[entry(1)+24:], offOf(f, 1)+8); return f }, "multiple of 64"},
		{"overlap", func(f []byte) []byte { le.PutUint64(f[entry(2)+24:], offOf(f, 1)); return f }, "overlap"},
		{"past end", func(f []byte) []byte { le.PutUint64(f[entry(10)+24:], uint64(len(f))); return f }, "overlap"},
		{"length", func(f []byte) []byte { le.PutUint64(f[entry(1)+32:], 48); return f }, "bytes for shape"},
		{"shape overflow", func(f []byte) []byte {
			le.PutUint64(f[entry(3)+8:], 1<<62)
			le.PutUint64(f[entry(3)+16:], 1<<3)
			return f
		}, "bytes for shape"},
		{"duplicate", func(f []byte) []byte { copy(f[entry(3):entry(4)], f[entry(2):entry(3)]); return f }, "twice"},
		{"reserved", func(f []byte) []byte { f[entry(0)+40] = 1; return f }, "reserved"},
		{"missing indices", func(f []byte) []byte {
			le.PutUint16(f[entry(5):], KindEdgeWeights)
			f[entry(5)+2] = byte(Float32)
			return f
		}, "no indices"},
		{"source out of range", func(f []byte) []byte {
			o := offOf(f, 5) // block 0 indices
			le.PutUint32(f[o:], 7)
			return f
		}, "source position 7"},
		{"block counts", func(f []byte) []byte { le.PutUint64(f[offOf(f, 0)+8:], 8); return f }, "8 destinations"},
		{"negative input", func(f []byte) []byte { le.PutUint64(f[offOf(f, 1):], 1<<63); return f }, "negative"},
		{"halo without flag", func(f []byte) []byte { le.PutUint16(f[entry(9):], KindHaloNodes); return f }, "without the halo flag"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := c.edit(bytes.Clone(good))
			var mb MiniBatch
			err := Decode(f, &mb, DecodeOptions{})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
		})
	}
	var mb MiniBatch
	if err := Decode(good, &mb, DecodeOptions{NumNodes: 50}); err == nil || !strings.Contains(err.Error(), "not in [0, 50)") {
		t.Fatalf("NumNodes: %v", err)
	}
}

func TestFrameSize(t *testing.T) {
	f, _ := gas().MarshalBinary()
	n, err := FrameSize(f[:16])
	if err != nil || n != len(f) {
		t.Fatalf("FrameSize = %d, %v; want %d", n, err, len(f))
	}
}

func TestRelease(t *testing.T) {
	var got *MiniBatch
	mb := sampled()
	mb.SetRelease(func(b *MiniBatch) { got = b })
	mb.Release()
	if got != mb {
		t.Fatal("Release did not call the hook")
	}
	got = nil
	mb.Release()
	if got != nil {
		t.Fatal("a second Release called the hook again")
	}
	mb.SetRelease(func(b *MiniBatch) { got = b })
	mb.Reset()
	if len(mb.InputNodes) != 0 || len(mb.Blocks) != 0 || mb.Features.Rows != 0 || cap(mb.InputNodes) == 0 {
		t.Fatalf("Reset left %+v", mb)
	}
	mb.Release()
	if got != mb {
		t.Fatal("Reset dropped the release hook")
	}
	(&MiniBatch{}).Release() // no hook: no-op
}

func TestLocal(t *testing.T) {
	mb := gas()
	if _, err := mb.Local(); err == nil {
		t.Fatal("an id of 2^40 converted to int32")
	}
	mb = sampled()
	l, err := mb.Local()
	if err != nil || !reflect.DeepEqual(l, []int32{10, 20, 30, 40, 50, 60, 70}) {
		t.Fatalf("Local = %v, %v", l, err)
	}
	mb.SetInputs64([]int64{4, 5, 6, 7, 8, 9, 1}, 2)
	if l, _ := mb.Local(); l[6] != 1 {
		t.Fatalf("stale Local %v", l)
	}
}

func FuzzDecode(f *testing.F) {
	for _, mk := range []func() *MiniBatch{sampled, gas, frontier} {
		b, err := mk().MarshalBinary()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	if b, err := os.ReadFile("testdata/sampled.gmbf"); err == nil {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		var mb MiniBatch
		for _, alias := range []bool{false, true} {
			if err := Decode(frame, &mb, DecodeOptions{Alias: alias}); err != nil {
				continue
			}
			// A frame that decodes re-encodes to the same bytes, apart
			// from padding and section order.
			again, err := mb.MarshalBinary()
			if err != nil {
				t.Fatalf("decoded batch does not encode: %v", err)
			}
			var mb2 MiniBatch
			if err := Decode(again, &mb2, DecodeOptions{}); err != nil {
				t.Fatalf("re-encoded frame does not decode: %v", err)
			}
			equal(t, &mb2, &mb)
		}
	})
}

// TestResetSharedArrays: a batch whose layers share one block and whose
// halos view its input nodes (GNNAutoScale) is refilled without two
// arrays landing in the same storage.
func TestResetSharedArrays(t *testing.T) {
	mb := gas()
	mb.Reset()
	if len(mb.Blocks) != 0 {
		t.Fatal("blocks kept")
	}
	bs := mb.SetBlocks(2)
	if cap(bs[1].Indptr) != 0 && &bs[1].Indptr[:1][0] == &bs[0].Indptr[:1][0] {
		t.Fatal("block 1 kept block 0's storage")
	}
	if mb.Halo = mb.Halo[:1]; mb.Halo[0].Nodes != nil {
		t.Fatal("a halo that viewed the input nodes kept their storage")
	}
	src := sampled()
	var b MiniBatch
	b.Seq = 9
	b.Borrow(src)
	if b.Seq != 9 || len(b.InputNodes) != 7 || &b.InputNodes[0] != &src.InputNodes[0] {
		t.Fatal("Borrow did not share the arrays")
	}
	b.Reset()
	if cap(b.InputNodes) != 0 || src.InputNodes[0] != 10 {
		t.Fatal("Reset kept borrowed arrays")
	}
}

func f32bits(x []float32) []uint32 {
	out := make([]uint32, len(x))
	for i, v := range x {
		out[i] = math.Float32bits(v)
	}
	return out
}

func TestReadFrame(t *testing.T) {
	var stream bytes.Buffer
	a, _ := sampled().MarshalBinary()
	b, _ := gas().MarshalBinary()
	stream.Write(a)
	stream.Write(b)
	var buf []byte
	var mb MiniBatch
	for i, want := range []*MiniBatch{sampled(), gas()} {
		var err error
		buf, err = ReadFrame(&stream, buf)
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if err := Decode(buf, &mb, DecodeOptions{}); err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		equal(t, &mb, want)
	}
	if _, err := ReadFrame(&stream, buf); err != io.EOF {
		t.Fatalf("at the end: %v, want io.EOF", err)
	}
	if _, err := ReadFrame(bytes.NewReader(a[:100]), nil); err != io.ErrUnexpectedEOF {
		t.Fatalf("truncated: %v, want io.ErrUnexpectedEOF", err)
	}
	if _, err := ReadFrame(bytes.NewReader(make([]byte, 64)), nil); err == nil || !strings.Contains(err.Error(), "magic") {
		t.Fatalf("garbage: %v", err)
	}
}

package batch

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"

	"github.com/graphmill/graphmill/graph"
)

// The wire format of a MiniBatch (docs/wire.md is its full specification):
// a 64-byte header, a table of 48-byte section entries, then the sections'
// bytes, each starting at a multiple of 64 bytes from the frame's start, so
// that a reader can view every array in place (numpy.frombuffer).
const (
	// Magic is the frame's first four bytes.
	Magic = "GMBF"
	// Version is the newest format version this package writes and reads.
	// A frame is written as version 1 unless it holds a section that
	// version 2 added (edge_index, input_labels), so that a version 1
	// reader reads every frame it can.
	Version = 2
	// HeaderSize is the size of the fixed header.
	HeaderSize = 64
	// EntrySize is the size of one section-table entry.
	EntrySize = 48
	// Align is the alignment of every section's offset (and of the frame's
	// size).
	Align = 64
)

// Section kinds (the wire's kind codes).
const (
	KindInputNodes  = 1  // int64 [num_inputs]
	KindLabels      = 2  // int32 [num_seeds]
	KindFeatures    = 3  // float [num_inputs, feature_dim]
	KindBlocks      = 4  // int64 [num_layers, 3]: num_src, num_dst, num_edges per block
	KindIndptr      = 5  // int64 [num_dst+1] of block `layer`
	KindIndices     = 6  // int32 [num_edges] of block `layer`
	KindEdgeIDs     = 7  // int64 [num_edges] of block `layer`
	KindEdgeWeights = 8  // float32 [num_edges] of block `layer`
	KindHaloNodes   = 9  // int64 [num_halo] of block `layer` >= 1
	KindHaloRows    = 10 // float [num_halo, dim] of block `layer` >= 1
	KindEdgeIndex   = 11 // int64 [2, num_edges]: PyG's edge_index (version 2)
	KindInputLabels = 12 // int64 [num_inputs] (version 2)
	numKinds        = 12
	numKindsV1      = 10
)

// FlagHalo is the header flag saying that the frame holds history sources
// (a KindHaloNodes section for every block after the first).
const FlagHalo = 1

// maxFrame bounds a frame's size (1 TiB) so that no count can overflow.
const maxFrame = 1 << 40

type entry struct {
	kind       uint16
	dtype      DType
	ndim       uint8
	layer      uint32
	dim0, dim1 uint64
	off, size  uint64
}

func align(n uint64) uint64 { return (n + Align - 1) &^ (Align - 1) }

func mul64(a, b uint64) (hi, lo uint64) { return bits.Mul64(a, b) }

// sections lists mb's sections in the order a writer emits them.
func (mb *MiniBatch) sections() []entry {
	L := len(mb.Blocks)
	es := make([]entry, 0, 4+5*L)
	add := func(kind uint16, t DType, layer int, d0, d1 int, nd uint8) {
		es = append(es, entry{kind: kind, dtype: t, ndim: nd, layer: uint32(layer), dim0: uint64(d0), dim1: uint64(d1),
			size: uint64(d0) * uint64(d1) * uint64(t.Size())})
	}
	add(KindBlocks, Int64, 0, L, 3, 2)
	add(KindInputNodes, Int64, 0, len(mb.InputNodes), 1, 1)
	if mb.Labels != nil {
		add(KindLabels, Int32, 0, len(mb.Labels), 1, 1)
	}
	if mb.InputLabels != nil {
		add(KindInputLabels, Int64, 0, len(mb.InputLabels), 1, 1)
	}
	if !mb.Features.Empty() {
		add(KindFeatures, mb.Features.DType, 0, mb.Features.Rows, mb.Features.Dim, 2)
	}
	if mb.EdgeIndex != nil {
		add(KindEdgeIndex, Int64, 0, 2, len(mb.EdgeIndex)/2, 2)
	}
	for l := range mb.Blocks {
		b := &mb.Blocks[l]
		add(KindIndptr, Int64, l, len(b.Indptr), 1, 1)
		add(KindIndices, Int32, l, len(b.Indices), 1, 1)
		if b.EdgeIDs != nil {
			add(KindEdgeIDs, Int64, l, len(b.EdgeIDs), 1, 1)
		}
		if b.Weights != nil {
			add(KindEdgeWeights, Float32, l, len(b.Weights), 1, 1)
		}
		if l > 0 && mb.Halo != nil {
			h := &mb.Halo[l-1]
			add(KindHaloNodes, Int64, l, len(h.Nodes), 1, 1)
			if !h.Rows.Empty() {
				add(KindHaloRows, h.Rows.DType, l, h.Rows.Rows, h.Rows.Dim, 2)
			}
		}
	}
	off := align(HeaderSize + EntrySize*uint64(len(es)))
	for i := range es {
		es[i].off = off
		off = align(off + es[i].size)
	}
	return es
}

// EncodedLen returns the size of mb's frame.
func (mb *MiniBatch) EncodedLen() int {
	es := mb.sections()
	last := es[len(es)-1]
	return int(align(last.off + last.size))
}

// MarshalBinary encodes mb as one frame (see AppendBinary).
func (mb *MiniBatch) MarshalBinary() ([]byte, error) {
	return mb.AppendBinary(make([]byte, 0, mb.EncodedLen()))
}

// AppendBinary appends mb's frame to b and returns the extended slice. The
// frame's offsets are relative to its own start, so a frame appended at an
// offset that is not a multiple of 64 is still valid but its arrays may not
// be aligned in memory. It validates mb first (Validate) and encodes
// nothing when that fails.
func (mb *MiniBatch) AppendBinary(b []byte) ([]byte, error) {
	if err := mb.Validate(0); err != nil {
		return b, err
	}
	es := mb.sections()
	last := es[len(es)-1]
	size := align(last.off + last.size)
	if size > maxFrame {
		return b, fmt.Errorf("batch: frame of %d bytes is larger than the limit of %d", size, uint64(maxFrame))
	}
	start := len(b)
	b = grow(b, int(size))
	f := b[start:]
	// Only the bytes no section writes are zeroed (the header and table,
	// the padding after each section): clearing the whole frame first cost
	// a pass over megabytes of features and edges.
	clear(f[:es[0].off])
	copy(f[0:4], Magic)
	le := binary.LittleEndian
	version := uint16(1)
	for _, e := range es {
		if e.kind > numKindsV1 {
			version = 2
		}
	}
	le.PutUint16(f[4:], version)
	le.PutUint16(f[6:], HeaderSize)
	le.PutUint64(f[8:], size)
	le.PutUint32(f[16:], uint32(len(es)))
	var flags uint32
	if mb.Halo != nil {
		flags |= FlagHalo
	}
	le.PutUint32(f[20:], flags)
	le.PutUint32(f[24:], mb.Sender)
	le.PutUint32(f[28:], mb.Epoch)
	le.PutUint64(f[32:], mb.Seq)
	le.PutUint64(f[40:], uint64(len(mb.Seeds)))
	le.PutUint64(f[48:], uint64(len(mb.InputNodes)))
	le.PutUint16(f[56:], uint16(len(mb.Blocks)))
	if !mb.Features.Empty() {
		f[58] = byte(mb.Features.DType)
		le.PutUint32(f[60:], uint32(mb.Features.Dim))
	}
	for i, e := range es {
		p := f[HeaderSize+EntrySize*i:]
		le.PutUint16(p[0:], e.kind)
		p[2], p[3] = byte(e.dtype), e.ndim
		le.PutUint32(p[4:], e.layer)
		le.PutUint64(p[8:], e.dim0)
		le.PutUint64(p[16:], e.dim1)
		le.PutUint64(p[24:], e.off)
		le.PutUint64(p[32:], e.size)
		d := f[e.off : e.off+e.size]
		end := size
		if i+1 < len(es) {
			end = es[i+1].off
		}
		clear(f[e.off+e.size : end])
		l := int(e.layer)
		switch e.kind {
		case KindBlocks:
			for k := range mb.Blocks {
				bl := &mb.Blocks[k]
				le.PutUint64(d[24*k:], uint64(bl.NumSrc))
				le.PutUint64(d[24*k+8:], uint64(bl.NumDst))
				le.PutUint64(d[24*k+16:], uint64(len(bl.Indices)))
			}
		case KindInputNodes:
			putArray(d, mb.InputNodes)
		case KindLabels:
			putArray(d, mb.Labels)
		case KindInputLabels:
			putArray(d, mb.InputLabels)
		case KindEdgeIndex:
			putArray(d, mb.EdgeIndex)
		case KindFeatures:
			putRows(d, &mb.Features)
		case KindIndptr:
			putArray(d, mb.Blocks[l].Indptr)
		case KindIndices:
			putArray(d, mb.Blocks[l].Indices)
		case KindEdgeIDs:
			putArray(d, mb.Blocks[l].EdgeIDs)
		case KindEdgeWeights:
			putArray(d, mb.Blocks[l].Weights)
		case KindHaloNodes:
			putArray(d, mb.Halo[l-1].Nodes)
		case KindHaloRows:
			putRows(d, &mb.Halo[l-1].Rows)
		}
	}
	return b, nil
}

func putRows(d []byte, r *Rows) {
	if r.DType == Float32 {
		putArray(d, r.F32)
	} else {
		putArray(d, r.Bits)
	}
}

// grow extends b by n bytes (of any value).
func grow(b []byte, n int) []byte {
	if cap(b)-len(b) < n {
		nb := make([]byte, len(b), len(b)+n)
		copy(nb, b)
		b = nb
	}
	return b[:len(b)+n]
}

// FrameSize returns the size of the frame whose header starts hdr (at least
// its first 16 bytes), after checking its magic, version and header size:
// a reader of a byte stream reads 16 bytes, then the rest of the frame.
func FrameSize(hdr []byte) (int, error) {
	if len(hdr) < 16 {
		return 0, fmt.Errorf("batch: %d bytes are too few for a frame header (16 needed to size it)", len(hdr))
	}
	if string(hdr[:4]) != Magic {
		return 0, fmt.Errorf("batch: bad magic %q (want %q): not a minibatch frame", hdr[:4], Magic)
	}
	le := binary.LittleEndian
	if v := le.Uint16(hdr[4:]); v < 1 || v > Version {
		return 0, fmt.Errorf("batch: frame version %d; this reader knows versions 1 to %d", v, Version)
	}
	if h := le.Uint16(hdr[6:]); h != HeaderSize {
		return 0, fmt.Errorf("batch: header size %d; frames have %d", h, HeaderSize)
	}
	size := le.Uint64(hdr[8:])
	if size < HeaderSize || size%Align != 0 || size > maxFrame {
		return 0, fmt.Errorf("batch: frame size %d is not a multiple of %d in [%d, %d]", size, Align, Align, uint64(maxFrame))
	}
	return int(size), nil
}

// DecodeOptions configure Decode.
type DecodeOptions struct {
	// Alias makes the decoded arrays views of the frame's bytes instead of
	// copies where the host is little-endian and the array is aligned in
	// memory (it is when the frame starts at an 8-byte aligned address, as
	// Go allocations of 8 bytes or more do). The frame must then stay
	// unchanged while the batch is in use; Reset and later decodes never
	// write into it.
	Alias bool
	// NumNodes, when positive, is the number of nodes of the graph: node
	// ids must be below it.
	NumNodes int64
}

// UnmarshalBinary decodes a frame into mb, copying every array (see
// Decode).
func (mb *MiniBatch) UnmarshalBinary(frame []byte) error {
	return Decode(frame, mb, DecodeOptions{})
}

// Decode decodes one frame (exactly: len(frame) must be the frame's size)
// into mb, reusing mb's arrays where it copies. It validates the header,
// the section table (kinds, dtypes, shapes, offsets, lengths) and the
// batch itself (MiniBatch.Validate), so that a frame that decodes without
// error is safe to use; on error mb is left reset or partly filled and
// must not be used. It never panics.
func Decode(frame []byte, mb *MiniBatch, opt DecodeOptions) error {
	size, err := FrameSize(frame)
	if err != nil {
		return err
	}
	if size != len(frame) {
		return fmt.Errorf("batch: frame header says %d bytes, buffer has %d", size, len(frame))
	}
	le := binary.LittleEndian
	nsec := uint64(le.Uint32(frame[16:]))
	flags := le.Uint32(frame[20:])
	if flags&^FlagHalo != 0 {
		return fmt.Errorf("batch: unknown header flags %#x", flags)
	}
	numSeeds := le.Uint64(frame[40:])
	numInputs := le.Uint64(frame[48:])
	L := uint64(le.Uint16(frame[56:]))
	fdt := DType(frame[58])
	if frame[59] != 0 {
		return fmt.Errorf("batch: reserved header byte 59 is %d, not 0", frame[59])
	}
	fdim := uint64(le.Uint32(frame[60:]))
	if L == 0 || L > maxLayers {
		return fmt.Errorf("batch: %d layers (want 1 to %d)", L, maxLayers)
	}
	if numSeeds > numInputs || numInputs > uint64(size) {
		return fmt.Errorf("batch: %d seeds and %d input nodes in a frame of %d bytes", numSeeds, numInputs, size)
	}
	if (fdt == 0) != (fdim == 0) || fdt != 0 && !fdt.IsFloat() {
		return fmt.Errorf("batch: feature dtype code %d with dimension %d", fdt, fdim)
	}
	tableEnd := HeaderSize + EntrySize*nsec
	if nsec == 0 || tableEnd > uint64(size) {
		return fmt.Errorf("batch: %d sections do not fit a frame of %d bytes", nsec, size)
	}
	halo := flags&FlagHalo != 0
	// Read and check the table.
	es := make([]entry, nsec)
	seen := make(map[[2]uint32]bool, nsec)
	prevEnd := align(tableEnd)
	for i := range es {
		p := frame[HeaderSize+EntrySize*uint64(i):]
		e := entry{kind: le.Uint16(p[0:]), dtype: DType(p[2]), ndim: p[3], layer: le.Uint32(p[4:]),
			dim0: le.Uint64(p[8:]), dim1: le.Uint64(p[16:]), off: le.Uint64(p[24:]), size: le.Uint64(p[32:])}
		if r := le.Uint64(p[40:]); r != 0 {
			return fmt.Errorf("batch: section %d: reserved field is %d, not 0", i, r)
		}
		if err := checkEntry(e, L, halo, le.Uint16(frame[4:])); err != nil {
			return fmt.Errorf("batch: section %d: %w", i, err)
		}
		key := [2]uint32{uint32(e.kind), e.layer}
		if seen[key] {
			return fmt.Errorf("batch: section %d: %s of layer %d appears twice", i, kindName(e.kind), e.layer)
		}
		seen[key] = true
		if e.ndim == 1 && e.dim1 != 1 || e.ndim != 1 && e.ndim != 2 {
			return fmt.Errorf("batch: section %d (%s): ndim %d with second dimension %d", i, kindName(e.kind), e.ndim, e.dim1)
		}
		hi, n := mul64(e.dim0, e.dim1)
		hi2, nb := mul64(n, uint64(e.dtype.Size()))
		if hi != 0 || hi2 != 0 || nb != e.size {
			return fmt.Errorf("batch: section %d (%s): %d bytes for shape %d x %d of %s", i, kindName(e.kind), e.size, e.dim0, e.dim1, e.dtype)
		}
		if e.off%Align != 0 {
			return fmt.Errorf("batch: section %d (%s): offset %d is not a multiple of %d", i, kindName(e.kind), e.off, Align)
		}
		if e.off < prevEnd || e.off > uint64(size) || e.size > uint64(size)-e.off {
			return fmt.Errorf("batch: section %d (%s): bytes [%d, %d) overlap the previous section or the table, or pass the frame's end (%d)", i, kindName(e.kind), e.off, e.off+e.size, size)
		}
		prevEnd = e.off + e.size
		es[i] = e
	}
	// Required sections and header counts.
	need := func(kind uint16, layer uint64) error {
		if !seen[[2]uint32{uint32(kind), uint32(layer)}] {
			return fmt.Errorf("batch: no %s section for layer %d", kindName(kind), layer)
		}
		return nil
	}
	if err := need(KindBlocks, 0); err != nil {
		return err
	}
	if err := need(KindInputNodes, 0); err != nil {
		return err
	}
	if fdt != 0 {
		if err := need(KindFeatures, 0); err != nil {
			return err
		}
	} else if seen[[2]uint32{KindFeatures, 0}] {
		return errors.New("batch: a features section, but the header has no feature dtype")
	}
	for l := uint64(0); l < L; l++ {
		if err := need(KindIndptr, l); err != nil {
			return err
		}
		if err := need(KindIndices, l); err != nil {
			return err
		}
		if halo && l > 0 {
			if err := need(KindHaloNodes, l); err != nil {
				return err
			}
		}
	}
	// Fill mb.
	mb.Reset()
	mb.borrowed = opt.Alias
	mb.Sender, mb.Epoch, mb.Seq = le.Uint32(frame[24:]), le.Uint32(frame[28:]), le.Uint64(frame[32:])
	labels := mb.Labels[:0]
	mb.Labels = nil
	blocks := mb.SetBlocks(int(L))
	if halo {
		if cap(mb.Halo) < int(L)-1 {
			nh := make([]Halo, L-1)
			copy(nh, mb.Halo[:cap(mb.Halo)])
			mb.Halo = nh
		}
		mb.Halo = mb.Halo[:L-1]
	} else {
		mb.Halo = nil
	}
	eids := make([][]int64, L)
	weights := make([][]float32, L)
	for l := range blocks {
		eids[l], weights[l] = blocks[l].EdgeIDs[:0], blocks[l].Weights[:0]
		blocks[l].EdgeIDs, blocks[l].Weights = nil, nil
	}
	for _, e := range es {
		d := frame[e.off : e.off+e.size]
		l := int(e.layer)
		switch e.kind {
		case KindBlocks:
			if e.dim0 != L || e.dim1 != 3 {
				return fmt.Errorf("batch: blocks section has shape %d x %d for %d layers (want %d x 3)", e.dim0, e.dim1, L, L)
			}
			for k := range blocks {
				src, dst, edges := le.Uint64(d[24*k:]), le.Uint64(d[24*k+8:]), le.Uint64(d[24*k+16:])
				if src > graph.MaxNodes || dst > src || edges > uint64(size) {
					return fmt.Errorf("batch: block %d has %d sources, %d destinations and %d edges", k, src, dst, edges)
				}
				blocks[k].NumSrc, blocks[k].NumDst = int(src), int(dst)
			}
		case KindInputNodes:
			if e.dim0 != numInputs {
				return fmt.Errorf("batch: input nodes section has %d entries; the header says %d", e.dim0, numInputs)
			}
			mb.InputNodes = getArray(d, mb.InputNodes, opt.Alias)
		case KindLabels:
			if e.dim0 != numSeeds {
				return fmt.Errorf("batch: labels section has %d entries for %d seeds", e.dim0, numSeeds)
			}
			mb.Labels = getArray(d, labels, opt.Alias)
		case KindInputLabels:
			if e.dim0 != numInputs {
				return fmt.Errorf("batch: input labels section has %d entries; the header says %d input nodes", e.dim0, numInputs)
			}
			mb.ilStore = getArray(d, mb.ilStore, opt.Alias)
			mb.InputLabels = mb.ilStore
		case KindEdgeIndex:
			if e.dim0 != 2 {
				return fmt.Errorf("batch: edge index section has %d rows, want 2", e.dim0)
			}
			mb.eiStore = getArray(d, mb.eiStore, opt.Alias)
			mb.EdgeIndex = mb.eiStore
		case KindFeatures:
			if e.dtype != fdt || e.dim1 != fdim || e.dim0 != numInputs {
				return fmt.Errorf("batch: features section is %d x %d of %s; the header says %d x %d of %s", e.dim0, e.dim1, e.dtype, numInputs, fdim, fdt)
			}
			getRows(d, &mb.Features, e, opt.Alias)
		case KindIndptr:
			blocks[l].Indptr = getArray(d, blocks[l].Indptr, opt.Alias)
		case KindIndices:
			blocks[l].Indices = getArray(d, blocks[l].Indices, opt.Alias)
		case KindEdgeIDs:
			blocks[l].EdgeIDs = getArray(d, eids[l], opt.Alias)
		case KindEdgeWeights:
			blocks[l].Weights = getArray(d, weights[l], opt.Alias)
		case KindHaloNodes:
			mb.Halo[l-1].Nodes = getArray(d, mb.Halo[l-1].Nodes, opt.Alias)
		case KindHaloRows:
			getRows(d, &mb.Halo[l-1].Rows, e, opt.Alias)
		}
	}
	mb.Seeds = mb.InputNodes[:numSeeds]
	if err := mb.Validate(opt.NumNodes); err != nil {
		return err
	}
	return nil
}

// checkEntry checks an entry's kind, dtype and layer against the header
// (of a frame of the given version).
func checkEntry(e entry, L uint64, halo bool, version uint16) error {
	if e.kind == 0 || e.kind > numKinds || version == 1 && e.kind > numKindsV1 {
		return fmt.Errorf("unknown kind %d in a version %d frame", e.kind, version)
	}
	var want DType // 0: a float dtype
	switch e.kind {
	case KindInputNodes, KindBlocks, KindIndptr, KindEdgeIDs, KindHaloNodes, KindEdgeIndex, KindInputLabels:
		want = Int64
	case KindLabels, KindIndices:
		want = Int32
	case KindEdgeWeights:
		want = Float32
	}
	switch {
	case want != 0 && e.dtype != want:
		return fmt.Errorf("%s has dtype %s, want %s", kindName(e.kind), e.dtype, want)
	case want == 0 && !e.dtype.IsFloat():
		return fmt.Errorf("%s has dtype %s, want float32, float16 or bfloat16", kindName(e.kind), e.dtype)
	}
	wantNdim := uint8(1)
	if e.kind == KindFeatures || e.kind == KindBlocks || e.kind == KindHaloRows || e.kind == KindEdgeIndex {
		wantNdim = 2
	}
	if e.ndim != wantNdim {
		return fmt.Errorf("%s has %d dimensions, want %d", kindName(e.kind), e.ndim, wantNdim)
	}
	switch e.kind {
	case KindInputNodes, KindLabels, KindFeatures, KindBlocks, KindEdgeIndex, KindInputLabels:
		if e.layer != 0 {
			return fmt.Errorf("%s has layer %d, want 0", kindName(e.kind), e.layer)
		}
	case KindHaloNodes, KindHaloRows:
		if !halo {
			return fmt.Errorf("%s in a frame without the halo flag", kindName(e.kind))
		}
		if e.layer == 0 || uint64(e.layer) >= L {
			return fmt.Errorf("%s has layer %d, want 1 to %d", kindName(e.kind), e.layer, L-1)
		}
	default:
		if uint64(e.layer) >= L {
			return fmt.Errorf("%s has layer %d of %d", kindName(e.kind), e.layer, L)
		}
	}
	if e.kind == KindHaloRows && e.dim1 == 0 {
		return errors.New("halo rows have dimension 0")
	}
	if e.kind == KindFeatures && e.dim1 == 0 {
		return errors.New("features have dimension 0")
	}
	return nil
}

func kindName(k uint16) string {
	names := [...]string{"", "input_nodes", "labels", "features", "blocks", "indptr", "indices", "edge_ids", "edge_weights", "halo_nodes", "halo_rows",
		"edge_index", "input_labels"}
	if int(k) < len(names) && k > 0 {
		return names[k]
	}
	return fmt.Sprintf("kind %d", k)
}

func getRows(d []byte, r *Rows, e entry, alias bool) {
	r.DType, r.Rows, r.Dim = e.dtype, int(e.dim0), int(e.dim1)
	if e.dtype == Float32 {
		r.F32 = getArray(d, r.F32, alias)
		r.Bits = r.Bits[:0]
	} else {
		r.Bits = getArray(d, r.Bits, alias)
		r.F32 = r.F32[:0]
	}
}

// ReadFrame reads one frame from a byte stream into buf's storage (grown as
// needed; reuse the returned slice for the next frame) and returns it,
// ready for Decode. It returns io.EOF when the stream ends before a frame
// starts, io.ErrUnexpectedEOF when it ends inside one, and an error for a
// header that is not a frame's. A frame read into a fresh buffer is
// aligned for Decode's aliasing (Go allocates byte slices of 16 bytes or
// more at 16-byte aligned addresses or better).
func ReadFrame(r io.Reader, buf []byte) ([]byte, error) {
	if cap(buf) < 16 {
		buf = make([]byte, 0, 4096)
	}
	buf = buf[:16]
	if _, err := io.ReadFull(r, buf); err != nil {
		return buf[:0], err
	}
	size, err := FrameSize(buf)
	if err != nil {
		return buf[:0], err
	}
	if cap(buf) < size {
		nb := make([]byte, size)
		copy(nb, buf)
		buf = nb
	}
	buf = buf[:size]
	if _, err := io.ReadFull(r, buf[16:]); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return buf[:0], err
	}
	return buf, nil
}

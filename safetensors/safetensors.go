// Package safetensors reads and writes the safetensors format that
// PyTorch users load with safetensors.torch.load_file: an 8-byte
// little-endian header length, a JSON header mapping tensor names to dtype,
// shape and byte offsets (plus an optional "__metadata__" string map), then
// the raw little-endian tensor bytes.
//
// graphmill implements it itself because the format is a page of code and
// no maintained Go module for it is reachable from our module proxy.
// Tensors are written as float32 ("F32"), or rounded to F16 or BF16 where
// Tensor.DType asks (a table of half values, kept at its size). Read understands the other standard
// dtypes too (F64, F16, BF16, I64, I32, I16, I8, U64, U32, U16, U8, BOOL),
// as a PyTorch state_dict holds them (BatchNorm's num_batches_tracked is
// an I64 scalar): it converts their values to float32 and records the
// stored dtype in Tensor.DType, and a caller that needs F32 data (nn's
// checkpoint loading, for the weights) checks it and refuses the rest with
// a clear message. A dtype outside that list (F8_*) is an error.
package safetensors

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"sort"
	"unsafe"

	"github.com/graphmill/graphmill/internal/atomicfile"
	"github.com/graphmill/graphmill/internal/half"
)

// Tensor is one named tensor, its values as float32.
type Tensor struct {
	Name  string
	Shape []int
	Data  []float32
	// DType is the element type stored in the file ("F32", "I64", ...):
	// Read sets it and converts the values to Data (exactly for F32, F16,
	// BF16, BOOL and the integers of at most 16 bits; rounded to float32
	// for F64 and for integers beyond 2^24 in magnitude). Write writes
	// F32 ("" too), F16 or BF16 (rounding the values to nearest even).
	DType string
	// Rows, when set, makes Write stream the tensor instead of writing
	// Data (which it ignores): Rows fills dst with the values of rows
	// [row0, row0+len(dst)/width), width being the product of Shape[1:],
	// a chunk of about 1 MiB at a time. It is for tables too large to
	// copy whole first (GAS's history tables in a training state). A
	// tensor Open left in the file has Rows, reading from it, and no Data.
	Rows func(row0 int, dst []float32) error
}

// dtypes maps the dtypes Read understands to their size in bytes.
var dtypes = map[string]int64{
	"F64": 8, "F32": 4, "F16": 2, "BF16": 2,
	"I64": 8, "I32": 4, "I16": 2, "I8": 1,
	"U64": 8, "U32": 4, "U16": 2, "U8": 1, "BOOL": 1,
}

// decode converts n little-endian elements of dtype dt in b to float32.
func decode(dt string, b []byte, out []float32) {
	le := binary.LittleEndian
	for i := range out {
		var v float32
		switch dt {
		case "F64":
			v = float32(math.Float64frombits(le.Uint64(b[8*i:])))
		case "F16":
			v = half.F16ToF32(le.Uint16(b[2*i:]))
		case "BF16":
			v = half.BF16ToF32(le.Uint16(b[2*i:]))
		case "I64":
			v = float32(int64(le.Uint64(b[8*i:])))
		case "I32":
			v = float32(int32(le.Uint32(b[4*i:])))
		case "I16":
			v = float32(int16(le.Uint16(b[2*i:])))
		case "I8":
			v = float32(int8(b[i]))
		case "U64":
			v = float32(le.Uint64(b[8*i:]))
		case "U32":
			v = float32(le.Uint32(b[4*i:]))
		case "U16":
			v = float32(le.Uint16(b[2*i:]))
		case "U8":
			v = float32(b[i])
		case "BOOL":
			if b[i] != 0 {
				v = 1
			}
		}
		out[i] = v
	}
}

type entry struct {
	DType   string   `json:"dtype"`
	Shape   []int    `json:"shape"`
	Offsets [2]int64 `json:"data_offsets"`
}

// ErrFormat is wrapped by every error about a malformed file.
var ErrFormat = errors.New("not a valid safetensors file")

// maxHeader bounds the JSON header we accept (safetensors' own limit is 100 MB).
const maxHeader = 100 << 20

// Write writes tensors and metadata to path atomically (temporary file,
// fsync, rename), so a crash never leaves a half-written checkpoint.
func Write(path string, tensors []Tensor, metadata map[string]string) error {
	header := map[string]any{}
	if len(metadata) > 0 {
		header["__metadata__"] = metadata
	}
	off := int64(0)
	for _, t := range tensors {
		n := 1
		for _, d := range t.Shape {
			n *= d
		}
		if t.Rows == nil && n != len(t.Data) {
			return fmt.Errorf("safetensors: tensor %s has shape %v but %d values", t.Name, t.Shape, len(t.Data))
		}
		dt := t.DType
		switch dt {
		case "":
			dt = "F32"
		case "F32", "F16", "BF16":
		default:
			return fmt.Errorf("safetensors: tensor %s has dtype %s; Write writes F32, F16 and BF16", t.Name, t.DType)
		}
		if _, dup := header[t.Name]; dup || t.Name == "__metadata__" {
			return fmt.Errorf("safetensors: duplicate or reserved tensor name %q", t.Name)
		}
		size := int64(n) * dtypes[dt]
		header[t.Name] = entry{DType: dt, Shape: append([]int{}, t.Shape...), Offsets: [2]int64{off, off + size}}
		off += size
	}
	hj, err := json.Marshal(header)
	if err != nil {
		return err
	}
	// Pad the header with spaces so the data starts 8-byte aligned.
	for len(hj)%8 != 0 {
		hj = append(hj, ' ')
	}
	var lenb [8]byte
	binary.LittleEndian.PutUint64(lenb[:], uint64(len(hj)))
	return atomicfile.Write(path, func(w io.Writer) error {
		bw := bufio.NewWriterSize(w, 1<<20)
		bw.Write(lenb[:])
		bw.Write(hj)
		var chunk []float32
		var halves []uint16
		// put writes vs as t's dtype.
		put := func(t Tensor, vs []float32) error {
			if t.DType == "" || t.DType == "F32" {
				_, err := bw.Write(f32Bytes(vs))
				return err
			}
			halves = slices.Grow(halves[:0], len(vs))[:len(vs)]
			if t.DType == "F16" {
				half.EncodeF16(halves, vs)
			} else {
				half.EncodeBF16(halves, vs)
			}
			_, err := bw.Write(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(halves))), 2*len(halves)))
			return err
		}
		for _, t := range tensors {
			if t.Rows == nil {
				for lo := 0; lo < len(t.Data); lo += 1 << 18 {
					if err := put(t, t.Data[lo:min(len(t.Data), lo+1<<18)]); err != nil {
						return err
					}
				}
				continue
			}
			rows, width := 1, 1
			if len(t.Shape) > 0 {
				rows = t.Shape[0]
				for _, d := range t.Shape[1:] {
					width *= d
				}
			}
			per := max(1, (1<<18)/max(width, 1))
			for r0 := 0; r0 < rows; r0 += per {
				c := slices.Grow(chunk[:0], min(per, rows-r0)*width)[:min(per, rows-r0)*width]
				chunk = c
				if err := t.Rows(r0, c); err != nil {
					return fmt.Errorf("safetensors: tensor %s: %w", t.Name, err)
				}
				if err := put(t, c); err != nil {
					return err
				}
			}
		}
		return bw.Flush()
	})
}

// f32Bytes is vs's memory as bytes: little-endian float32s on the
// little-endian machines graphmill runs on.
func f32Bytes(vs []float32) []byte {
	if len(vs) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&vs[0])), 4*len(vs))
}

// File is a parsed safetensors file.
type File struct {
	Tensors  map[string]Tensor
	Metadata map[string]string
	// Order lists tensor names by data offset.
	Order []string
	// file is the open file of Open's tensors left in it (Rows).
	file *os.File
}

// Close closes the file Open kept for the tensors left in it; their Rows
// fail afterwards. It is a no-op for a File Read returned.
func (f *File) Close() error {
	if f == nil || f.file == nil {
		return nil
	}
	err := f.file.Close()
	f.file = nil
	return err
}

// LooksLike reports whether head, a file's first bytes, begins a
// safetensors file: a header length (8 bytes, little-endian, within
// maxHeader), then the JSON header's '{'. It is a cheap check of an
// existing file's kind (one about to be replaced), not Read's validation.
func LooksLike(head []byte) bool {
	if len(head) < 9 {
		return false
	}
	hl := binary.LittleEndian.Uint64(head)
	return hl > 0 && hl <= maxHeader && head[8] == '{'
}

// Read parses the file at path, validating the header, offsets and dtypes.
// ReadMetadata reads the "__metadata__" map of the safetensors file at
// path from its header alone, without reading (or checking) its tensors:
// a cheap look at what a file is.
func ReadMetadata(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var lenb [8]byte
	if _, err := io.ReadFull(f, lenb[:]); err != nil {
		return nil, fmt.Errorf("%s: %w: too short for a header length", path, ErrFormat)
	}
	hl := binary.LittleEndian.Uint64(lenb[:])
	if hl > maxHeader {
		return nil, fmt.Errorf("%s: %w: header length %d", path, ErrFormat, hl)
	}
	hj := make([]byte, hl)
	if _, err := io.ReadFull(f, hj); err != nil {
		return nil, fmt.Errorf("%s: %w: truncated header", path, ErrFormat)
	}
	var h struct {
		Metadata map[string]string `json:"__metadata__"`
	}
	if err := json.Unmarshal(hj, &h); err != nil {
		return nil, fmt.Errorf("%s: %w: header: %v", path, ErrFormat, err)
	}
	return h.Metadata, nil
}

// Read reads and checks the safetensors file at path.
func Read(path string) (*File, error) { return Open(path, nil) }

// Open is Read, except that the tensors for which lazy (if not nil) is
// true stay in the file: their Rows read a range of rows from it when
// asked (a table larger than the memory left, read a chunk at a time),
// until Close, which the caller must call.
func Open(path string, lazy func(name string) bool) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	out, err := parse(f, st.Size(), lazy)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for _, t := range out.Tensors {
		if t.Rows != nil {
			out.file = f
			return out, nil
		}
	}
	f.Close()
	return out, nil
}

// rowsFrom returns a Rows function reading the tensor e holds (elements
// of size bytes, from byte base of r).
func rowsFrom(r io.ReaderAt, name string, e entry, size, base int64) func(int, []float32) error {
	width := int64(1)
	for _, d := range e.Shape[min(1, len(e.Shape)):] {
		width *= int64(d)
	}
	n := (e.Offsets[1] - e.Offsets[0]) / size
	var buf []byte
	return func(row0 int, dst []float32) error {
		lo := int64(row0) * width
		if row0 < 0 || lo+int64(len(dst)) > n {
			return fmt.Errorf("tensor %s: values [%d, %d) outside its %d", name, lo, lo+int64(len(dst)), n)
		}
		var b []byte
		if e.DType == "F32" {
			b = f32Bytes(dst)
		} else {
			buf = slices.Grow(buf[:0], len(dst)*int(size))[:len(dst)*int(size)]
			b = buf
		}
		if _, err := r.ReadAt(b, base+lo*size); err != nil {
			return fmt.Errorf("tensor %s: %w", name, err)
		}
		if e.DType != "F32" {
			decode(e.DType, b, dst)
		}
		return nil
	}
}

func parse(r io.ReaderAt, size int64, lazy func(string) bool) (*File, error) {
	var lenb [8]byte
	if _, err := r.ReadAt(lenb[:], 0); err != nil {
		return nil, fmt.Errorf("%w: too short for a header length", ErrFormat)
	}
	hl := binary.LittleEndian.Uint64(lenb[:])
	if hl > maxHeader || int64(hl) > size-8 {
		return nil, fmt.Errorf("%w: header length %d does not fit in a %d-byte file", ErrFormat, hl, size)
	}
	hj := make([]byte, hl)
	if _, err := r.ReadAt(hj, 8); err != nil {
		return nil, fmt.Errorf("%w: truncated header", ErrFormat)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(hj, &raw); err != nil {
		return nil, fmt.Errorf("%w: header is not a JSON object: %v", ErrFormat, err)
	}
	data := size - 8 - int64(hl)
	out := &File{Tensors: map[string]Tensor{}}
	type span struct {
		name   string
		lo, hi int64
	}
	var spans []span
	for name, msg := range raw {
		if name == "__metadata__" {
			if err := json.Unmarshal(msg, &out.Metadata); err != nil {
				return nil, fmt.Errorf("%w: __metadata__ must map strings to strings", ErrFormat)
			}
			continue
		}
		var e entry
		if err := json.Unmarshal(msg, &e); err != nil {
			return nil, fmt.Errorf("%w: tensor %s: %v", ErrFormat, name, err)
		}
		size, ok := dtypes[e.DType]
		if !ok {
			return nil, fmt.Errorf("tensor %s has dtype %q, which graphmill does not read (it reads F64, F32, F16, BF16, I64, I32, I16, I8, U64, U32, U16, U8 and BOOL)", name, e.DType)
		}
		n := int64(1)
		for _, d := range e.Shape {
			if d < 0 || d > math.MaxInt32 {
				return nil, fmt.Errorf("%w: tensor %s has bad shape %v", ErrFormat, name, e.Shape)
			}
			n *= int64(d)
			if n > data {
				return nil, fmt.Errorf("%w: tensor %s shape %v exceeds the file", ErrFormat, name, e.Shape)
			}
		}
		lo, hi := e.Offsets[0], e.Offsets[1]
		if lo < 0 || hi < lo || hi > data || hi-lo != size*n {
			return nil, fmt.Errorf("%w: tensor %s: offsets [%d, %d) do not hold shape %v within %d data bytes", ErrFormat, name, lo, hi, e.Shape, data)
		}
		spans = append(spans, span{name, lo, hi})
		if lazy != nil && lazy(name) {
			out.Tensors[name] = Tensor{Name: name, Shape: e.Shape, DType: e.DType, Rows: rowsFrom(r, name, e, size, 8+int64(hl)+lo)}
			continue
		}
		vals := make([]float32, n)
		if n > 0 {
			var b []byte
			if e.DType == "F32" { // read in place
				b = unsafe.Slice((*byte)(unsafe.Pointer(&vals[0])), 4*n)
			} else {
				b = make([]byte, size*n)
			}
			if _, err := r.ReadAt(b, 8+int64(hl)+lo); err != nil {
				return nil, fmt.Errorf("%w: tensor %s: %v", ErrFormat, name, err)
			}
			if e.DType != "F32" {
				decode(e.DType, b, vals)
			}
		}
		out.Tensors[name] = Tensor{Name: name, Shape: e.Shape, Data: vals, DType: e.DType}
	}
	sort.Slice(spans, func(i, j int) bool {
		return spans[i].lo < spans[j].lo || spans[i].lo == spans[j].lo && spans[i].name < spans[j].name
	})
	for i, s := range spans {
		if i > 0 && s.lo < spans[i-1].hi {
			return nil, fmt.Errorf("%w: tensors %s and %s overlap", ErrFormat, spans[i-1].name, s.name)
		}
		out.Order = append(out.Order, s.name)
	}
	return out, nil
}

// Package npy reads and writes numpy's .npy array files, the storage format of
// graphmill's native datasets.
//
// Arrays are opened by memory-mapping them (Open), so a multi-gigabyte array
// opens in microseconds and is paged in on demand; typed views (Float32,
// Int32, ...) alias the mapping without a copy. Arrays are written either in
// one call (WriteFile) or streamed (Create, then Write until the declared
// shape is full), so an array larger than memory can be produced.
//
// Only little-endian, C-order arrays of fixed-size numeric types are
// supported: that is what numpy.save writes by default, and what
// numpy.load(path, mmap_mode="r") maps back unchanged.
//
// graphmill writes its own reader and writer instead of using an existing npy
// library because it needs zero-copy memory mapping and streaming writes of
// arrays larger than RAM, which those libraries (they decode into Go slices)
// do not offer.
package npy

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// DType is a numpy dtype descriptor such as "<f4".
type DType string

// The dtypes graphmill stores.
const (
	Float32 DType = "<f4"
	Float16 DType = "<f2"
	Float64 DType = "<f8"
	Int8    DType = "|i1"
	Uint8   DType = "|u1"
	Bool    DType = "|b1"
	Int16   DType = "<i2"
	Uint16  DType = "<u2"
	Int32   DType = "<i4"
	Int64   DType = "<i8"
)

// Size returns the number of bytes of one element, or 0 if the dtype is not
// supported.
func (d DType) Size() int {
	switch d {
	case Int8, Uint8, Bool:
		return 1
	case Float16, Int16, Uint16:
		return 2
	case Float32, Int32:
		return 4
	case Float64, Int64:
		return 8
	}
	return 0
}

// Header is the parsed header of a .npy file.
type Header struct {
	DType DType
	Shape []int
	// DataOffset is the byte offset of the first element in the file.
	DataOffset int64
}

// Len returns the number of elements (the product of the shape).
func (h Header) Len() int64 {
	n := int64(1)
	for _, s := range h.Shape {
		n *= int64(s)
	}
	return n
}

// DataBytes returns the number of data bytes the header announces.
func (h Header) DataBytes() int64 { return h.Len() * int64(h.DType.Size()) }

var magic = []byte("\x93NUMPY")

// ErrFormat is wrapped by every error about a malformed .npy header.
var ErrFormat = errors.New("not a valid .npy file")

// maxHeader bounds the header length we accept, to reject garbage early.
const maxHeader = 1 << 20

// ReadHeader parses a .npy header from r, leaving r at the first data byte.
func ReadHeader(r io.Reader) (Header, error) {
	var pre [10]byte
	if _, err := io.ReadFull(r, pre[:8]); err != nil {
		return Header{}, fmt.Errorf("%w: reading magic: %v", ErrFormat, err)
	}
	if !bytes.Equal(pre[:6], magic) {
		return Header{}, fmt.Errorf("%w: bad magic %q", ErrFormat, pre[:6])
	}
	major := pre[6]
	var hlen, prefix int
	switch major {
	case 1:
		if _, err := io.ReadFull(r, pre[8:10]); err != nil {
			return Header{}, fmt.Errorf("%w: truncated header length", ErrFormat)
		}
		hlen, prefix = int(binary.LittleEndian.Uint16(pre[8:10])), 10
	case 2, 3:
		var l [4]byte
		if _, err := io.ReadFull(r, l[:]); err != nil {
			return Header{}, fmt.Errorf("%w: truncated header length", ErrFormat)
		}
		hlen, prefix = int(binary.LittleEndian.Uint32(l[:])), 12
	default:
		return Header{}, fmt.Errorf("%w: unsupported version %d", ErrFormat, major)
	}
	if hlen > maxHeader {
		return Header{}, fmt.Errorf("%w: header length %d too large", ErrFormat, hlen)
	}
	buf := make([]byte, hlen)
	if _, err := io.ReadFull(r, buf); err != nil {
		return Header{}, fmt.Errorf("%w: truncated header", ErrFormat)
	}
	h, err := parseDict(string(buf))
	if err != nil {
		return Header{}, err
	}
	h.DataOffset = int64(prefix + hlen)
	return h, nil
}

// parseDict parses the Python dict literal of a header, e.g.
// {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }.
func parseDict(s string) (Header, error) {
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, "{") || !strings.HasSuffix(s, "}") {
		return Header{}, fmt.Errorf("%w: header is not a dict: %q", ErrFormat, clip(s))
	}
	var h Header
	var haveDescr, haveShape, haveOrder bool
	rest := strings.TrimSpace(s[1 : len(s)-1])
	for rest != "" {
		key, after, ok := quoted(rest)
		if !ok {
			return Header{}, fmt.Errorf("%w: bad key in header %q", ErrFormat, clip(s))
		}
		after = strings.TrimSpace(after)
		if !strings.HasPrefix(after, ":") {
			return Header{}, fmt.Errorf("%w: missing ':' after %q", ErrFormat, key)
		}
		after = strings.TrimSpace(after[1:])
		switch key {
		case "descr":
			v, a, ok := quoted(after)
			if !ok {
				return Header{}, fmt.Errorf("%w: descr is not a string (structured dtypes are not supported)", ErrFormat)
			}
			h.DType, after, haveDescr = DType(v), a, true
			if h.DType == "<b1" || h.DType == "<i1" || h.DType == "<u1" {
				h.DType = DType("|" + string(h.DType[1:]))
			}
		case "fortran_order":
			switch {
			case strings.HasPrefix(after, "False"):
				after = after[5:]
			case strings.HasPrefix(after, "True"):
				return Header{}, fmt.Errorf("%w: fortran_order=True is not supported", ErrFormat)
			default:
				return Header{}, fmt.Errorf("%w: bad fortran_order", ErrFormat)
			}
			haveOrder = true
		case "shape":
			if !strings.HasPrefix(after, "(") {
				return Header{}, fmt.Errorf("%w: shape is not a tuple", ErrFormat)
			}
			end := strings.IndexByte(after, ')')
			if end < 0 {
				return Header{}, fmt.Errorf("%w: unterminated shape", ErrFormat)
			}
			h.Shape = []int{}
			total := int64(1)
			for _, f := range strings.Split(after[1:end], ",") {
				f = strings.TrimSpace(f)
				f = strings.TrimSuffix(f, "L")
				if f == "" {
					continue
				}
				d, err := strconv.ParseInt(f, 10, 64)
				if err != nil || d < 0 || d > 1<<48 {
					return Header{}, fmt.Errorf("%w: bad dimension %q in shape", ErrFormat, f)
				}
				// Checked before multiplying: (65536, 2^48) would wrap to 0.
				if total > (1<<50)/max(d, 1) {
					return Header{}, fmt.Errorf("%w: shape too large", ErrFormat)
				}
				total *= max(d, 1)
				h.Shape = append(h.Shape, int(d))
			}
			after, haveShape = after[end+1:], true
		default:
			return Header{}, fmt.Errorf("%w: unexpected key %q in header", ErrFormat, key)
		}
		after = strings.TrimSpace(after)
		after = strings.TrimPrefix(after, ",")
		rest = strings.TrimSpace(after)
	}
	if !haveDescr || !haveShape || !haveOrder {
		return Header{}, fmt.Errorf("%w: header lacks descr, fortran_order or shape: %q", ErrFormat, clip(s))
	}
	if h.DType.Size() == 0 {
		return Header{}, fmt.Errorf("%w: unsupported dtype %q", ErrFormat, h.DType)
	}
	return h, nil
}

// quoted reads a '...' or "..." string at the start of s.
func quoted(s string) (val, rest string, ok bool) {
	if len(s) < 2 || (s[0] != '\'' && s[0] != '"') {
		return "", s, false
	}
	end := strings.IndexByte(s[1:], s[0])
	if end < 0 {
		return "", s, false
	}
	return s[1 : 1+end], s[2+end:], true
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}

// EncodeHeader returns the bytes of a version 1.0 header (or 2.0 when the
// dict does not fit), padded so that the data starts at a multiple of 64
// bytes, as numpy does.
func EncodeHeader(dtype DType, shape []int) ([]byte, error) {
	return EncodeHeaderAligned(dtype, shape, 64)
}

// EncodeHeaderAligned is EncodeHeader with the data starting at a multiple
// of align bytes (a multiple of 64, at most 8192: numpy refuses headers
// over 10000 bytes unless told otherwise). Page-aligned data (4096) puts
// every row of a power-of-two size up to a page within one page, so that a
// row read from disk costs one page, not two.
func EncodeHeaderAligned(dtype DType, shape []int, align int) ([]byte, error) {
	if align < 64 || align%64 != 0 || align > 8192 {
		return nil, fmt.Errorf("npy: header alignment %d; want a multiple of 64 up to 8192", align)
	}
	if dtype.Size() == 0 {
		return nil, fmt.Errorf("npy: unsupported dtype %q", dtype)
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "{'descr': '%s', 'fortran_order': False, 'shape': (", dtype)
	for i, d := range shape {
		if d < 0 {
			return nil, fmt.Errorf("npy: negative dimension %d", d)
		}
		if i > 0 {
			sb.WriteString(", ")
		}
		sb.WriteString(strconv.Itoa(d))
	}
	if len(shape) == 1 {
		sb.WriteString(",")
	}
	sb.WriteString("), }")
	dict := sb.String()
	for _, version := range []int{1, 2} {
		prefix := 10
		if version == 2 {
			prefix = 12
		}
		total := prefix + len(dict) + 1
		pad := (align - total%align) % align
		hlen := len(dict) + pad + 1
		if version == 1 && hlen > 65535 {
			continue
		}
		out := make([]byte, 0, prefix+hlen)
		out = append(out, magic...)
		out = append(out, byte(version), 0)
		if version == 1 {
			out = binary.LittleEndian.AppendUint16(out, uint16(hlen))
		} else {
			out = binary.LittleEndian.AppendUint32(out, uint32(hlen))
		}
		out = append(out, dict...)
		out = append(out, bytes.Repeat([]byte{' '}, pad)...)
		out = append(out, '\n')
		return out, nil
	}
	return nil, errors.New("npy: header too long")
}

// Name returns numpy's name for the dtype ("float32", "int64", ...).
func (d DType) Name() string {
	switch d {
	case Float32:
		return "float32"
	case Float16:
		return "float16"
	case Float64:
		return "float64"
	case Int8:
		return "int8"
	case Uint8:
		return "uint8"
	case Bool:
		return "bool"
	case Int16:
		return "int16"
	case Uint16:
		return "uint16"
	case Int32:
		return "int32"
	case Int64:
		return "int64"
	}
	return string(d)
}

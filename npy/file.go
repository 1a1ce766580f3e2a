package npy

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"slices"
	"unsafe"
)

// Elem is the set of Go element types that map onto supported dtypes.
type Elem interface {
	~float32 | ~float64 | ~int8 | ~uint8 | ~int16 | ~uint16 | ~int32 | ~int64
}

// DTypeOf returns the dtype that stores T. Use npy.Float16 explicitly for
// half precision stored in uint16.
func DTypeOf[T Elem]() DType {
	var z T
	switch any(z).(type) {
	case float32:
		return Float32
	case float64:
		return Float64
	case int8:
		return Int8
	case uint8:
		return Uint8
	case int16:
		return Int16
	case uint16:
		return Uint16
	case int32:
		return Int32
	case int64:
		return Int64
	}
	return ""
}

// Array is an opened .npy file. Its Data aliases a read-only memory mapping
// (or, on platforms without mmap, a heap copy); it stays valid until Close.
type Array struct {
	Header
	// Path is the file the array came from.
	Path string
	// Data holds the raw little-endian element bytes.
	Data []byte

	mapping []byte
}

// Open memory-maps the .npy file at path and validates that its size
// matches its header. Writing to Data faults: the mapping is read-only.
func Open(path string) (*Array, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	h, err := ReadHeader(bufio.NewReaderSize(f, 4096))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	want := h.DataOffset + h.DataBytes()
	if st.Size() != want {
		return nil, fmt.Errorf("%s: %w: file has %d bytes, header %v of %s needs %d (truncated or padded)",
			path, ErrFormat, st.Size(), h.Shape, h.DType, want)
	}
	return mapArray(f, h, path)
}

// mapArray maps the file f up to the end of h's data.
func mapArray(f *os.File, h Header, path string) (*Array, error) {
	a := &Array{Header: h, Path: path}
	if h.DataBytes() == 0 {
		a.Data = []byte{}
		return a, nil
	}
	m, err := mapFile(f, int(h.DataOffset+h.DataBytes()))
	if err != nil {
		return nil, fmt.Errorf("%s: mapping: %w", path, err)
	}
	a.mapping = m
	a.Data = m[h.DataOffset:]
	return a, nil
}

// OpenRaw memory-maps a file that holds only the elements of an array of
// dtype and shape (little-endian, C order), from byte offset on, with no
// .npy header: an array another process keeps in shared memory, such as
// a PyTorch tensor's storage that graphmill.NeighborLoader hands to its
// sampler service. The file may extend past the array.
func OpenRaw(path string, dtype DType, shape []int, offset int64) (*Array, error) {
	if dtype.Size() == 0 {
		return nil, fmt.Errorf("%s: raw array of unsupported dtype %q", path, dtype)
	}
	n := int64(dtype.Size())
	for _, d := range shape {
		if d < 0 || (d > 0 && n > (1<<62)/int64(d)) {
			return nil, fmt.Errorf("%s: raw array of shape %v", path, shape)
		}
		n *= int64(d)
	}
	if offset < 0 || offset > 1<<62-n {
		return nil, fmt.Errorf("%s: raw array at offset %d", path, offset)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	want := offset + n
	if st.Size() < want {
		return nil, fmt.Errorf("%s: file has %d bytes, a raw array %v of %s from byte %d needs %d (truncated)", path, st.Size(), shape, dtype, offset, want)
	}
	return mapArray(f, Header{DType: dtype, Shape: slices.Clone(shape), DataOffset: offset}, path)
}

// Close releases the mapping. Views taken from the array must not be used
// afterwards.
func (a *Array) Close() error {
	if a == nil || a.mapping == nil {
		return nil
	}
	m := a.mapping
	a.mapping, a.Data = nil, nil
	return unmap(m)
}

// AdviseHuge asks the kernel to back the mapping with transparent huge
// pages. It is a hint (errors are ignored) that kernels applying huge pages
// to anonymous memory only do not follow for file mappings.
func (a *Array) AdviseHuge() { adviseHuge(a.mapping) }

// DropResident releases the process's resident pages of the mapping (the
// file's pages stay in the page cache): for an array that has been copied
// elsewhere and is rarely read again, so that it stops counting in the
// resident set. A later read faults the pages back in.
func (a *Array) DropResident() { dropResident(a.mapping) }

// AdviseRandom tells the kernel that access will be random, so it does not
// read ahead. It is a hint: errors are ignored.
func (a *Array) AdviseRandom() { adviseRandom(a.mapping) }

// View returns the array's data as a []T aliasing the mapping, checking that
// T matches the dtype. Float16 data is viewed as []uint16.
func View[T Elem](a *Array) ([]T, error) {
	want := DTypeOf[T]()
	if a.DType != want && !(want == Uint16 && a.DType == Float16) {
		return nil, fmt.Errorf("%s: dtype is %s, want %s", a.Path, a.DType, want)
	}
	return castBytes[T](a.Data), nil
}

// castBytes reinterprets b as []T without copying.
func castBytes[T Elem](b []byte) []T {
	var z T
	size := int(unsafe.Sizeof(z))
	if len(b) < size {
		return []T{}
	}
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/size)
}

// AsBytes reinterprets a slice of elements as its little-endian bytes
// without copying (graphmill only runs on little-endian machines).
func AsBytes[T Elem](s []T) []byte {
	if len(s) == 0 {
		return []byte{}
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*int(unsafe.Sizeof(s[0])))
}

// Writer streams one array into a file. Create it with Create, Write
// exactly the number of bytes the shape needs, then Close. Close fails if
// too few bytes were written; Write fails if too many are.
type Writer struct {
	f         *os.File
	w         *bufio.Writer
	path      string
	remaining int64
}

// Create starts a .npy file at path holding dtype elements of the given
// shape. The file is created or truncated; callers that need atomicity
// write into a temporary directory and rename it (see package dataset).
func Create(path string, dtype DType, shape []int) (*Writer, error) {
	return CreateAligned(path, dtype, shape, 64)
}

// CreateAligned is Create with the data starting at a multiple of align
// bytes (see EncodeHeaderAligned).
func CreateAligned(path string, dtype DType, shape []int, align int) (*Writer, error) {
	hdr, err := EncodeHeaderAligned(dtype, shape, align)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	w := &Writer{f: f, w: bufio.NewWriterSize(f, 1<<20), path: path}
	h := Header{DType: dtype, Shape: shape}
	w.remaining = h.DataBytes()
	if _, err := w.w.Write(hdr); err != nil {
		f.Close()
		return nil, err
	}
	return w, nil
}

// Write appends raw element bytes.
func (w *Writer) Write(p []byte) (int, error) {
	if int64(len(p)) > w.remaining {
		return 0, fmt.Errorf("%s: writing %d bytes past the declared shape", w.path, int64(len(p))-w.remaining)
	}
	n, err := w.w.Write(p)
	w.remaining -= int64(n)
	return n, err
}

// Close flushes, fsyncs and closes the file, failing if the array is not
// complete.
func (w *Writer) Close() error {
	err := w.w.Flush()
	if err == nil {
		err = w.f.Sync()
	}
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	if err == nil && w.remaining != 0 {
		err = fmt.Errorf("%s: %d bytes short of the declared shape", w.path, w.remaining)
	}
	return err
}

// Abort closes the file without checking completeness; use it on error paths.
func (w *Writer) Abort() { w.f.Close() }

// WriteFile writes a whole array of elements with the given shape. The
// product of shape must equal len(data).
func WriteFile[T Elem](path string, data []T, shape ...int) error {
	return WriteFileDType(path, DTypeOf[T](), data, shape...)
}

// WriteFileDType is WriteFile with an explicit dtype, for storing uint16
// bit patterns as Float16.
func WriteFileDType[T Elem](path string, dtype DType, data []T, shape ...int) error {
	if shape == nil {
		shape = []int{len(data)}
	}
	w, err := Create(path, dtype, shape)
	if err != nil {
		return err
	}
	if _, err := w.Write(AsBytes(data)); err != nil {
		w.Abort()
		return err
	}
	return w.Close()
}

// ReadFile reads a whole array into memory (no mapping), checking the dtype.
func ReadFile[T Elem](path string) ([]T, Header, error) {
	a, err := Open(path)
	if err != nil {
		return nil, Header{}, err
	}
	defer a.Close()
	v, err := View[T](a)
	if err != nil {
		return nil, Header{}, err
	}
	return append([]T(nil), v...), a.Header, nil
}

var _ io.Writer = (*Writer)(nil)

package batch

import (
	"encoding/binary"
	"math"
	"unsafe"
)

// littleEndian reports whether the host stores integers little-endian, so
// that arrays can be copied (or aliased) byte for byte.
var littleEndian = func() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}()

type elem interface {
	~int32 | ~int64 | ~float32 | ~uint16
}

// asBytes returns s's memory as bytes.
func asBytes[T elem](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	var z T
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*int(unsafe.Sizeof(z)))
}

// putArray writes s little-endian into d (len(d) == len(s)*size).
func putArray[T elem](d []byte, s []T) {
	if littleEndian {
		copy(d, asBytes(s))
		return
	}
	le := binary.LittleEndian
	for i, v := range s {
		switch x := any(v).(type) {
		case int32:
			le.PutUint32(d[4*i:], uint32(x))
		case int64:
			le.PutUint64(d[8*i:], uint64(x))
		case float32:
			le.PutUint32(d[4*i:], math.Float32bits(x))
		case uint16:
			le.PutUint16(d[2*i:], x)
		}
	}
}

// getArray returns d's little-endian elements: a view of d when alias is
// set, the host is little-endian and d is aligned for T, else a copy in
// dst's storage (grown as needed).
func getArray[T elem](d []byte, dst []T, alias bool) []T {
	var z T
	size := int(unsafe.Sizeof(z))
	n := len(d) / size
	if alias && littleEndian && (n == 0 || uintptr(unsafe.Pointer(unsafe.SliceData(d)))%uintptr(size) == 0) {
		if n == 0 {
			return []T{}
		}
		return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(d))), n)
	}
	if cap(dst) < n || dst == nil {
		dst = make([]T, n)
	}
	dst = dst[:n]
	if littleEndian {
		copy(asBytes(dst), d)
		return dst
	}
	le := binary.LittleEndian
	for i := range dst {
		var v any
		switch any(z).(type) {
		case int32:
			v = int32(le.Uint32(d[4*i:]))
		case int64:
			v = int64(le.Uint64(d[8*i:]))
		case float32:
			v = math.Float32frombits(le.Uint32(d[4*i:]))
		case uint16:
			v = le.Uint16(d[2*i:])
		}
		dst[i] = v.(T)
	}
	return dst
}

package samplebench

import "unsafe"

// unsafeBytes views a uint16 slice as little-endian bytes (amd64/arm64).
func unsafeBytes(s []uint16) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), 2*len(s))
}

// floatBytes views a float32 slice as its bytes.
func floatBytes(s []float32) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), 4*len(s))
}

//go:build !noasm

package half

import "testing"

// TestDecodeScalar runs the decoder checks with the SIMD paths disabled,
// so the portable code is tested on amd64 too.
func TestDecodeScalar(t *testing.T) {
	f, b := hasF16C, hasAVX2
	hasF16C, hasAVX2 = false, false
	defer func() { hasF16C, hasAVX2 = f, b }()
	TestDecodeExhaustive(t)
}

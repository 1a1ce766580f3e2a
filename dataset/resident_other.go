//go:build !linux

package dataset

// resident says no page is known to be cached where mincore is missing.
func resident(_ []byte, _, _ int64, vec []byte) { clear(vec) }

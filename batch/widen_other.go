//go:build !amd64 || noasm

package batch

// hasWidenNT is false: there are no streaming stores here.
var hasWidenNT = false

// widenStream is widen.
func widenStream(d []int64, s []int32) { widen(d, s) }

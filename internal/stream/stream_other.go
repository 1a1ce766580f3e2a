//go:build !amd64 || noasm

package stream

// ok is false: there are no streaming kernels here.
var ok = false

func copyNT(d, s *int64, n int)         { panic("stream: no streaming stores") }
func widenNT(d *int64, s *int32, n int) { panic("stream: no streaming stores") }
func fence()                            {}

//go:build !amd64 || noasm

package half

func decodeF16Fast(dst []float32, src []uint16) int  { return 0 }
func decodeBF16Fast(dst []float32, src []uint16) int { return 0 }

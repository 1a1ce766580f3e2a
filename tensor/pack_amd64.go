//go:build amd64 && !noasm

package tensor

// packT6, packT12, packT16 and packT32 are packTilesGeneric for pieces of
// 6, 12, 16 and 32 floats, which also prefetch the next group of rows
// (pack_amd64.s; SSE2, so on every amd64 CPU). They are written in
// assembly because the compiled loop spilled its indices and multiplied
// per row, about 60 instructions for each 48-byte piece: packing a weight
// gradient's A ran at 9 GB/s from cache (30-37 GB/s now).
//
//go:noescape
func packT12(dst, src *float32, lds, rows, tiles, stride int)

//go:noescape
func packT6(dst, src *float32, lds, rows, tiles, stride int)

//go:noescape
func packT16(dst, src *float32, lds, rows, tiles, stride int)

//go:noescape
func packT32(dst, src *float32, lds, rows, tiles, stride int)

// packTiles is packTilesGeneric, in assembly for the tile heights (mr)
// and panel widths (nr) of the AVX2 and AVX-512 kernels.
func packTiles(dst, src []float32, lds, w, rows, tiles, stride int) {
	if rows <= 0 || tiles <= 0 {
		return
	}
	// Bounds, checked once here because the assembly does not.
	_ = src[(rows-1)*lds+tiles*w-1]
	_ = dst[(tiles-1)*stride+rows*w-1]
	switch w {
	case 12:
		packT12(&dst[0], &src[0], lds, rows, tiles, stride)
	case 6:
		packT6(&dst[0], &src[0], lds, rows, tiles, stride)
	case 16:
		packT16(&dst[0], &src[0], lds, rows, tiles, stride)
	case 32:
		packT32(&dst[0], &src[0], lds, rows, tiles, stride)
	default:
		packTilesGeneric(dst, src, lds, w, rows, tiles, stride)
	}
}

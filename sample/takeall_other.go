//go:build !amd64 || noasm

package sample

// takeAllSlack is the room takeAll needs past the last edge.
const takeAllSlack = 0

// takeAllWidths lists takeAll's kernels: takeAllGo alone.
var takeAllWidths = []int{0}

// takeAll is takeAllGo (see the amd64 version for what it does).
func takeAll(ind []int32, indptr []int64, dst []int32, k int, sp []int64, out []int32, pos, ip []int64, todo []int32) int {
	return takeAllGo(ind, indptr, dst, k, sp, out, pos, ip, todo)
}

// takeMasksVector reports whether takeMasks has a kernel: not here.
const takeMasksVector = false

// takeMasks is takeMasksGo (see the amd64 version for what it does).
func takeMasks(ind []int32, sp []int64, todo []int32, lanes uint8, ms *[8]uint64, k int, out []int32, pos, ip []int64) {
	takeMasksGo(ind, sp, todo, lanes, ms, k, out, pos, ip)
}

// takeRing is takeRingGo.
func takeRing(ind []int32, span []int64, ring []uint64, ip []int64, out []int32, pos, w []int64) {
	takeRingGo(ind, span, ring, ip, out, pos, w)
}

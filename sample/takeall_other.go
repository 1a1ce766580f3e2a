//go:build !amd64 || noasm

package sample

// takeAllSlack is the room takeAll needs past the last edge.
const takeAllSlack = 0

// takeAllWidths lists takeAll's kernels: takeAllGo alone.
var takeAllWidths = []int{0}

// takeAll is takeAllGo (see the amd64 version).
func takeAll(ind []int32, sp []int64, k int, out []int32, pos []int64, ip []int64, todo []int32) int {
	return takeAllGo(ind, sp, k, out, pos, ip, todo)
}

//go:build amd64 && !noasm

package sample

import (
	"unsafe"

	"github.com/graphmill/graphmill/internal/isa"
)

// takeAllSlack is the room takeAll needs past the last edge: takeAll8
// stores whole vectors of eight.
const takeAllSlack = 8

// takeAllWidths lists the kernels of takeAll this CPU can run, widest
// first (0: takeAllGo): 8 (takeAll8, AVX2).
var takeAllWidths = func() []int {
	if isa.HasAVX2 {
		return []int{8, 0}
	}
	return []int{0}
}()

//go:noescape
func takeAll8(ind *int32, indptr *int64, dst *int32, nd int, k int, sp *int64, out *int32, pos *int64, ip *int64, todo *int32) (nt int)

// takeAll writes every destination's range (dst[i]'s, into sp[2i] and
// sp[2i+1]) and offset (ip[i+1] - ip[i] = min(degree, k)), copies the
// sources and CSC positions of those with at most k neighbours into out
// and pos at their offsets, lists the others in todo and returns how many
// it listed. Every id of dst must be a node of indptr's graph; out and pos
// need takeAllSlack entries past ip's last, ind may not be longer than
// 2^31 ids, and sp and todo need room for every destination.
//
// Written in assembly because a graph held in cache spends its draws on
// the branch of each destination's short copy (Cora: 3.9 neighbours a
// node on average): the vector kernel copies without it.
func takeAll(ind []int32, indptr []int64, dst []int32, k int, sp []int64, out []int32, pos, ip []int64, todo []int32) int {
	nd := len(dst)
	if takeAllWidth == 8 && nd > 0 && len(ind) > 0 {
		_ = ip[nd]
		_ = sp[2*nd-1]
		_ = todo[nd-1]
		return takeAll8(unsafe.SliceData(ind), unsafe.SliceData(indptr), unsafe.SliceData(dst), nd, k, unsafe.SliceData(sp), unsafe.SliceData(out), unsafe.SliceData(pos), unsafe.SliceData(ip), unsafe.SliceData(todo))
	}
	return takeAllGo(ind, indptr, dst, k, sp, out, pos, ip, todo)
}

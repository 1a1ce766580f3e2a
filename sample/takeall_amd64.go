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
func takeAll8(ind *int32, sp *int64, nd int, k int, out *int32, pos *int64, ip *int64, todo *int32) (nt int)

// takeAll writes every destination's offset into ip (ip[i+1] - ip[i] =
// min(degree, k), its range being sp[2i], sp[2i+1]) and copies the
// sources and CSC positions of those with at most k neighbours into out
// and pos at their offsets; it lists the others in todo and returns how
// many it listed. out and pos need takeAllSlack entries past ip's last,
// ind may not be longer than 2^31 ids, and todo needs room for every
// destination.
//
// Written in assembly because a graph held in cache spends its draws on
// the branch of each destination's short copy (Cora: 3.9 neighbours a
// node on average): the vector kernel copies without it.
func takeAll(ind []int32, sp []int64, k int, out []int32, pos []int64, ip []int64, todo []int32) int {
	nd := len(sp) / 2
	if takeAllWidth == 8 && nd > 0 && len(ind) > 0 {
		_ = ip[nd]
		_ = todo[nd-1]
		return takeAll8(unsafe.SliceData(ind), unsafe.SliceData(sp), nd, k, unsafe.SliceData(out), unsafe.SliceData(pos), unsafe.SliceData(ip), unsafe.SliceData(todo))
	}
	return takeAllGo(ind, sp, k, out, pos, ip, todo)
}

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
func takeMasks16(ind *int32, sp *int64, todo *int32, lanes int, ms *uint64, out *int32, pos *int64, ip *int64)

//go:noescape
func takeMasksScalar(ind *int32, sp *int64, todo *int32, lanes int, ms *uint64, out *int32, pos *int64, ip *int64)

// takeMasksFunc is takeMasks16's (and takeMasksScalar's) signature.
type takeMasksFunc = func(ind *int32, sp *int64, todo *int32, lanes int, ms *uint64, out *int32, pos *int64, ip *int64)

// takeMasksKernel is the kernel takeMasks runs: takeMasks16 where the
// CPU has AVX-512, else takeMasksScalar (plain x86-64: AVX2 has no
// compress to take a mask's lanes with); nil under GRAPHMILL_KERNEL=generic
// (a test runs each kernel in its place).
//
// With both scalar kernels, AMD EPYC Zen 1 drew Cora's minibatches in
// 0.985 of the time ([25,10]) and 0.921 ([15,10,5]) of drawing each
// destination's mask and neighbours one at a time (one core, paired
// rounds of 400 minibatches, medians). With AVX2's full-width kernels
// (AMD EPYC Zen 5 under GRAPHMILL_KERNEL=avx2, same rounds, 41 pairs,
// medians and quartiles), FloydMasks8's AVX2 kernel and takeMasksScalar
// took 0.970 (0.964-0.975) and 0.938 (0.934-0.944) of it on Cora, 0.927
// and 0.870 on a 40k-node graph of 10 edges a node (held in cache too);
// with rng's scalar Floyd kernel 0.972 and 0.940 on Cora, so Floyd keeps
// its AVX2 kernel.
var takeMasksKernel = func() takeMasksFunc {
	switch {
	case isa.HasAVX512F:
		return takeMasks16
	case isa.Scalar:
		return takeMasksScalar
	}
	return nil
}()

// takeMasksVector reports whether takeMasks has a kernel.
var takeMasksVector = takeMasksKernel != nil

// takeMasks does takeMask(ms[j], ...) for the destinations todo[j] of
// the lanes j set in lanes: writes the k neighbours that mask draws from
// the destination's list (its range in sp, at most 64 long), and their
// CSC positions, to out and pos at its offset ip[i]; with the kernel where
// there is one, else takeMasksGo. The kernel checks nothing, as takeAll
// (whose ranges and offsets these are, on a valid graph) does not: the
// ranges must lie in ind, and out and pos hold k past each offset.
//
// Written in assembly because a graph held in cache (Cora) spent a tenth
// of its time in takeMask's loop of one neighbour a step, with the bounds
// checks of three slices; the kernel takes sixteen at a time. Measured
// (AMD EPYC Zen 5, one core, paired rounds of 200 minibatches, medians):
// on Cora a minibatch took 0.961-0.962 of the time with fanouts 15,10,5
// and 0.976-0.978 with 25,10 (the same loop with these bounds checked
// first in Go: 0.971-0.972 and 0.976-0.981).
func takeMasks(ind []int32, sp []int64, todo []int32, lanes uint8, ms *[8]uint64, k int, out []int32, pos, ip []int64) {
	kern := takeMasksKernel
	if kern == nil || lanes>>len(todo) != 0 {
		takeMasksGo(ind, sp, todo, lanes, ms, k, out, pos, ip)
		return
	}
	if lanes != 0 {
		kern(unsafe.SliceData(ind), unsafe.SliceData(sp), unsafe.SliceData(todo), int(lanes), &ms[0], unsafe.SliceData(out), unsafe.SliceData(pos), unsafe.SliceData(ip))
	}
}

//go:noescape
func takeAll8(ind *int32, indptr *int64, dst *int32, nd int, k int, sp *int64, out *int32, pos *int64, ip *int64, todo *int32, nind int) (nt int)

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
		return takeAll8(unsafe.SliceData(ind), unsafe.SliceData(indptr), unsafe.SliceData(dst), nd, k, unsafe.SliceData(sp), unsafe.SliceData(out), unsafe.SliceData(pos), unsafe.SliceData(ip), unsafe.SliceData(todo), len(ind))
	}
	return takeAllGo(ind, indptr, dst, k, sp, out, pos, ip, todo)
}

//go:noescape
func takeRingKernel(ind *int32, span *int64, ring *uint64, ip *int64, n int, out *int32, pos *int64, w *int64)

// takeRing is takeRingGo (see there) with a scalar kernel: the ranges
// must lie in ind, as must the positions pos holds for lists longer than
// 64, and ring's masks have a bit for each neighbour taken.
//
// Written in assembly because Go built for any amd64 finds a mask's bits
// with BSF, which AMD EPYC Zen 1 runs three times as slowly as TZCNT, and
// checks the bounds of three slices a neighbour.
func takeRing(ind []int32, span []int64, ring []uint64, ip []int64, out []int32, pos, w []int64) {
	n := len(ip) - 1
	if n <= 0 {
		return
	}
	_, _ = span[2*n-1], ring[n-1]
	if m := ip[n]; m > ip[0] {
		_, _, _ = out[m-1], pos[m-1], w[m-ip[0]-1]
	}
	takeRingKernel(unsafe.SliceData(ind), &span[0], &ring[0], &ip[0], n, unsafe.SliceData(out), unsafe.SliceData(pos), unsafe.SliceData(w))
}

// Package stream writes arrays that are not read again soon with the
// CPU's streaming (non-temporal) stores: whole 64-byte lines go to memory
// through the write-combining buffers, without first being read into the
// cache (the read for ownership that an ordinary store to a line not in
// cache costs) and without evicting lines that will be read again. On a
// sampler that is waiting on random reads, each ordinary store to a fresh
// line holds one of the core's few line-fill buffers for a memory round
// trip; a streaming store of a whole line holds one for a few cycles.
//
// Streaming stores are weakly ordered: call Fence after the last one and
// before another goroutine may read what they wrote. Go has no intrinsic
// for them, hence the assembly (amd64 with AVX2, without the noasm tag);
// elsewhere, and for the parts of an array that do not fill whole lines,
// the stores are ordinary ones.
package stream

import "unsafe"

// Line is the number of int64s in a cache line.
const Line = 8

// Copy sets d[i] = s[i] for i < len(s) (len(d) >= len(s)).
func Copy(d, s []int64) {
	d = d[:len(s)]
	i, j := lines(d)
	copy(d[:i], s[:i])
	if j > i {
		copyNT(&d[i], &s[i], j-i)
	}
	copy(d[j:], s[j:])
}

// Widen sets d[i] = int64(s[i]) for i < len(s) (len(d) >= len(s)).
func Widen(d []int64, s []int32) {
	d = d[:len(s)]
	i, j := lines(d)
	widen(d[:i], s[:i])
	if j > i {
		widenNT(&d[i], &s[i], j-i)
	}
	widen(d[j:], s[j:])
}

// lines returns the part d[i:j] of d that whole cache lines hold, which
// the streaming kernels write (i == j where they do not run).
func lines(d []int64) (i, j int) {
	i = Head(d)
	if !ok || len(d)-i < Line {
		return 0, 0
	}
	return i, i + (len(d)-i)&^(Line-1)
}

// Enabled reports whether Copy and Widen stream (amd64 with AVX2, unless
// GRAPHMILL_KERNEL=generic); else they are plain loops.
func Enabled() bool { return ok }

// Fence orders the streaming stores before every later store: call it
// before publishing what Copy and Widen wrote.
func Fence() {
	if ok {
		fence()
	}
}

// Head returns how many leading elements of d lie before its first
// 64-byte boundary (0 to Line-1): the elements a streaming writer of d
// writes before its first whole line.
func Head(d []int64) int {
	if len(d) == 0 {
		return 0
	}
	return int(-uintptr(unsafe.Pointer(&d[0])) % 64 / 8)
}

// widen is the plain loop.
func widen(d []int64, s []int32) {
	d = d[:len(s)]
	for i, v := range s {
		d[i] = int64(v)
	}
}

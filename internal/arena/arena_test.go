package arena

import (
	"runtime"
	"runtime/debug"
	"sync"
	"testing"
	"unsafe"
)

func TestMakeZeroedAlignedDisjoint(t *testing.T) {
	for _, tc := range []struct {
		name  string
		hint  int
		sizes []int
	}{
		{"small arrays", 1 << 20, []int{1, 7, 64, 1000, 3}},
		{"past the first region", 1, []int{3 << 20, 5 << 20, 100, 9 << 20}},
		{"empty arrays", 1 << 20, []int{0, 0, 5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := New(tc.hint)
			defer a.Free()
			var got [][]int32
			want := int64(0)
			for i, n := range tc.sizes {
				s := Make[int32](a, n)
				if len(s) != n {
					t.Fatalf("array %d: length %d, want %d", i, len(s), n)
				}
				for j, x := range s {
					if x != 0 {
						t.Fatalf("array %d: element %d is %d, want 0", i, j, x)
					}
				}
				if n > 0 && uintptr(unsafe.Pointer(&s[0]))%align != 0 {
					t.Fatalf("array %d at %p is not %d-byte aligned", i, &s[0], align)
				}
				for j := range s {
					s[j] = int32(i + 1)
				}
				got = append(got, s)
				want += int64(4 * n)
			}
			// Writing one array must not have changed another.
			for i, s := range got {
				for j, x := range s {
					if x != int32(i+1) {
						t.Fatalf("array %d element %d is %d after the others were written, want %d", i, j, x, i+1)
					}
				}
			}
			if a != nil && a.Bytes() != want {
				t.Fatalf("Bytes() = %d, want %d", a.Bytes(), want)
			}
		})
	}
}

func TestNilArenaUsesHeap(t *testing.T) {
	var a *Arena
	s := Make[float64](a, 10)
	if len(s) != 10 || s[3] != 0 {
		t.Fatalf("nil arena: got %v", s)
	}
	if a.Bytes() != 0 {
		t.Fatalf("nil arena Bytes() = %d", a.Bytes())
	}
	a.Free() // no-op
}

func TestFreeTwiceAndAllocateAfterFree(t *testing.T) {
	a := New(1 << 16)
	if a == nil {
		t.Skip("no anonymous mappings on this platform")
	}
	_ = Make[int8](a, 100)
	a.Free()
	a.Free()
	defer func() {
		if recover() == nil {
			t.Fatal("allocation after Free did not panic")
		}
	}()
	_ = Make[int8](a, 1)
}

func TestConcurrentMake(t *testing.T) {
	a := New(1 << 16)
	defer a.Free()
	var wg sync.WaitGroup
	out := make([][]int64, 8)
	for w := range out {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				s := Make[int64](a, 1000)
				for j := range s {
					s[j] = int64(w)
				}
				out[w] = s
			}
		}()
	}
	wg.Wait()
	for w, s := range out {
		for _, x := range s {
			if x != int64(w) {
				t.Fatalf("worker %d's array holds %d: arrays overlap", w, x)
			}
		}
	}
}

// BenchmarkColdArrays writes arrays of 2 MiB in all, as a partitioning run
// of a small graph does, on memory fresh from the OS: from the Go heap
// after the heap was returned to the OS, and from a new arena. Page faults
// on fresh memory cost about 10 µs each on this project's virtual machines.
func BenchmarkColdArrays(b *testing.B) {
	const arrays, n = 64, 8 << 10 // 64 arrays of 32 KiB
	touch := func(s []int32) {
		for i := 0; i < len(s); i += 1024 {
			s[i] = 1
		}
	}
	b.Run("heap", func(b *testing.B) {
		keep := make([][]int32, arrays)
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			clear(keep)
			runtime.GC()
			debug.FreeOSMemory()
			b.StartTimer()
			for j := range keep {
				keep[j] = make([]int32, n)
				touch(keep[j])
			}
		}
	})
	b.Run("arena", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			a := New(arrays * n * 4)
			for j := 0; j < arrays; j++ {
				touch(Make[int32](a, n))
			}
			a.Free()
		}
	})
}

// TestHugeRegions checks that small regions go to huge pages (where the
// kernel has them) and are then not populated, and large ones never do.
func TestHugeRegions(t *testing.T) {
	if !supported {
		t.Skip("no arenas here")
	}
	small, large := New(8<<20), New(HugeMaxRegion+1)
	defer small.Free()
	defer large.Free()
	if large.huge {
		t.Fatalf("a region of %d bytes advised into huge pages", HugeMaxRegion+1)
	}
	if small.huge != hugePages {
		t.Fatalf("an 8 MiB region: huge %v, kernel has huge pages %v", small.huge, hugePages)
	}
	s := Make[int64](small, 1<<20)
	for i := range s {
		if s[i] != 0 {
			t.Fatal("fresh memory is not zero")
		}
		s[i] = int64(i)
	}
}

// TestTrim: trimming the latest array gives its tail back, and the next
// arrays come from there, zeroed although the tail was written; trimming
// an array that is not the latest only cuts the slice.
func TestTrim(t *testing.T) {
	a := newOrSkip(t, 1<<20)
	first := Make[int32](a, 100)
	s := Make[int32](a, 1000)
	for i := range s {
		s[i] = -1
	}
	before := a.Bytes()
	s = Trim(a, s, 10)
	if len(s) != 10 || cap(s) != 10 || s[9] != -1 {
		t.Fatalf("Trim returned len %d cap %d, s[9] = %d", len(s), cap(s), s[9])
	}
	if got := a.Bytes(); got != before-990*4 {
		t.Fatalf("Bytes() = %d after Trim, want %d", got, before-990*4)
	}
	next := Make[int64](a, 300)
	if uintptr(unsafe.Pointer(&next[0])) >= uintptr(unsafe.Pointer(&s[0]))+4000 {
		t.Fatal("the next array does not reuse the trimmed tail")
	}
	for i, x := range next {
		if x != 0 {
			t.Fatalf("reused memory not zeroed: element %d is %x", i, x)
		}
	}
	for i := range next {
		next[i] = -2
	}
	if s[9] != -1 {
		t.Fatal("the next array overlaps the kept part")
	}
	// first is not the latest: only the slice is cut.
	b := a.Bytes()
	if f := Trim(a, first, 5); len(f) != 5 || a.Bytes() != b {
		t.Fatalf("Trim of an older array: len %d, Bytes %d -> %d", len(f), b, a.Bytes())
	}
	next2 := Make[int32](a, 10)
	if uintptr(unsafe.Pointer(&next2[0])) < uintptr(unsafe.Pointer(&next[0])) {
		t.Fatal("an older array's Trim gave memory back")
	}
	var nilArena *Arena
	if h := Trim(nilArena, make([]int32, 8), 3); len(h) != 3 {
		t.Fatalf("Trim on a nil arena: len %d", len(h))
	}
}

// TestMarkRelease: arrays handed out after a mark are given back by
// Release and handed out again zeroed; those before it keep their data;
// regions mapped after the mark are dropped, and the next arrays come from
// the region the mark was in; marks nest.
func TestMarkRelease(t *testing.T) {
	a := newOrSkip(t, 1<<20)
	fill := func(s []int32, v int32) {
		for i := range s {
			s[i] = v
		}
	}
	zeroed := func(name string, s []int32) {
		for i, x := range s {
			if x != 0 {
				t.Fatalf("%s: element %d is %d, want zeroed memory", name, i, x)
			}
		}
	}
	keep := Make[int32](a, 1000)
	fill(keep, 7)
	m := a.Mark()
	bytes := a.Bytes()
	tmp := Make[int32](a, 5000)
	fill(tmp, -1)
	inner := a.Mark()
	tmp2 := Make[int32](a, 100)
	fill(tmp2, -3)
	a.Release(inner)
	again := Make[int32](a, 100)
	if &again[0] != &tmp2[0] {
		t.Fatal("the inner release did not give its array back")
	}
	zeroed("after the inner release", again)
	a.Release(m)
	if a.Bytes() != bytes {
		t.Fatalf("Bytes() = %d after Release, want %d", a.Bytes(), bytes)
	}
	reused := Make[int32](a, 5000)
	if &reused[0] != &tmp[0] {
		t.Fatal("Release did not give the arrays back")
	}
	zeroed("reused", reused)

	// Growth past the first region, then back.
	m = a.Mark()
	regions := len(a.regions)
	small := Make[int32](a, 6000)
	fill(small, -4)
	big := Make[int32](a, 4<<20) // 16 MiB: a new region
	fill(big, -2)
	if len(a.regions) == regions {
		t.Fatal("a 16 MiB array did not map a new region")
	}
	a.Release(m)
	if len(a.regions) != regions {
		t.Fatalf("%d regions after Release, want %d", len(a.regions), regions)
	}
	next := Make[int32](a, 6000)
	if &next[0] != &small[0] {
		t.Fatal("after a Release across regions, the next array is not where the mark was")
	}
	zeroed("after a release across regions", next)
	for i, x := range keep {
		if x != 7 {
			t.Fatalf("an array from before the mark changed: element %d is %d", i, x)
		}
	}
	var nilArena *Arena
	nilArena.Release(nilArena.Mark())
}

// TestDiscard: the whole pages inside a discarded array read as zeros
// afterwards (they went back to the system), its partial pages and the
// arrays around it keep their data, and an array from the Go heap is left
// alone.
func TestDiscard(t *testing.T) {
	a := newOrSkip(t, 4<<20)
	before := Make[int32](a, 10)
	mid := Make[int32](a, 1<<18) // 1 MiB
	after := Make[int32](a, 10)
	for _, s := range [][]int32{before, mid, after} {
		for i := range s {
			s[i] = int32(i) + 1
		}
	}
	heap := make([]int32, 1<<18)
	for i := range heap {
		heap[i] = 5
	}
	Discard(a, mid)
	Discard(a, heap)
	Discard[int32](nil, heap)
	zeros := 0
	for _, x := range mid {
		if x == 0 {
			zeros++
		}
	}
	// mid starts on a cache line, so at most one page at each end is
	// partial.
	if zeros < len(mid)-2*pageSize/4 || zeros == len(mid) {
		t.Errorf("%d of %d elements of the discarded array read zero, want all but its partial pages", zeros, len(mid))
	}
	// After a 40-byte array, mid starts 64 bytes into a page and ends 64
	// bytes into one: both ends are partial pages.
	if uintptr(unsafe.Pointer(&mid[0]))%uintptr(pageSize) == 0 {
		t.Fatal("the discarded array starts on a page boundary: the test expects partial pages at both ends")
	}
	if mid[0] != 1 || mid[len(mid)-1] != int32(len(mid)) {
		t.Errorf("the discarded array's partial pages lost their data: %d, %d", mid[0], mid[len(mid)-1])
	}
	for i := range before {
		if before[i] != int32(i)+1 || after[i] != int32(i)+1 {
			t.Fatalf("an array beside the discarded one changed at %d: %d, %d", i, before[i], after[i])
		}
	}
	for i, x := range heap {
		if x != 5 {
			t.Fatalf("a heap array was discarded: element %d is %d", i, x)
		}
	}
}

// newOrSkip returns an arena of sizeHint, freed when the test ends, or
// skips the test where the platform has none.
func newOrSkip(t *testing.T, sizeHint int) *Arena {
	t.Helper()
	a := New(sizeHint)
	if a == nil {
		t.Skip("no arena on this platform")
	}
	t.Cleanup(a.Free)
	return a
}

// TestMakeDirty: fresh memory from MakeDirty is zero and none of it is
// called dirty; memory it hands out again keeps what it held (no clear),
// called dirty as far as it was handed out before; and Make still zeroes
// memory that MakeDirty handed out and its caller wrote.
func TestMakeDirty(t *testing.T) {
	a := newOrSkip(t, 1<<20)
	m := a.Mark()
	fresh, dirty := MakeDirty[int32](a, 3000)
	if dirty != 0 {
		t.Fatalf("fresh memory: %d elements called dirty", dirty)
	}
	for i, x := range fresh {
		if x != 0 {
			t.Fatalf("fresh memory: element %d is %d", i, x)
		}
		fresh[i] = int32(i) + 1
	}
	a.Release(m)
	again, dirty := MakeDirty[int32](a, 5000)
	if &again[0] != &fresh[0] {
		t.Fatal("Release did not give the array back")
	}
	if dirty < 3000 || dirty > 3016 {
		t.Fatalf("%d elements called dirty, want the 3000 handed out before (up to a cache line more)", dirty)
	}
	if again[2999] != 3000 {
		t.Fatalf("handed out again: element 2999 is %d, want the 3000 it held (not cleared)", again[2999])
	}
	for i, x := range again[dirty:] {
		if x != 0 {
			t.Fatalf("past the dirty prefix: element %d is %d", dirty+i, x)
		}
	}
	a.Release(m)
	zeroed := Make[int32](a, 4000)
	for i, x := range zeroed {
		if x != 0 {
			t.Fatalf("Make over memory MakeDirty handed out: element %d is %d", i, x)
		}
	}
	if s, dirty := MakeDirty[int64](nil, 5); len(s) != 5 || s[4] != 0 || dirty != 0 {
		t.Fatalf("nil arena: %v (%d dirty), want five zeros from the Go heap", s, dirty)
	}
}

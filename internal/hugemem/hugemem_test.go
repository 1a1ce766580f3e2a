//go:build linux

package hugemem

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"runtime/debug"
	"strings"
	"testing"
	"unsafe"

	"github.com/graphmill/graphmill/internal/arena"
)

// vmFlags returns the VmFlags of the mapping holding address a.
func vmFlags(t *testing.T, a uintptr) []string {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skipf("no smaps: %v", err)
	}
	defer f.Close()
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		var lo, hi uintptr
		if n, _ := fmt.Sscanf(line, "%x-%x", &lo, &hi); n == 2 && strings.Contains(line, " ") {
			in = lo <= a && a < hi
			continue
		}
		if in && strings.HasPrefix(line, "VmFlags:") {
			return strings.Fields(strings.TrimPrefix(line, "VmFlags:"))
		}
	}
	t.Fatalf("no mapping holds %#x", a)
	return nil
}

// TestMake checks Make's slice, and that it advises the whole huge pages
// of the part the caller fills, and nothing under a memory limit or for
// a small slice.
func TestMake(t *testing.T) {
	if b, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled"); err != nil || strings.Contains(string(b), "[never]") {
		t.Skip("no transparent huge pages on this kernel")
	}
	advised := func(s []float32) bool {
		p := uintptr(unsafe.Pointer(unsafe.SliceData(s)))
		mid := (p + uintptr(len(s))*2) &^ (hugePage - 1) // a huge page inside the filled part
		return strings.Contains(" "+strings.Join(vmFlags(t, mid), " ")+" ", " hg ")
	}
	const n = 3 << 20 // 12 MiB of float32
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(1 << 40))
	limited := Make[float32](n, n+n/4)
	if advised(limited) {
		t.Error("advised under a memory limit")
	}
	debug.SetMemoryLimit(math.MaxInt64)
	s := Make[float32](n, n+n/4)
	if len(s) != n || cap(s) != n+n/4 {
		t.Fatalf("len %d cap %d, want %d and %d", len(s), cap(s), n, n+n/4)
	}
	for i := 0; i < n; i += 4096 {
		if s[i] != 0 {
			t.Fatalf("s[%d] = %v, want 0", i, s[i])
		}
	}
	if !advised(s) {
		t.Error("a 12 MiB slice not advised for huge pages")
	}
	// At most arena.HugeMaxRegion of one buffer: a page past it is not advised.
	big := Make[byte](arena.HugeMaxRegion+8*hugePage, arena.HugeMaxRegion+8*hugePage)
	p := uintptr(unsafe.Pointer(unsafe.SliceData(big)))
	lo := (p + hugePage - 1) &^ (hugePage - 1)
	if f := vmFlags(t, lo+arena.HugeMaxRegion+2*hugePage); strings.Contains(" "+strings.Join(f, " ")+" ", " hg ") {
		t.Error("advised past arena.HugeMaxRegion")
	}
	if !strings.Contains(" "+strings.Join(vmFlags(t, lo), " ")+" ", " hg ") {
		t.Error("a large buffer's first huge page not advised")
	}
	if small := Make[byte](100, 1<<20); len(small) != 100 || cap(small) != 1<<20 {
		t.Fatalf("small: len %d cap %d", len(small), cap(small))
	}
}

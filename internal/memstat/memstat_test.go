package memstat

import (
	"runtime"
	"runtime/debug"
	"testing"
)

func TestPeakSeesAllocation(t *testing.T) {
	if RSS() == 0 {
		t.Skip("no /proc/self/status")
	}
	ResetPeak()
	before := Peak()
	b := make([]byte, 256<<20)
	for i := 0; i < len(b); i += 4096 {
		b[i] = 1
	}
	after := Peak()
	runtime.KeepAlive(b)
	if after-before < 200<<20 {
		t.Fatalf("peak grew by %d bytes after touching 256 MiB", after-before)
	}
}

// TestAvailable: where /proc/meminfo exists, the available memory is
// positive and no more than the machine's total.
func TestAvailable(t *testing.T) {
	a, total := Available(), fieldOf("/proc/meminfo", "MemTotal:")
	if total == 0 {
		t.Skip("no /proc/meminfo")
	}
	if a <= 0 || a > total {
		t.Fatalf("MemAvailable %d bytes, MemTotal %d", a, total)
	}
}

// TestProcessPeakSurvivesReset: a phase's peak cleared by ResetPeak still
// counts in ProcessPeak, which matches VmHWM when nothing was reset.
func TestProcessPeakSurvivesReset(t *testing.T) {
	if RSS() == 0 {
		t.Skip("no /proc/self/status")
	}
	b := make([]byte, 256<<20)
	for i := 0; i < len(b); i += 4096 {
		b[i] = 1
	}
	high := Peak()
	runtime.KeepAlive(b)
	b = nil
	runtime.GC()
	debug.FreeOSMemory()
	ResetPeak()
	if Peak() >= high && Peak()-RSS() > 64<<20 {
		t.Skip("clear_refs does not reset VmHWM here")
	}
	// The kernel's RSS counters are per-thread caches synced in batches:
	// allow 4 MiB of slack.
	if p := ProcessPeak(); p < high-4<<20 {
		t.Fatalf("process peak %d below the %d seen before the reset", p, high)
	}
}

package memstat

import (
	"runtime"
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

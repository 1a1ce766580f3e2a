package memstat

import (
	"os"
	"path/filepath"
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

// TestRoom: where /proc/meminfo exists, the room is at least what the
// system has available, and a Go soft memory limit bounds it to the limit
// less what the runtime holds.
func TestRoom(t *testing.T) {
	if fieldOf("/proc/meminfo", "MemTotal:") == 0 {
		t.Skip("no /proc/meminfo")
	}
	r, ok := Room()
	if a := Available(); !ok || r < a/2 {
		t.Fatalf("room %d bytes (known %v), available %d", r, ok, a)
	}
	lim := GoRuntime() + 64<<20
	prev := debug.SetMemoryLimit(lim)
	defer debug.SetMemoryLimit(prev)
	r, ok = Room()
	// GoRuntime may have grown a little between the two reads.
	if !ok || r > 64<<20 || r < 32<<20 {
		t.Fatalf("room %d bytes (known %v) under a limit 64 MiB above the runtime's memory", r, ok)
	}
}

// TestCgroupMemory reads a memory cgroup's limit and usage from v1 and v2
// layouts, in the cgroup's own directory or at the mount's root, and
// finds no limit where it is "max" or v1's unlimited value.
func TestCgroupMemory(t *testing.T) {
	for _, c := range []struct {
		name, cgroup          string
		files                 map[string]string
		limit, used, inactive int64
		ok                    bool
	}{
		{"v2", "0::/user.slice/job\n", map[string]string{"user.slice/job/memory.max": "1073741824\n", "user.slice/job/memory.current": "104857600\n"}, 1 << 30, 100 << 20, 0, true},
		{"v2 page cache", "0::/job\n", map[string]string{"job/memory.max": "1000000\n", "job/memory.current": "900000\n", "job/memory.stat": "anon 100000\nfile 800000\nactive_file 50000\ninactive_file 750000\n"}, 1000000, 900000, 750000, true},
		{"v1 page cache", "4:memory:/x\n", map[string]string{"memory/x/memory.limit_in_bytes": "1000000", "memory/x/memory.usage_in_bytes": "900000", "memory/x/memory.stat": "cache 800000\ninactive_file 1\ntotal_inactive_file 700000\n"}, 1000000, 900000, 700000, true},
		{"v2 unlimited", "0::/\n", map[string]string{"memory.max": "max\n", "memory.current": "5\n"}, 0, 0, 0, false},
		{"v1 own dir", "4:memory:/api/x\n3:cpu:/\n", map[string]string{"memory/api/x/memory.limit_in_bytes": "2147483648", "memory/api/x/memory.usage_in_bytes": "1"}, 2 << 30, 1, 0, true},
		{"v1 at the root", "9:cpuacct,memory:/docker/abc\n", map[string]string{"memory/memory.limit_in_bytes": "4096", "memory/memory.usage_in_bytes": "1024"}, 4096, 1024, 0, true},
		{"v1 unlimited", "4:memory:/\n", map[string]string{"memory/memory.limit_in_bytes": "9223372036854771712", "memory/memory.usage_in_bytes": "1"}, 0, 0, 0, false},
		{"no memory controller", "3:cpu:/\n", nil, 0, 0, 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, v := range c.files {
				p := filepath.Join(dir, "fs", name)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(v), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			cg := filepath.Join(dir, "cgroup")
			if err := os.WriteFile(cg, []byte(c.cgroup), 0o644); err != nil {
				t.Fatal(err)
			}
			limit, used, inactive, ok := cgroupMemory(cg, filepath.Join(dir, "fs"))
			if limit != c.limit || used != c.used || inactive != c.inactive || ok != c.ok {
				t.Fatalf("got %d, %d, %d, %v; want %d, %d, %d, %v", limit, used, inactive, ok, c.limit, c.used, c.inactive, c.ok)
			}
		})
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

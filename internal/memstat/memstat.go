// Package memstat reads the process's memory use from /proc (Linux): the
// resident set size and its high-water mark, which can be reset so that a
// phase's peak is measured alone.
package memstat

import (
	"bufio"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// RSS returns the current resident set size in bytes (0 if unknown).
func RSS() int64 { return field("VmRSS:") }

// Peak returns the resident set size high-water mark in bytes since the
// process started or since the last ResetPeak (0 if unknown).
func Peak() int64 { return field("VmHWM:") }

// ResetPeak resets the high-water mark to the current RSS (Linux >= 4.0;
// it is a no-op where unsupported, so Peak then covers the whole process).
// The mark it clears is kept for ProcessPeak.
func ResetPeak() {
	p := Peak()
	peakMu.Lock()
	processPeak = max(processPeak, p)
	peakMu.Unlock()
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
}

var (
	peakMu      sync.Mutex
	processPeak int64 // the largest high-water mark cleared by ResetPeak
)

// ProcessPeak returns the resident set size high-water mark of the whole
// process (VmHWM), including the phases whose marks ResetPeak cleared:
// the number to compare with what the system saw (e.g. /usr/bin/time).
func ProcessPeak() int64 {
	p := Peak()
	peakMu.Lock()
	defer peakMu.Unlock()
	return max(processPeak, p)
}

// Available returns the memory this process can still take, in bytes:
// what the system can give without swapping (MemAvailable in
// /proc/meminfo), or less where the process's memory cgroup (v1 or v2: a
// container's limit) leaves less (its limit less its usage); 0 if unknown.
func Available() int64 {
	a, _ := AvailableFrom()
	return a
}

// AvailableFrom is Available, and whether the memory cgroup's limit is
// what bounds it: the cgroup's usage then counts the page cache the
// process brought in (its mapped files' pages), where MemAvailable counts
// them as available.
func AvailableFrom() (avail int64, cgroup bool) {
	a := fieldOf("/proc/meminfo", "MemAvailable:")
	if a <= 0 {
		return 0, false
	}
	if limit, used, _, ok := cgroupMemory("/proc/self/cgroup", "/sys/fs/cgroup"); ok && limit-used < a {
		return max(limit-used, 0), true
	}
	return a, false
}

// Limit returns the memory the process may use in all, in bytes: its
// memory cgroup's limit (v1 or v2) where one is set and lower than the
// machine's memory (MemTotal), else MemTotal; 0 if unknown.
func Limit() int64 {
	if c := CgroupLimit(); c > 0 {
		return c
	}
	return fieldOf("/proc/meminfo", "MemTotal:")
}

// CgroupLimit returns the limit of the process's memory cgroup (v1 or v2:
// a container's, or one the process was started in) where one is set and
// lower than the machine's memory (MemTotal), in bytes; else 0.
func CgroupLimit() int64 {
	t := fieldOf("/proc/meminfo", "MemTotal:")
	if limit, _, _, ok := cgroupMemory("/proc/self/cgroup", "/sys/fs/cgroup"); ok && (t <= 0 || limit < t) {
		return limit
	}
	return 0
}

// HeapWithinCgroup sets the Go runtime's soft memory limit to 9/10 of the
// process's memory cgroup limit (CgroupLimit) where it runs in one and no
// limit is set (GOMEMLIMIT, debug.SetMemoryLimit): the collector then runs
// more often as the heap nears the cgroup's limit instead of letting it
// grow to twice the live heap and the kernel kill the process (the rest is
// left to mapped files' pages and the runtime's own). 'graphmill
// partition' of the 5M-node synthetic graph at K = 4 in a 3.8 GB cgroup:
// killed without it, done with it in the same time. It returns a function
// that restores the previous limit.
func HeapWithinCgroup() (restore func()) {
	prev := debug.SetMemoryLimit(-1)
	if c := CgroupLimit(); c > 0 && prev == math.MaxInt64 {
		debug.SetMemoryLimit(c / 10 * 9)
	}
	return func() { debug.SetMemoryLimit(prev) }
}

// Room returns how many more bytes the process can take without swapping
// or passing a bound: Available plus the Go heap's free pages not yet
// returned to the system (they are reused before the heap grows), or
// less where the Go runtime's soft memory limit (debug.SetMemoryLimit)
// leaves less; ok is false if unknown.
func Room() (room int64, ok bool) {
	a := Available()
	if a <= 0 {
		return 0, false
	}
	s := []metrics.Sample{{Name: "/memory/classes/heap/free:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() == metrics.KindUint64 {
		a += int64(s[0].Value.Uint64())
	}
	if lim := debug.SetMemoryLimit(-1); lim != math.MaxInt64 {
		a = min(a, max(lim-GoRuntime(), 0))
	}
	return a, true
}

// Anon returns the process's resident anonymous memory (RssAnon: its heap,
// stacks and anonymous mappings), in bytes (0 if unknown).
func Anon() int64 { return field("RssAnon:") }

// File returns the process's resident pages of mapped files (RssFile), in
// bytes (0 if unknown).
func File() int64 { return field("RssFile:") }

// ReadBytes returns the bytes the kernel counts the process as having read
// from storage (read_bytes in /proc/self/io; 0 if unknown).
func ReadBytes() int64 { return readBytes("/proc/self/io") }

// ProcessReadBytes is ReadBytes for process pid (a child's, say).
func ProcessReadBytes(pid int) int64 {
	return readBytes(filepath.Join("/proc", strconv.Itoa(pid), "io"))
}

func readBytes(path string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "read_bytes:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}

// cgroupMemory returns the memory limit and usage of the process's memory
// cgroup, as listed in cgroupFile and mounted under root; ok is false
// when there is no limit or it cannot be read. The cgroup's own directory
// is tried first, then the mount's root (inside a container the root is
// the container's cgroup).
func cgroupMemory(cgroupFile, root string) (limit, used, inactive int64, ok bool) {
	b, err := os.ReadFile(cgroupFile)
	if err != nil {
		return 0, 0, 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		var dir, limitName, usedName, inactiveName string
		switch {
		case parts[0] == "0" && parts[1] == "": // v2
			dir, limitName, usedName, inactiveName = root, "memory.max", "memory.current", "inactive_file"
		case slices.Contains(strings.Split(parts[1], ","), "memory"): // v1
			dir, limitName, usedName, inactiveName = filepath.Join(root, "memory"), "memory.limit_in_bytes", "memory.usage_in_bytes", "total_inactive_file"
		default:
			continue
		}
		for _, d := range []string{filepath.Join(dir, parts[2]), dir} {
			l, err1 := readInt(filepath.Join(d, limitName))
			u, err2 := readInt(filepath.Join(d, usedName))
			if err1 == nil && err2 == nil && l > 0 && l < 1<<60 { // "max" or v1's near-2⁶³: no limit
				return l, u, min(u, statBytes(filepath.Join(d, "memory.stat"), inactiveName)), true
			}
		}
	}
	return 0, 0, 0, false
}

// CgroupReclaimable returns the clean, inactive file pages charged to the
// process's memory cgroup (memory.stat's inactive_file; v1's
// total_inactive_file), which the kernel reclaims before it kills
// anything, where a cgroup limit applies; else 0. Available counts them
// as used: a container that has read its dataset holds them up to its
// limit.
func CgroupReclaimable() int64 {
	_, _, in, _ := cgroupMemory("/proc/self/cgroup", "/sys/fs/cgroup")
	return in
}

// statBytes reads key's value, in bytes, from a cgroup's memory.stat
// ("key value" lines); 0 if absent.
func statBytes(path, key string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, " "); ok && k == key {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}

// readInt reads a file holding one integer.
func readInt(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
}

func field(name string) int64 { return fieldOf("/proc/self/status", name) }

// fieldOf reads a "Name: value kB" line of a /proc file, in bytes.
func fieldOf(path, name string) int64 {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, name) {
			fs := strings.Fields(line[len(name):])
			if len(fs) >= 1 {
				kb, err := strconv.ParseInt(fs[0], 10, 64)
				if err == nil {
					return kb * 1024
				}
			}
		}
	}
	return 0
}

// GoRuntime returns the memory the Go runtime holds from the system and
// has not returned (runtime/metrics' total less released heap): what
// debug.SetMemoryLimit counts.
func GoRuntime() int64 {
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 || s[1].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return int64(s[0].Value.Uint64() - s[1].Value.Uint64())
}

// HeapInUse returns the bytes of live and not yet swept heap objects
// (runtime/metrics' /memory/classes/heap/objects:bytes): cheap enough to
// sample after every training step.
func HeapInUse() int64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return int64(s[0].Value.Uint64())
}

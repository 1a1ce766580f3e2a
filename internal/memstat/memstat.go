// Package memstat reads the process's memory use from /proc (Linux): the
// resident set size and its high-water mark, which can be reset so that a
// phase's peak is measured alone.
package memstat

import (
	"bufio"
	"os"
	"runtime/metrics"
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

// Available returns the memory the system can give to new allocations
// without swapping, MemAvailable in /proc/meminfo, in bytes (0 if unknown).
func Available() int64 { return fieldOf("/proc/meminfo", "MemAvailable:") }

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

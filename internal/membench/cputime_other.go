//go:build !linux

package membench

import "time"

var processStart = time.Now()

// ThreadCPU falls back to wall time where per-thread CPU time is not
// available.
func ThreadCPU() time.Duration { return time.Since(processStart) }

// ProcessCPU is not measured outside Linux: it returns false.
func ProcessCPU() (time.Duration, bool) { return 0, false }

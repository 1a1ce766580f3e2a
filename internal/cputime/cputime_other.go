//go:build !linux

package cputime

import "time"

var processStart = time.Now()

// Thread falls back to wall time where per-thread CPU time is not
// available.
func Thread() time.Duration { return time.Since(processStart) }

// Process is not measured outside Linux: it returns false.
func Process() (time.Duration, bool) { return 0, false }

//go:build !linux

package cputime

import "time"

var processStart = time.Now()

// Thread falls back to wall time where per-thread CPU time is not
// available.
func Thread() time.Duration { return time.Since(processStart) }

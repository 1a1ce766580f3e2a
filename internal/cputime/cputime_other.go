//go:build !unix && !windows

package cputime

import "time"

// Process is not measured here: it returns false.
func Process() (time.Duration, bool) { return 0, false }

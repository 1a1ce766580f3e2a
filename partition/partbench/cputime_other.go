//go:build !unix && !windows

package partbench

import "time"

// cpuTime is unknown here: CPU ratios come out as 0.
func cpuTime() time.Duration { return 0 }

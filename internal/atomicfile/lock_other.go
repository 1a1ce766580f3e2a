//go:build !unix

package atomicfile

import "os"

// lockFile is a no-op where flock is not available.
type lockFile struct{}

func lock(path string) (*lockFile, error) { return &lockFile{}, nil }

func (l *lockFile) unlock() {}

// alive is conservative where liveness is not checked: a temporary is
// treated as a live writer's and kept.
func alive(pid int) bool { return true }

func umask() os.FileMode { return 0 }

//go:build !unix

package history

import (
	"errors"
	"os"
	"runtime"
)

// errNoMmap is returned for a file-backed table where shared file mappings
// are not implemented.
var errNoMmap = errors.New("file-backed history tables need mmap, not available on " + runtime.GOOS + "; use an in-memory table (no path)")

func mapShared(*os.File, int) ([]byte, error) { return nil, errNoMmap }

func unmapShared([]byte) error { return nil }

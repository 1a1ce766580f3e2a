//go:build !linux

package atomicfile

import (
	"errors"
	"os"
)

var errNoExchange = errors.New("atomic exchange not supported")

// exchange has no atomic implementation here: swap falls back to two
// renames, and recoverSwap repairs a crash between them.
func exchange(a, b string) error { return errNoExchange }

func renameNoReplace(a, b string) error {
	if _, err := os.Lstat(b); err == nil {
		return &os.LinkError{Op: "rename", Old: a, New: b, Err: os.ErrExist}
	}
	return os.Rename(a, b)
}

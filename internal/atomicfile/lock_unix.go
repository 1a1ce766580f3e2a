//go:build unix

package atomicfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// lockFile is an exclusive flock on ".NAME.lock" beside a destination.
type lockFile struct {
	f    *os.File
	path string
}

// lock takes the lock of destination path, waiting while another process
// holds it. The lock file is deleted on unlock; a waiter that wakes up on
// a deleted file retries on the new one.
func lock(path string) (*lockFile, error) {
	lp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".lock")
	waited := false
	for {
		f, err := os.OpenFile(lp, os.O_RDWR|os.O_CREATE, 0o666)
		if err != nil {
			return nil, fmt.Errorf("locking %s: %w", path, err)
		}
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if errors.Is(err, syscall.EWOULDBLOCK) {
			if !waited && OnLockWait != nil {
				OnLockWait(path, lp)
			}
			waited = true
			err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		}
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("locking %s: %w", path, err)
		}
		// The holder before us may have deleted the file we locked.
		fst, err1 := f.Stat()
		pst, err2 := os.Stat(lp)
		if err1 == nil && err2 == nil && os.SameFile(fst, pst) {
			return &lockFile{f: f, path: lp}, nil
		}
		f.Close()
	}
}

func (l *lockFile) unlock() {
	if l == nil || l.f == nil {
		return
	}
	os.Remove(l.path)
	l.f.Close()
	l.f = nil
}

// alive reports whether process pid exists.
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

var umaskVal = func() os.FileMode {
	m := syscall.Umask(0)
	syscall.Umask(m)
	return os.FileMode(m)
}()

func umask() os.FileMode { return umaskVal }

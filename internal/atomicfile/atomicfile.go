// Package atomicfile writes files and directories so that a crash leaves
// either the previous version or the new one, never a mixture: content is
// written to a temporary sibling, fsynced, and renamed into place, and the
// parent directory is fsynced after the rename.
package atomicfile

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Write creates path with the content write produces, atomically.
func Write(path string, write func(io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // a no-op after the rename
	werr := write(tmp)
	if werr == nil {
		werr = tmp.Sync()
	}
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return fmt.Errorf("writing %s: %w", path, werr)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	return SyncDir(filepath.Dir(path))
}

// WriteBytes is Write for a byte slice.
func WriteBytes(path string, b []byte) error {
	return Write(path, func(w io.Writer) error {
		_, err := w.Write(b)
		return err
	})
}

// WriteSynced creates (or truncates) path with b and fsyncs it, without the
// rename: for files inside a temporary directory that is itself renamed.
func WriteSynced(path string, b []byte) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// SyncDir fsyncs a directory, making renames inside it durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// ReplaceDir renames the complete directory tmp to dir. An existing dir
// (allowed only with overwrite) is moved aside first and deleted after, so
// a complete directory exists at one of the two names at every instant. On
// failure tmp is left for the caller to remove.
func ReplaceDir(tmp, dir string, overwrite bool) error {
	var old string
	if _, err := os.Stat(dir); err == nil {
		if !overwrite {
			return fmt.Errorf("%s appeared while writing; not replacing it", dir)
		}
		old = tmp + ".old"
		if err := os.Rename(dir, old); err != nil {
			return err
		}
	}
	if err := os.Rename(tmp, dir); err != nil {
		if old != "" {
			os.Rename(old, dir)
		}
		return err
	}
	if err := SyncDir(filepath.Dir(dir)); err != nil {
		return err
	}
	if old != "" {
		return os.RemoveAll(old)
	}
	return nil
}

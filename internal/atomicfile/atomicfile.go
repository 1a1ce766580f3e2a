// Package atomicfile writes files and directories so that a crash leaves
// either the previous version or the new one, never a mixture: content is
// written to a temporary sibling, fsynced, and renamed into place, and the
// parent directory is fsynced after the rename.
//
// Temporary names carry the writer's process id (".NAME.tmp-PID-RANDOM"),
// so that a later writer can remove what a killed one left behind
// (RemoveStale); the temporaries of a running process are registered so
// that a signal handler can remove them (CleanupTemps). Files and
// directories are created with the modes the umask allows (0666 and 0777
// masked), like any Unix tool.
package atomicfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// FileMode is the mode new files get: 0666 less the process's umask.
func FileMode() os.FileMode { return 0o666 &^ umask() }

// DirMode is the mode new directories get: 0777 less the process's umask.
func DirMode() os.FileMode { return 0o777 &^ umask() }

// TempPrefix is the prefix of the temporary siblings of path written by
// this process: ".NAME.tmp-PID-".
func TempPrefix(path string) string {
	return "." + filepath.Base(path) + ".tmp-" + strconv.Itoa(os.Getpid()) + "-"
}

// temps registers the temporaries this process is writing.
var temps = struct {
	sync.Mutex
	m map[string]bool
}{m: map[string]bool{}}

func register(p string) {
	temps.Lock()
	temps.m[p] = true
	temps.Unlock()
}

func unregister(p string) {
	temps.Lock()
	delete(temps.m, p)
	temps.Unlock()
}

// Writing reports how many temporary files or directories this process is
// writing now (a signal handler lets such a write finish).
func Writing() int {
	temps.Lock()
	defer temps.Unlock()
	return len(temps.m)
}

// CleanupTemps removes every temporary file or directory this process is
// writing and returns their paths. It is for signal handlers, just before
// the process exits: the writers themselves are not told.
func CleanupTemps() []string {
	temps.Lock()
	defer temps.Unlock()
	var out []string
	for p := range temps.m {
		os.RemoveAll(p)
		out = append(out, p)
		delete(temps.m, p)
	}
	return out
}

// Write creates path with the content write produces, atomically (a
// symbolic link at path is kept, the file it names replaced).
func Write(path string, write func(io.Writer) error) error {
	// A rename onto the link would replace the link itself.
	if p, err := filepath.EvalSymlinks(path); err == nil {
		path = p
	}
	dir := filepath.Dir(path)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return fmt.Errorf("cannot write %s: folder %s does not exist", path, dir)
	}
	RemoveStale(path)
	tmp, err := os.CreateTemp(dir, TempPrefix(path))
	if err != nil {
		return fmt.Errorf("cannot write %s: %w", path, unwrapPath(err))
	}
	register(tmp.Name())
	defer func() {
		os.Remove(tmp.Name()) // a no-op after the rename
		unregister(tmp.Name())
	}()
	werr := tmp.Chmod(FileMode())
	if werr == nil {
		werr = write(tmp)
	}
	if werr == nil {
		werr = tmp.Sync()
	}
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return fmt.Errorf("writing %s: %w", path, unwrapPath(werr))
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("writing %s: %w", path, unwrapPath(err))
	}
	return SyncDir(dir)
}

// unwrapPath drops the temporary file's name from an *fs.PathError, so
// that the error names the destination only.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	return err
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
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o666)
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

// CheckWritable checks, before any work is done, that a file can be
// created at path: its folder exists and accepts new files, and path is
// not a directory. It creates and removes a temporary file to be sure.
func CheckWritable(path string) error {
	if path == "" {
		return errors.New("empty path")
	}
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return fmt.Errorf("%s is a directory", path)
	}
	return probe(filepath.Dir(path), path)
}

// CheckReplaceable refuses to replace an existing, non-empty file at path
// unless is, given its first bytes, says it is of the kind what names
// ("a safetensors checkpoint"): an output path that names a dataset's
// array or a source file by mistake would otherwise destroy it.
func CheckReplaceable(path, what string, is func(head []byte) bool) error {
	f, err := os.Open(path)
	if err != nil {
		return nil // nothing there (or unreadable: the write will say)
	}
	defer f.Close()
	head := make([]byte, 64)
	n, _ := io.ReadFull(f, head)
	if n == 0 || is(head[:n]) {
		return nil
	}
	return fmt.Errorf("%s exists and is not %s: not replacing it (remove it, or choose another path)", path, what)
}

// probe checks that dir is a folder that accepts new files, by creating
// and removing a temporary of path there.
func probe(dir, path string) error {
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("folder %s does not exist", dir)
	}
	if !st.IsDir() {
		return fmt.Errorf("%s is not a folder", dir)
	}
	f, err := os.CreateTemp(dir, TempPrefix(path))
	if err != nil {
		return fmt.Errorf("cannot create files in %s: %w", dir, unwrapPath(err))
	}
	f.Close()
	return os.Remove(f.Name())
}

// RemoveStale removes the temporary siblings of path (".NAME.tmp-PID-*",
// files or directories, including ".old" leftovers) whose writing process
// is no longer running, and returns what it removed. It never touches the
// temporaries of a live process.
func RemoveStale(path string) []string {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	prefix := "." + base + ".tmp-"
	var removed []string
	for _, e := range ents {
		name := e.Name()
		if !strings.HasPrefix(name, prefix) {
			continue
		}
		pid := tempPID(name[len(prefix):])
		if pid <= 0 || pid == os.Getpid() || alive(pid) {
			continue
		}
		p := filepath.Join(dir, name)
		if os.RemoveAll(p) == nil {
			removed = append(removed, p)
		}
	}
	return removed
}

// tempPID parses the "PID-" that starts a temporary name's suffix (0 if it
// has none, as the temporaries of older graphmill versions).
func tempPID(s string) int {
	i := strings.IndexByte(s, '-')
	if i <= 0 {
		return 0
	}
	pid, err := strconv.Atoi(s[:i])
	if err != nil {
		return 0
	}
	return pid
}

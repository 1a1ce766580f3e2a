package atomicfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Dir is an output directory being written atomically: the content goes
// into Tmp, a temporary sibling of Path, and Commit swaps it into place.
// While a Dir is open it holds Path's lock file (".NAME.lock" beside it),
// so concurrent writers of one path run one after another.
type Dir struct {
	// Path is the destination; Tmp the temporary directory to fill.
	Path, Tmp string
	lock      *lockFile
	done      bool
}

// Kind describes what a writer produces, to decide what it may replace.
type Kind struct {
	// Name is what the writer produces, for messages ("graphmill dataset").
	Name string
	// Is reports whether dir holds such a thing (and so may be replaced
	// with overwrite).
	Is func(dir string) bool
	// Foreign, if set, lists the entries of dir (which Is accepted) that
	// such a writer does not write: notes or runs a user keeps in the
	// folder. Overwrite refuses while there are any, since replacing the
	// folder would delete them.
	Foreign func(dir string) []string
}

// Unlisted lists the entries of dir that are not among own (names of its
// entries a writer writes); hidden entries (a leading dot) are the
// writers' own temporaries and are not listed. A dir that cannot be read
// gives nil.
func Unlisted(dir string, own map[string]bool) []string {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range ents {
		if n := e.Name(); !own[n] && !strings.HasPrefix(n, ".") {
			out = append(out, n)
		}
	}
	return out
}

// OnLockWait, if set, is called when Begin finds another process writing
// the same destination and starts waiting for it.
var OnLockWait func(path, lockPath string)

// CheckDest checks, before any work is done, that path may receive a
// directory of kind k: it does not exist, is an empty directory, or - with
// overwrite - holds a k. Anything else (a plain file, a folder of other
// files) is refused with an error naming what is there.
//
// Its folder must accept new files (the directory is written beside it
// and renamed into place); where folders on the way are missing (Begin
// creates them), the nearest one that exists must.
func CheckDest(path string, overwrite bool, k Kind) error {
	parent := filepath.Dir(path)
	for {
		_, err := os.Stat(parent)
		if up := filepath.Dir(parent); err != nil && up != parent {
			parent = up
			continue
		}
		break
	}
	if err := probe(parent, path); err != nil {
		return fmt.Errorf("cannot create %s: %w", path, err)
	}
	st, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if st.Mode()&os.ModeSymlink != 0 {
		// The swap would replace the link, not what it names.
		target, _ := filepath.EvalSymlinks(path)
		return fmt.Errorf("%s is a symbolic link (to %s); give the folder itself as --out", path, target)
	}
	if !st.IsDir() {
		return fmt.Errorf("%s exists and is a file, not a %s; not replacing it (choose another --out, or remove it yourself)", path, k.Name)
	}
	ents, err := os.ReadDir(path)
	if err != nil {
		return err
	}
	if len(ents) == 0 {
		return nil
	}
	if k.Is != nil && k.Is(path) {
		if !overwrite {
			return fmt.Errorf("%s already exists (use --overwrite to replace it)", path)
		}
		if k.Foreign != nil {
			if f := k.Foreign(path); len(f) > 0 {
				return fmt.Errorf("%s holds %s, which a %s does not; --overwrite replaces the whole folder and would delete %s: move %s out first, or choose another --out",
					path, abbreviate(f), k.Name, them(len(f)), them(len(f)))
			}
		}
		return nil
	}
	// Metadata files first: they tell best what the folder is.
	sort.SliceStable(ents, func(i, j int) bool {
		return strings.HasSuffix(ents[i].Name(), ".json") && !strings.HasSuffix(ents[j].Name(), ".json")
	})
	names := make([]string, len(ents))
	for i, e := range ents {
		names[i] = e.Name()
	}
	return fmt.Errorf("%s exists and is not a %s (it holds %s); not replacing it (choose another --out, or remove it yourself)",
		path, k.Name, abbreviate(names))
}

// abbreviate joins the first three names, saying how many there are in
// all when there are more.
func abbreviate(names []string) string {
	if len(names) > 3 {
		return strings.Join(names[:3], ", ") + fmt.Sprintf(", ... %d entries in all", len(names))
	}
	return strings.Join(names, ", ")
}

func them(n int) string {
	if n == 1 {
		return "it"
	}
	return "them"
}

// Begin starts writing a directory of kind k at path. It takes path's lock
// (waiting for a concurrent writer), finishes or undoes a swap that a
// killed writer left half done, removes the temporaries of dead writers,
// checks the destination (CheckDest), and creates the temporary directory.
func Begin(path string, overwrite bool, k Kind) (_ *Dir, err error) {
	path = filepath.Clean(path)
	parent := filepath.Dir(path)
	if err := os.MkdirAll(parent, 0o777); err != nil {
		return nil, err
	}
	lk, err := lock(path)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			lk.unlock()
		}
	}()
	// Holding the lock, every temporary of path belongs to a dead writer
	// (or to a live one of an older version, which RemoveStale skips).
	recoverSwap(path)
	RemoveStale(path)
	if err := CheckDest(path, overwrite, k); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp(parent, TempPrefix(path))
	if err != nil {
		return nil, err
	}
	register(tmp)
	if err := os.Chmod(tmp, DirMode()); err != nil {
		os.RemoveAll(tmp)
		unregister(tmp)
		return nil, err
	}
	return &Dir{Path: path, Tmp: tmp, lock: lk}, nil
}

// Commit fsyncs the temporary directory and swaps it into place: with an
// atomic exchange where the system has one (Linux renameat2
// RENAME_EXCHANGE), so a complete directory is at Path at every instant,
// and the previous content, now at the temporary name, is deleted after.
func (d *Dir) Commit() error {
	if d.done {
		return fmt.Errorf("%s: already committed or aborted", d.Path)
	}
	defer d.Abort()
	if err := SyncDir(d.Tmp); err != nil {
		return err
	}
	// Re-check: something foreign may have appeared at Path meanwhile.
	if st, err := os.Lstat(d.Path); err == nil && !st.IsDir() {
		return fmt.Errorf("%s became a file while writing; not replacing it", d.Path)
	}
	if err := swap(d.Tmp, d.Path); err != nil {
		return fmt.Errorf("moving the new %s into place: %w", d.Path, err)
	}
	if err := SyncDir(filepath.Dir(d.Path)); err != nil {
		return err
	}
	return nil // Abort removes d.Tmp, which now holds the old content (if any)
}

// Abort removes the temporary directory (after Commit: the previous
// content) and releases the lock. It may be called more than once.
func (d *Dir) Abort() {
	if d.done {
		return
	}
	d.done = true
	os.RemoveAll(d.Tmp)
	unregister(d.Tmp)
	d.lock.unlock()
}

// swap moves tmp to path, exchanging the two atomically if path exists.
func swap(tmp, path string) error {
	if _, err := os.Lstat(path); errors.Is(err, os.ErrNotExist) {
		return renameNoReplace(tmp, path)
	}
	err := exchange(tmp, path)
	if !errors.Is(err, errNoExchange) {
		return err
	}
	// No atomic exchange: move the old directory aside first. A crash
	// between the two renames leaves it at "TMP.old", which the next
	// writer of path puts back (recoverSwap).
	old := tmp + ".old"
	if err := os.Rename(path, old); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Rename(old, path)
		return err
	}
	return os.Rename(old, tmp) // Abort deletes it with the temporary
}

// recoverSwap puts back a previous directory left at ".NAME.tmp-*.old" by
// a writer killed between the two renames of a non-atomic swap (path
// missing). Called holding path's lock.
func recoverSwap(path string) {
	if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
		return
	}
	olds, _ := filepath.Glob(filepath.Join(filepath.Dir(path), "."+globEscape(filepath.Base(path))+".tmp-*.old"))
	for _, old := range olds {
		if st, err := os.Stat(old); err == nil && st.IsDir() {
			if os.Rename(old, path) == nil {
				SyncDir(filepath.Dir(path))
				return
			}
		}
	}
}

func globEscape(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `*`, `\*`, `?`, `\?`, `[`, `\[`)
	return r.Replace(s)
}

// ReplaceDir renames the complete directory tmp to dir, exchanging it
// atomically with an existing dir (allowed only with overwrite), whose
// content is then deleted. On failure tmp is left for the caller to
// remove. Prefer Begin and Commit, which also lock, clean up and refuse
// to replace what another program wrote.
func ReplaceDir(tmp, dir string, overwrite bool) error {
	if _, err := os.Stat(dir); err == nil && !overwrite {
		return fmt.Errorf("%s appeared while writing; not replacing it", dir)
	}
	if err := swap(tmp, dir); err != nil {
		return err
	}
	if err := SyncDir(filepath.Dir(dir)); err != nil {
		return err
	}
	return os.RemoveAll(tmp)
}

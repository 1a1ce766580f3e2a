package atomicfile

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// testKind recognises directories holding a file "MINE", its only entry.
var testKind = Kind{Name: "test output", Is: func(d string) bool {
	_, err := os.Stat(filepath.Join(d, "MINE"))
	return err == nil
}, Foreign: func(d string) []string { return Unlisted(d, map[string]bool{"MINE": true}) }}

func writeDir(t *testing.T, path string, overwrite bool, content string) error {
	t.Helper()
	d, err := Begin(path, overwrite, testKind)
	if err != nil {
		return err
	}
	defer d.Abort()
	os.WriteFile(filepath.Join(d.Tmp, "MINE"), []byte(content), 0o666)
	return d.Commit()
}

func entries(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

func TestBeginCommitReplacesOnlyItsOwnKind(t *testing.T) {
	root := t.TempDir()
	out := filepath.Join(root, "out")
	if err := writeDir(t, out, false, "one"); err != nil {
		t.Fatal(err)
	}
	if err := writeDir(t, out, false, "two"); err == nil || !strings.Contains(err.Error(), "--overwrite") {
		t.Fatalf("replaced without overwrite: %v", err)
	}
	if err := writeDir(t, out, true, "two"); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(out, "MINE")); string(b) != "two" {
		t.Fatalf("content %q", b)
	}
	if names := entries(t, root); len(names) != 1 {
		t.Fatalf("leftovers: %v", names)
	}

	// A folder of the user's own files and a plain file are refused even
	// with overwrite, and left as they were.
	user := filepath.Join(root, "user")
	os.Mkdir(user, 0o777)
	os.WriteFile(filepath.Join(user, "notes.txt"), []byte("keep"), 0o666)
	err := writeDir(t, user, true, "x")
	if err == nil || !strings.Contains(err.Error(), "notes.txt") || !strings.Contains(err.Error(), "not a test output") {
		t.Fatalf("foreign folder: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(user, "notes.txt")); string(b) != "keep" {
		t.Fatal("user file lost")
	}
	file := filepath.Join(root, "file")
	os.WriteFile(file, []byte("keep"), 0o666)
	if err := writeDir(t, file, true, "x"); err == nil || !strings.Contains(err.Error(), "is a file") {
		t.Fatalf("plain file: %v", err)
	}
	if b, _ := os.ReadFile(file); string(b) != "keep" {
		t.Fatal("file replaced")
	}
	// An output the user added files to is not replaced: they would go.
	os.WriteFile(filepath.Join(out, "notes.txt"), []byte("keep"), 0o666)
	os.Mkdir(filepath.Join(out, "runs"), 0o777)
	os.WriteFile(filepath.Join(out, ".hidden-temp"), nil, 0o666)
	err = writeDir(t, out, true, "three")
	if err == nil || !strings.Contains(err.Error(), "notes.txt, runs,") || strings.Contains(err.Error(), "hidden") {
		t.Fatalf("output with the user's files: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(out, "notes.txt")); string(b) != "keep" {
		t.Fatal("user file lost")
	}
	for _, f := range []string{"notes.txt", "runs", ".hidden-temp"} {
		os.RemoveAll(filepath.Join(out, f))
	}
	// A link to an output is named as a link (it said "is a file").
	link := filepath.Join(root, "link")
	os.Symlink(out, link)
	if err := writeDir(t, link, true, "x"); err == nil || !strings.Contains(err.Error(), "is a symbolic link (to "+out) {
		t.Fatalf("link: %v", err)
	}
	os.Remove(link)
	// An empty folder is used, even without overwrite.
	empty := filepath.Join(root, "empty")
	os.Mkdir(empty, 0o777)
	if err := writeDir(t, empty, false, "e"); err != nil {
		t.Fatal(err)
	}
	if names := entries(t, root); strings.Join(names, ",") != "empty,file,out,user" {
		t.Fatalf("entries after the refusals: %v", names)
	}
}

// deadPID returns the id of a process that has exited.
func deadPID(t *testing.T) int {
	t.Helper()
	c := exec.Command("true")
	if err := c.Run(); err != nil {
		t.Skip("cannot run true:", err)
	}
	return c.Process.Pid
}

func TestBeginRemovesDeadWritersTemporaries(t *testing.T) {
	root := t.TempDir()
	out := filepath.Join(root, "out")
	dead := filepath.Join(root, ".out.tmp-"+strconv.Itoa(deadPID(t))+"-123")
	live := filepath.Join(root, ".out.tmp-1-456") // pid 1 is alive
	other := filepath.Join(root, ".other.tmp-"+strconv.Itoa(deadPID(t))+"-1")
	for _, d := range []string{dead, live, other} {
		os.MkdirAll(filepath.Join(d, "sub"), 0o777)
	}
	if err := writeDir(t, out, false, "x"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Fatal("a dead writer's temporary directory was kept")
	}
	for _, d := range []string{live, other} {
		if _, err := os.Stat(d); err != nil {
			t.Fatalf("%s removed: %v", d, err)
		}
	}
}

func TestBeginRecoversInterruptedSwap(t *testing.T) {
	root := t.TempDir()
	out := filepath.Join(root, "out")
	// A writer killed between the two renames of the fallback swap: out is
	// missing, the old content is at TMP.old and the new one at TMP.
	pid := strconv.Itoa(deadPID(t))
	old := filepath.Join(root, ".out.tmp-"+pid+"-9.old")
	os.MkdirAll(old, 0o777)
	os.WriteFile(filepath.Join(old, "MINE"), []byte("old"), 0o666)
	os.MkdirAll(filepath.Join(root, ".out.tmp-"+pid+"-9"), 0o777)
	d, err := Begin(out, false, testKind)
	if err == nil {
		d.Abort()
		t.Fatal("the recovered directory was not seen: Begin went on without overwrite")
	}
	if b, _ := os.ReadFile(filepath.Join(out, "MINE")); string(b) != "old" {
		t.Fatalf("not recovered: %q", b)
	}
	if names := entries(t, root); strings.Join(names, ",") != "out" {
		t.Fatalf("leftovers: %v", names)
	}
}

func TestConcurrentWritersAreSerialised(t *testing.T) {
	root := t.TempDir()
	out := filepath.Join(root, "out")
	first, err := Begin(out, true, testKind)
	if err != nil {
		t.Fatal(err)
	}
	waited := make(chan string, 1)
	OnLockWait = func(p, _ string) { waited <- p }
	defer func() { OnLockWait = nil }()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := writeDir(t, out, true, "second"); err != nil {
			t.Error(err)
		}
	}()
	select {
	case <-waited:
	case <-time.After(5 * time.Second):
		t.Fatal("the second writer did not wait for the first")
	}
	os.WriteFile(filepath.Join(first.Tmp, "MINE"), []byte("first"), 0o666)
	if err := first.Commit(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if b, _ := os.ReadFile(filepath.Join(out, "MINE")); string(b) != "second" {
		t.Fatalf("content %q", b)
	}
	if names := entries(t, root); strings.Join(names, ",") != "out" {
		t.Fatalf("leftovers (lock files, temporaries): %v", names)
	}
}

func TestModesHonourUmask(t *testing.T) {
	root := t.TempDir()
	f := filepath.Join(root, "f")
	if err := WriteBytes(f, []byte("x")); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(f); st.Mode().Perm() != FileMode() || FileMode() != 0o666&^umask() {
		t.Fatalf("file mode %v, want %v", st.Mode().Perm(), FileMode())
	}
	if err := writeDir(t, filepath.Join(root, "d"), false, "x"); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(filepath.Join(root, "d")); st.Mode().Perm() != DirMode() {
		t.Fatalf("dir mode %v, want %v", st.Mode().Perm(), DirMode())
	}
	if umask()&0o044 == 0 && FileMode()&0o044 == 0 {
		t.Fatal("a permissive umask still gave private files")
	}
}

func TestCleanupTempsRemovesInProgress(t *testing.T) {
	root := t.TempDir()
	d, err := Begin(filepath.Join(root, "out"), false, testKind)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Abort()
	removed := CleanupTemps()
	if len(removed) != 1 || removed[0] != d.Tmp {
		t.Fatalf("removed %v, want %s", removed, d.Tmp)
	}
	if _, err := os.Stat(d.Tmp); !os.IsNotExist(err) {
		t.Fatal("temporary directory kept")
	}
}

func TestWriteNamesMissingFolder(t *testing.T) {
	err := WriteBytes("/nonexistent/dir/x.safetensors", []byte("x"))
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/dir does not exist") || strings.Contains(err.Error(), ".tmp-") {
		t.Fatalf("got %v", err)
	}
	if err := CheckWritable("/nonexistent/dir/x"); err == nil {
		t.Fatal("CheckWritable accepted a missing folder")
	}
	if err := CheckWritable(filepath.Join(t.TempDir(), "x")); err != nil {
		t.Fatal(err)
	}
}

// TestCheckDestProbesTheFolder: CheckDest refuses, before any work, a
// destination whose folder (or, where folders on the way are missing, the
// nearest one that exists) is a file or takes no new files, and leaves no
// probe behind where it accepts.
func TestCheckDestProbesTheFolder(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	os.WriteFile(file, nil, 0o666)
	for _, tc := range []struct{ path, err string }{
		{filepath.Join(dir, "out"), ""},
		{filepath.Join(dir, "a", "b", "out"), ""}, // Begin creates a and b
		{filepath.Join(file, "out"), file + " is not a folder"},
		{filepath.Join(file, "a", "out"), file + " is not a folder"},
		// /proc takes no new files, even from root.
		{"/proc/graphmill-none/out", "cannot create files in /proc"},
	} {
		err := CheckDest(tc.path, false, testKind)
		if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%s: %v, want %q", tc.path, err, tc.err)
		}
	}
	if got := entries(t, dir); len(got) != 1 {
		t.Errorf("left %v in the folder, want only the file", got)
	}
}

package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

func TestWriteKeepsOldOnFailure(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	if err := WriteBytes(p, []byte("old")); err != nil {
		t.Fatal(err)
	}
	err := Write(p, func(w io.Writer) error {
		w.Write([]byte("partial"))
		return errors.New("boom")
	})
	if err == nil {
		t.Fatal("failure not reported")
	}
	if b, _ := os.ReadFile(p); string(b) != "old" {
		t.Fatalf("old content lost: %q", b)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("temporary files left: %v", ents)
	}
}

// TestWriteKeepsLinks: writing through a symbolic link replaces the file
// it names; the link stays a link.
func TestWriteKeepsLinks(t *testing.T) {
	dir := t.TempDir()
	target, link := filepath.Join(dir, "target"), filepath.Join(dir, "link")
	if err := WriteBytes(target, []byte("old")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("target", link); err != nil {
		t.Fatal(err)
	}
	if err := WriteBytes(link, []byte("new")); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the link was replaced: %v %v", st, err)
	}
	if b, _ := os.ReadFile(target); string(b) != "new" {
		t.Fatalf("target holds %q", b)
	}
}

// TestCheckReplaceable: an existing file of another kind is refused; one
// of the kind, an empty one or none is not.
func TestCheckReplaceable(t *testing.T) {
	dir := t.TempDir()
	isJSON := func(h []byte) bool { return h[0] == '{' }
	for _, c := range []struct {
		content string // "-": no file
		ok      bool
	}{{"-", true}, {"", true}, {"{\"a\": 1}", true}, {"\x93NUMPY", false}} {
		p := filepath.Join(dir, "f")
		os.Remove(p)
		if c.content != "-" {
			if err := os.WriteFile(p, []byte(c.content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		err := CheckReplaceable(p, "a JSON file", isJSON)
		if (err == nil) != c.ok {
			t.Errorf("content %q: %v", c.content, err)
		}
	}
}

func TestReplaceDir(t *testing.T) {
	root := t.TempDir()
	dst := filepath.Join(root, "d")
	for i, content := range []string{"one", "two"} {
		tmp := filepath.Join(root, ".tmp")
		os.Mkdir(tmp, 0o755)
		os.WriteFile(filepath.Join(tmp, "x"), []byte(content), 0o644)
		err := ReplaceDir(tmp, dst, i > 0)
		if err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(filepath.Join(dst, "x")); string(b) != content {
			t.Fatalf("got %q", b)
		}
	}
	tmp := filepath.Join(root, ".tmp")
	os.Mkdir(tmp, 0o755)
	if err := ReplaceDir(tmp, dst, false); err == nil {
		t.Fatal("replaced without overwrite")
	}
}

// TestWritingCountsWritesInProgress: a signal handler waits while a
// write is in progress (Writing > 0) and not after it.
func TestWritingCountsWritesInProgress(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	during := -1
	if err := Write(path, func(w io.Writer) error {
		during = Writing()
		_, err := w.Write([]byte("x"))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if during != 1 || Writing() != 0 {
		t.Fatalf("writing %d during the write, %d after", during, Writing())
	}
}

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

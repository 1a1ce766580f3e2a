package shareddata

import (
	"os"
	"path/filepath"
	"testing"
)

func TestDirHonoursEnvironment(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("GRAPHMILL_DATA", tmp)
	if Dir() != tmp || Path("planetoid") != filepath.Join(tmp, "planetoid") {
		t.Fatalf("Dir %s, Path %s with GRAPHMILL_DATA=%s", Dir(), Path("planetoid"), tmp)
	}
	os.Unsetenv("GRAPHMILL_DATA")
	// Without it: the nearest shared/data above the working directory.
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "shared", "data"), 0o755)
	os.MkdirAll(filepath.Join(root, "proj", "pkg"), 0o755)
	t.Chdir(filepath.Join(root, "proj", "pkg"))
	want, _ := filepath.EvalSymlinks(filepath.Join(root, "shared", "data"))
	got, _ := filepath.EvalSymlinks(Dir())
	if got != want {
		t.Fatalf("Dir %s, want %s", got, want)
	}
}

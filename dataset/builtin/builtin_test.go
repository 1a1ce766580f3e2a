package builtin

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/graphmill/graphmill/npy"
)

// TestDamagedCacheIsRewritten: a cached Cora whose indices.npy holds an
// out-of-range id (which made every command panic) is detected when
// opened and rewritten from the embedded files.
func TestDamagedCacheIsRewritten(t *testing.T) {
	t.Setenv("GRAPHMILL_CACHE", t.TempDir())
	d, err := Open(context.Background(), "cora")
	if err != nil {
		t.Fatal(err)
	}
	dir := d.Dir
	d.Close()
	p := filepath.Join(dir, "indices.npy")
	idx, _, err := npy.ReadFile[int32](p)
	if err != nil {
		t.Fatal(err)
	}
	idx[777] = 5000
	if err := npy.WriteFile(p, idx); err != nil {
		t.Fatal(err)
	}
	d, err = Open(context.Background(), "cora")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.Verify(context.Background()); err != nil {
		t.Fatalf("the rewritten cache is still damaged: %v", err)
	}
}

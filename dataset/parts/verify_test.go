package parts_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/graphmill/graphmill/dataset/parts"
	"github.com/graphmill/graphmill/npy"
)

// TestVerify: a written partitioned dataset verifies; a node owned by two
// parts, or a halo map that points at another node, is named, though each
// part alone still opens.
func TestVerify(t *testing.T) {
	dir, _ := writeCora4(t)
	calls := 0
	if err := parts.Verify(context.Background(), dir, func(int, int) { calls++ }); err != nil || calls != 4 {
		t.Fatalf("a fresh partitioned dataset: %v (%d progress calls)", err, calls)
	}
	book, err := parts.ReadBook(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		part int
		file string
		edit func(a []int32)
		want string
	}{
		{2, "global_ids.npy", func(a []int32) { a[3] = int32(book.Parts[0].NodeRange[0]) }, "is also owned by part 0"},
		{1, "halo_local_ids.npy", func(a []int32) { a[0] = (a[0] + 1) % int32(book.Parts[0].NumInner) }, "maps to local node"},
	} {
		path := filepath.Join(dir, book.Parts[c.part].Dir, c.file)
		orig, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		a, _, err := npy.ReadFile[int32](path)
		if err != nil {
			t.Fatal(err)
		}
		c.edit(a)
		if err := npy.WriteFile(path, a, len(a)); err != nil {
			t.Fatal(err)
		}
		if err := parts.Verify(context.Background(), dir, nil); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s of part %d edited: %v, want %q", c.file, c.part, err, c.want)
		}
		os.WriteFile(path, orig, 0o644)
	}
}

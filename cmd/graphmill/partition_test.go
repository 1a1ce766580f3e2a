package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/graphmill/graphmill/internal/cgroup"
	"github.com/graphmill/graphmill/npy"
)

// TestPartitionInCgroup partitions a 1M-node graph of 16 planted
// communities into 4 parts inside a 1.25 GiB memory cgroup (root only;
// skipped where no memory cgroup is writable). Its initial partitions,
// four runs on a dense level of 62 MB, held 2.3 GB before they gave back
// their temporaries, and the process peaked at 3.1 GB (1.5 GB: killed);
// now it must finish, with the partition it gives outside the cgroup.
func TestPartitionInCgroup(t *testing.T) {
	if testing.Short() {
		t.Skip("generates and partitions a 1M-node graph twice")
	}
	dir := t.TempDir()
	ds := filepath.Join(dir, "ds")
	if _, err := run(t, "data", "generate", "--nodes", "1M", "--edges", "5M", "--feature-dim", "0", "--seed", "1", "--out", ds, "--quiet"); err != nil {
		t.Fatal(err)
	}
	const limit = 1280 << 20
	cg, err := cgroup.New("graphmill-test-partition-"+strconv.Itoa(os.Getpid()), limit)
	if err != nil {
		t.Skipf("no memory cgroup to run in: %v", err)
	}
	defer cg.Close()
	inGroup := filepath.Join(dir, "cgroup.npy")
	cmd := cliCmd(context.Background(), "partition", "--parts", "4", "--assignment", inGroup, ds)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cg.Prepare(cmd); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Run(); err != nil {
		t.Fatalf("partitioning in a %d MiB cgroup: %v (cgroup peak %d MiB)\n%s", limit>>20, err, cg.Peak()>>20, out.String())
	}
	outside := filepath.Join(dir, "outside.npy")
	if _, err := run(t, "partition", "--parts", "4", "--assignment", outside, ds); err != nil {
		t.Fatal(err)
	}
	got, _, err := npy.ReadFile[int32](inGroup)
	if err != nil {
		t.Fatal(err)
	}
	want, _, err := npy.ReadFile[int32](outside)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Errorf("the partition made in the cgroup differs from the one made outside")
	}
	t.Logf("cgroup peak %d MiB of %d", cg.Peak()>>20, limit>>20)
}

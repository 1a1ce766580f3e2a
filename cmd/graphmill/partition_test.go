package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/graphmill/graphmill/dataset"
	"github.com/graphmill/graphmill/internal/cgroup"
	"github.com/graphmill/graphmill/npy"
	"github.com/graphmill/graphmill/partition"
)

// TestPartitionInCgroup partitions a 1M-node graph of 16 planted
// communities into 4 parts inside memory cgroups (root only; skipped where
// no memory cgroup is writable). In 1.25 GiB: its initial partitions, four
// runs on a dense level of 62 MB, held 2.3 GB before they gave back their
// temporaries, and the process peaked at 3.1 GB (1.5 GB: killed); now it
// must finish, with the partition it gives outside the cgroup. In 700 MiB,
// where its coarse levels do not all fit (killed there, and at 720 MiB,
// before they were kept only while memory held them), it must finish with
// a valid, balanced partition whose cut is within 3 % of the one outside.
func TestPartitionInCgroup(t *testing.T) {
	if testing.Short() {
		t.Skip("generates and partitions a 1M-node graph three times")
	}
	dir := t.TempDir()
	ds := filepath.Join(dir, "ds")
	if _, err := run(t, "data", "generate", "--nodes", "1M", "--edges", "5M", "--feature-dim", "0", "--seed", "1", "--out", ds, "--quiet"); err != nil {
		t.Fatal(err)
	}
	inCgroup := func(limit int64) []int32 {
		t.Helper()
		cg, err := cgroup.New("graphmill-test-partition-"+strconv.Itoa(os.Getpid()), limit)
		if err != nil {
			t.Skipf("no memory cgroup to run in: %v", err)
		}
		defer cg.Close()
		path := filepath.Join(dir, "cgroup.npy")
		cmd := cliCmd(context.Background(), "partition", "--parts", "4", "--assignment", path, ds)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cg.Prepare(cmd); err != nil {
			t.Fatal(err)
		}
		if err := cmd.Run(); err != nil {
			t.Fatalf("partitioning in a %d MiB cgroup: %v (cgroup peak %d MiB)\n%s", limit>>20, err, cg.Peak()>>20, out.String())
		}
		t.Logf("cgroup peak %d MiB of %d", cg.Peak()>>20, limit>>20)
		parts, _, err := npy.ReadFile[int32](path)
		if err != nil {
			t.Fatal(err)
		}
		return parts
	}
	got := inCgroup(1280 << 20)
	outside := filepath.Join(dir, "outside.npy")
	if _, err := run(t, "partition", "--parts", "4", "--assignment", outside, ds); err != nil {
		t.Fatal(err)
	}
	want, _, err := npy.ReadFile[int32](outside)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Errorf("the partition made in the cgroup differs from the one made outside")
	}

	tight := inCgroup(700 << 20)
	d, err := dataset.Open(ds)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	g, err := partition.FromCSC(context.Background(), d.Graph, 0)
	if err != nil {
		t.Fatal(err)
	}
	st, err := partition.ComputeStats(g, tight, 4, nil, 0)
	if err != nil {
		t.Fatalf("the partition made in 700 MiB: %v", err)
	}
	ref, err := partition.ComputeStats(g, want, 4, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	if st.Imbalance > partition.DefaultImbalance+1e-9 {
		t.Errorf("imbalance %.4f in 700 MiB, over %.2f", st.Imbalance, partition.DefaultImbalance)
	}
	if float64(st.EdgeCut) > 1.03*float64(ref.EdgeCut) {
		t.Errorf("cut %d in 700 MiB, %d with room to spare", st.EdgeCut, ref.EdgeCut)
	}
}

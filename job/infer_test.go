package job

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRankDest: a partitioned run's predictions go to out/rank-R; out may
// only be new, empty or an earlier such output, whose folders of ranks
// past this run's are removed by rank 0 (an earlier run over more ranks
// would leave two runs' nodes side by side).
func TestRankDest(t *testing.T) {
	out := filepath.Join(t.TempDir(), "preds")
	earlier := func(ranks int) {
		for r := range ranks {
			p := &Predictions{Pred: []int32{1}, Probs: []float32{0.5, 0.5}, Classes: 2, NodeIDs: []int32{int32(r)}, Rank: r, Ranks: ranks}
			dest, err := RankDest(out, r, ranks)
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Write(dest); err != nil {
				t.Fatal(err)
			}
		}
	}
	earlier(4)
	for _, rank := range []int{1, 0} { // rank 1 leaves them; rank 0 removes them
		dest, err := RankDest(out, rank, 2)
		if err != nil || dest != filepath.Join(out, []string{"rank-00000", "rank-00001"}[rank]) {
			t.Fatalf("rank %d: %q %v", rank, dest, err)
		}
	}
	ents, _ := os.ReadDir(out)
	if len(ents) != 2 {
		t.Fatalf("after a 2-rank run over a 4-rank output, %d folders are left", len(ents))
	}
	os.WriteFile(filepath.Join(out, "notes.txt"), []byte("mine"), 0o644)
	if _, err := RankDest(out, 0, 2); err == nil || !strings.Contains(err.Error(), "notes.txt") {
		t.Fatalf("a folder holding other files: %v", err)
	}
	os.Remove(filepath.Join(out, "notes.txt"))
	os.Mkdir(filepath.Join(out, "rank-00007"), 0o755)
	os.WriteFile(filepath.Join(out, "rank-00007", "data.csv"), []byte("x"), 0o644)
	if _, err := RankDest(out, 0, 2); err == nil || !strings.Contains(err.Error(), "not removing it") {
		t.Fatalf("a rank folder that holds no predictions: %v", err)
	}
}

package cora_test

import (
	"fmt"
	"testing"

	"github.com/graphmill/graphmill/dataset/cora"
)

func TestRaw(t *testing.T) {
	r, err := cora.Raw()
	if err != nil {
		t.Fatal(err)
	}
	if r.NumNodes != 2708 || r.FeatureDim != 1433 || r.NumClasses != 7 {
		t.Errorf("nodes/features/classes = %d/%d/%d, want 2708/1433/7", r.NumNodes, r.FeatureDim, r.NumClasses)
	}
	if len(r.Train) != 140 || len(r.Val) != 500 || len(r.Test) != 1000 {
		t.Errorf("split %d/%d/%d, want 140/500/1000", len(r.Train), len(r.Val), len(r.Test))
	}
	counts := make([]int, r.NumClasses)
	for _, l := range r.Labels {
		if l < 0 {
			t.Fatalf("unlabelled node in Cora")
		}
		counts[l]++
	}
	want := []int{351, 217, 418, 818, 426, 298, 180}
	if fmt.Sprint(counts) != fmt.Sprint(want) {
		t.Errorf("label counts %v, want %v", counts, want)
	}
	// The stored graph's edges: 5278 undirected edges, both directions.
	if len(r.Src) != 10556 || len(r.Src) != len(r.Dst) {
		t.Errorf("%d/%d adjacency entries, want 10556", len(r.Src), len(r.Dst))
	}
	// Each call returns an independent value.
	orig := r.Labels[0]
	r.Labels[0] = (orig + 1) % 7
	r2, err := cora.Raw()
	if err != nil {
		t.Fatal(err)
	}
	if r2.Labels[0] != orig {
		t.Error("Raw returned state shared with an earlier call")
	}
}

func ExampleRaw() {
	r, err := cora.Raw()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(r.NumNodes, r.FeatureDim, r.NumClasses, len(r.Train), len(r.Val), len(r.Test))
	// Output: 2708 1433 7 140 500 1000
}

package dataset_test

import (
	"context"
	"slices"
	"testing"

	"github.com/graphmill/graphmill/dataset"
	"github.com/graphmill/graphmill/dataset/builtin"
)

// TestFingerprintCoversTheData: a trainer's dataset with the sampler's
// sizes but one edge, label, split entry or feature byte changed has
// another fingerprint (the trainer would train on the sampler's data and
// evaluate on its own).
func TestFingerprintCoversTheData(t *testing.T) {
	t.Setenv("GRAPHMILL_CACHE", t.TempDir())
	t.Chdir(t.TempDir()) // the built-in, not this package's cora folder
	d, err := builtin.Open(context.Background(), "cora")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	base := d.Fingerprint()
	edges, labels, split, feats := *d, *d, *d, *d
	g := *d.Graph
	g.Indices = slices.Clone(g.Indices)
	g.Indices[0]++
	edges.Graph = &g
	labels.Labels = slices.Clone(d.Labels)
	labels.Labels[7] = (labels.Labels[7] + 1) % int32(d.Meta.NumClasses)
	split.Val = slices.Clone(d.Val)
	split.Val[3]++
	fa := *d.FeatureArray
	fa.Data = slices.Clone(fa.Data)
	fa.Data[1] ^= 1
	feats.FeatureArray = &fa
	for name, x := range map[string]*dataset.Dataset{"edges": &edges, "labels": &labels, "split": &split, "features": &feats} {
		if x.Fingerprint() == base {
			t.Errorf("another %s, the same fingerprint", name)
		}
	}
	if d.Fingerprint() != base {
		t.Error("the fingerprint of one dataset changed")
	}
}

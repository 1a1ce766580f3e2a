package train

import (
	"fmt"
	"os"
	"strconv"

	"github.com/graphmill/graphmill/dataset"
	"github.com/graphmill/graphmill/internal/memstat"
	"github.com/graphmill/graphmill/internal/units"
	"github.com/graphmill/graphmill/nn"
	"github.com/graphmill/graphmill/safetensors"
)

// Checkpoint is what a checkpoint written by 'graphmill train --save'
// holds: the model's config, its tensors, and how training read the
// features, which inference must repeat.
type Checkpoint struct {
	Path  string
	Model nn.Config
	File  *safetensors.File
	// NormalizeFeatures is the run's row normalisation; a checkpoint
	// that does not record it (one assembled in PyTorch) gets the model
	// kind's default, as training does.
	NormalizeFeatures bool
	// FeatureDType is the dtype training read the features as ("": as
	// stored).
	FeatureDType string
}

// ReadCheckpoint reads a checkpoint's config and metadata.
func ReadCheckpoint(path string) (*Checkpoint, error) {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return nil, fmt.Errorf("%s is a directory, not a checkpoint (a .safetensors file from 'graphmill train --save')", path)
	}
	mc, f, err := nn.ReadConfig(path)
	if err != nil {
		return nil, err
	}
	c := &Checkpoint{Path: path, Model: mc, File: f, NormalizeFeatures: Defaults(mc.Kind).NormalizeFeatures,
		FeatureDType: f.Metadata["feature_dtype"]}
	if v, ok := f.Metadata["normalize_features"]; ok {
		if c.NormalizeFeatures, err = strconv.ParseBool(v); err != nil {
			return nil, fmt.Errorf("%s: bad normalize_features %q", path, v)
		}
	}
	return c, nil
}

// Fits checks the model against a dataset (name) of dim features and
// classes classes. A dataset without labels (0 classes) fits any class
// count: its nodes can still be predicted.
func (c *Checkpoint) Fits(name string, dim, classes int) error {
	if c.Model.In != dim || (classes > 0 && c.Model.Out != classes) {
		return fmt.Errorf("%s: the model takes %d features and predicts %d classes, but dataset %s has %d features and %d classes",
			c.Path, c.Model.In, c.Model.Out, name, dim, classes)
	}
	return nil
}

// Load rebuilds the model saved in a checkpoint (by 'graphmill train
// --save') for inference on ds: it reads the stored model config and
// feature handling, checks them against the dataset, and loads the
// weights. evalBatch and maxMemory set the batch and memory bound of
// layer-wise inference (see Config). Mismatches are errors naming the
// file and the difference.
func Load(ds *dataset.Dataset, path string, evalBatch int, maxMemory int64) (*Runner, *nn.Model, error) {
	if ds == nil || ds.Graph == nil {
		return nil, nil, errNoDataset
	}
	c, err := ReadCheckpoint(path)
	if err != nil {
		return nil, nil, err
	}
	if err := c.Fits(ds.Meta.Name, ds.Meta.FeatureDim, ds.Meta.NumClasses); err != nil {
		return nil, nil, err
	}
	cfg := Defaults(c.Model.Kind)
	cfg.Model, cfg.Mode, cfg.EvalBatchSize, cfg.MaxMemoryBytes = c.Model, Full, evalBatch, maxMemory
	cfg.Fanouts = nil
	cfg.NormalizeFeatures, cfg.FeatureDType = c.NormalizeFeatures, c.FeatureDType
	r, err := newRunner(ds, cfg, Hooks{}, true)
	if err != nil {
		return nil, nil, err
	}
	m, err := r.NewModel() // first: a config its tensors do not match is that error
	if err != nil {
		r.Close()
		return nil, nil, err
	}
	if need, avail := inferBytes(c.Model, ds.Meta.NumNodes), memstat.Available(); avail > 0 && need > avail {
		r.Close()
		return nil, nil, fmt.Errorf("layer-wise inference holds every node's hidden rows: %s for %s nodes (%s, hidden %d), more than the %s of memory available",
			units.Bytes(need), units.Count(ds.Meta.NumNodes), c.Model.Kind, c.Model.Hidden, units.Bytes(avail))
	}
	if err := m.LoadParams(c.File, path); err != nil {
		r.Close()
		return nil, nil, err
	}
	return r, m, nil
}

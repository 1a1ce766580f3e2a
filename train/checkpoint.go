package train

import (
	"fmt"
	"strconv"

	"github.com/graphmill/graphmill/dataset"
	"github.com/graphmill/graphmill/nn"
)

// Load rebuilds the model saved in a checkpoint (by 'graphmill train
// --save') for inference on ds: it reads the stored model config and
// feature normalisation, checks them against the dataset, and loads the
// weights. evalBatch and maxMemory set the batch and memory bound of
// layer-wise inference (see Config). Mismatches are errors naming the file and the difference.
func Load(ds *dataset.Dataset, path string, evalBatch int, maxMemory int64) (*Runner, *nn.Model, error) {
	if ds == nil || ds.Graph == nil {
		return nil, nil, errNoDataset
	}
	mc, f, err := nn.ReadConfig(path)
	if err != nil {
		return nil, nil, err
	}
	if mc.In != ds.Meta.FeatureDim || mc.Out != ds.Meta.NumClasses {
		return nil, nil, fmt.Errorf("%s: the model takes %d features and predicts %d classes, but dataset %s has %d features and %d classes",
			path, mc.In, mc.Out, ds.Meta.Name, ds.Meta.FeatureDim, ds.Meta.NumClasses)
	}
	cfg := Defaults(mc.Kind)
	cfg.Model, cfg.Mode, cfg.EvalBatchSize, cfg.MaxMemoryBytes = mc, Full, evalBatch, maxMemory
	cfg.Fanouts = nil
	cfg.NormalizeFeatures = true
	if v, ok := f.Metadata["normalize_features"]; ok {
		if cfg.NormalizeFeatures, err = strconv.ParseBool(v); err != nil {
			return nil, nil, fmt.Errorf("%s: bad normalize_features %q", path, v)
		}
	}
	r, err := NewRunner(ds, cfg, Hooks{})
	if err != nil {
		return nil, nil, err
	}
	m, err := r.NewModel()
	if err != nil {
		return nil, nil, err
	}
	if err := m.LoadParams(f, path); err != nil {
		return nil, nil, err
	}
	return r, m, nil
}

package train

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"strconv"

	"github.com/graphmill/graphmill/dataset"
	"github.com/graphmill/graphmill/internal/memstat"
	"github.com/graphmill/graphmill/internal/units"
	"github.com/graphmill/graphmill/nn"
	"github.com/graphmill/graphmill/safetensors"
)

// The metadata keys a checkpoint written by Save (and 'graphmill train
// --save') records beside the weights and nn's graphmill_config.
const (
	// MetaNormalize is Config.NormalizeFeatures ("true" or "false").
	MetaNormalize = "normalize_features"
	// MetaFeatureDType is Config.FeatureDType, when set.
	MetaFeatureDType = "feature_dtype"
	// MetaDataset is the dataset's name (Summary.Dataset).
	MetaDataset = "dataset"
	// MetaBestValAcc and MetaTestAcc are the kept model's accuracies
	// (Summary), when it was evaluated.
	MetaBestValAcc = "best_val_acc"
	MetaTestAcc    = "test_acc"
)

// CheckpointMeta returns the metadata a checkpoint of res records beside
// its weights: how training read the features (res.Config's
// NormalizeFeatures and FeatureDType), which Load repeats, and the
// dataset's name and the kept model's accuracies from res.Summary. res
// must come from Runner.Run or Loop.Run, which set res.Config.
func CheckpointMeta(res *Result) map[string]string {
	meta := map[string]string{
		MetaDataset:   res.Summary.Dataset,
		MetaNormalize: strconv.FormatBool(res.Config.NormalizeFeatures),
	}
	if res.Config.FeatureDType != "" {
		meta[MetaFeatureDType] = res.Config.FeatureDType
	}
	for k, v := range map[string]float64{MetaBestValAcc: res.Summary.BestValAcc, MetaTestAcc: res.Summary.TestAcc} {
		if res.Summary.BestEpoch >= 0 && !math.IsNaN(v) { // NaN: a split without nodes
			meta[k] = strconv.FormatFloat(v, 'f', 4, 64)
		}
	}
	return meta
}

// Save writes res.Model to path (safetensors, atomically) as a checkpoint
// that Load, 'graphmill eval' and 'graphmill predict' read back exactly:
// the weights and model config (nn.Model.Save) and CheckpointMeta's keys.
// extra adds metadata of the caller's; CheckpointMeta's keys take
// precedence. A model saved with nn.Model.Save alone records no feature
// handling, and Load refuses it.
func Save(path string, res *Result, extra map[string]string) error {
	if res == nil || res.Model == nil {
		return errors.New("train: Save needs a result with its model")
	}
	if res.Config.Model.Kind == "" {
		return errors.New("train: the result records no training config (Result.Config): save the result of Runner.Run or Loop.Run")
	}
	meta := make(map[string]string, len(extra)+5)
	for k, v := range extra {
		meta[k] = v
	}
	for k, v := range CheckpointMeta(res) {
		meta[k] = v
	}
	return res.Model.Save(path, meta)
}

// Checkpoint is what a checkpoint written by Save or 'graphmill train
// --save' holds: the model's config, its tensors, and how training read
// the features, which inference must repeat.
type Checkpoint struct {
	Path  string
	Model nn.Config
	File  *safetensors.File
	// NormalizeFeatures is the run's row normalisation (MetaNormalize).
	NormalizeFeatures bool
	// NormalizeGuessed says the checkpoint does not record it: one
	// assembled in PyTorch with graphmill's config alone, or saved by
	// graphmill's nn.Model.Save before it marked its files
	// (nn.WriterKey). NormalizeFeatures is then the model kind's default,
	// as training's, which is wrong for a model trained otherwise; Load
	// warns (log/slog). A checkpoint nn.Model.Save marked as graphmill's
	// that lacks the key is refused: it was saved without Save.
	NormalizeGuessed bool
	// FeatureDType is the dtype training read the features as ("": as
	// stored).
	FeatureDType string
}

// ReadCheckpoint reads a checkpoint's config and metadata; where they do
// not record the feature handling (NormalizeGuessed) it warns through
// log/slog's default logger.
func ReadCheckpoint(path string) (*Checkpoint, error) {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return nil, fmt.Errorf("%s is a directory, not a checkpoint (a .safetensors file from 'graphmill train --save')", path)
	}
	mc, f, err := nn.ReadConfig(path)
	if err != nil {
		return nil, err
	}
	c := &Checkpoint{Path: path, Model: mc, File: f, NormalizeFeatures: Defaults(mc.Kind).NormalizeFeatures,
		FeatureDType: f.Metadata[MetaFeatureDType]}
	v, ok := f.Metadata[MetaNormalize]
	switch {
	case ok:
		if c.NormalizeFeatures, err = strconv.ParseBool(v); err != nil {
			return nil, fmt.Errorf("%s: bad %s %q", path, MetaNormalize, v)
		}
	case f.Metadata[nn.WriterKey] != "":
		return nil, fmt.Errorf("%s records no %s: it was saved by nn.Model.Save without the feature handling its training used, which inference must repeat (guessing the %s default, %v, can change its accuracy): save trained models with train.Save, or give Model.Save the key (\"true\" or \"false\")",
			path, MetaNormalize, mc.Kind, c.NormalizeFeatures)
	default:
		c.NormalizeGuessed = true
		slog.Warn("graphmill: the checkpoint does not record how training read the features; assuming the model kind's default, which is wrong (and lowers accuracy) for a model trained otherwise",
			"checkpoint", path, "kind", mc.Kind, MetaNormalize, c.NormalizeFeatures)
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

// Load rebuilds the model saved in a checkpoint (by Save or 'graphmill
// train --save') for inference on ds: it reads the stored model config and
// feature handling, checks them against the dataset, and loads the
// weights. evalBatch and maxMemory set the batch and memory bound of
// layer-wise inference (see Config). Mismatches are errors naming the
// file and the difference; so is a checkpoint graphmill wrote without
// recording its feature handling (see Checkpoint.NormalizeGuessed). One
// from elsewhere that does not record it is read with the kind's default,
// with a warning through log/slog's default logger.
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

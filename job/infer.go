package job

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/graphmill/graphmill/dataset"
	"github.com/graphmill/graphmill/dataset/parts"
	"github.com/graphmill/graphmill/dist"
	"github.com/graphmill/graphmill/engine"
	"github.com/graphmill/graphmill/internal/atomicfile"
	"github.com/graphmill/graphmill/nn"
	"github.com/graphmill/graphmill/npy"
	"github.com/graphmill/graphmill/sar"
	"github.com/graphmill/graphmill/tensor"
	"github.com/graphmill/graphmill/train"
)

// InferSpec describes a saved model run on a dataset (Eval, Predict).
type InferSpec struct {
	// Dataset is a dataset directory, a built-in dataset's name, or a
	// partitioned dataset, over whose parts the ranks of Comm (or a group
	// of one) run the layers (package sar) in Mode (default sar).
	Dataset    string
	Checkpoint string
	// BatchSize and MaxMemoryBytes size layer-wise inference's batches.
	BatchSize      int
	MaxMemoryBytes int64
	Comm           dist.Comm
	Mode           sar.Mode
}

// Evaluation is a saved model's accuracies on a dataset: over all nodes,
// also on a partitioned dataset (Ranks ranks; Rank this process's).
type Evaluation struct {
	engine.Evaluation
	Dataset     string
	Model       nn.Kind
	Rank, Ranks int
	Mode        sar.Mode
}

// Eval scores the checkpoint on the dataset's validation and test nodes
// with every neighbour (layer-wise inference).
func Eval(ctx context.Context, s InferSpec) (*Evaluation, error) {
	if IsPartitioned(s.Dataset) {
		e, m, done, err := openSAR(ctx, s)
		if err != nil {
			return nil, err
		}
		defer done()
		if err := scorable(e.Shard.Name, e.Shard.NumClasses, e.Shard.NumVal, e.Shard.NumTest); err != nil {
			return nil, err
		}
		ev, err := e.Evaluate(ctx, m)
		if err != nil {
			return nil, err
		}
		unscored(&ev, e.Shard.NumVal, e.Shard.NumTest)
		return &Evaluation{Evaluation: ev, Dataset: e.Shard.Name, Model: m.Config.Kind, Rank: e.Shard.Rank, Ranks: e.Shard.Size, Mode: e.Mode}, nil
	}
	d, r, m, err := openCheckpoint(ctx, s, "eval")
	if err != nil {
		return nil, err
	}
	defer d.Close()
	if err := scorable(d.Meta.Name, d.Meta.NumClasses, len(d.Val), len(d.Test)); err != nil {
		return nil, err
	}
	ev, err := r.Evaluate(ctx, m)
	if err != nil {
		return nil, err
	}
	unscored(&ev, len(d.Val), len(d.Test))
	return &Evaluation{Evaluation: ev, Dataset: d.Meta.Name, Model: m.Config.Kind, Ranks: 1}, nil
}

// scorable refuses to evaluate on a dataset without labels or without
// validation and test nodes (an accuracy of 0 would be reported).
func scorable(name string, classes, val, test int) error {
	if classes == 0 {
		return fmt.Errorf("dataset %s has no labels: nothing to evaluate against ('graphmill predict' runs a model on every node)", name)
	}
	if val == 0 && test == 0 {
		return fmt.Errorf("dataset %s has no validation or test nodes: nothing to evaluate ('graphmill predict' runs a model on every node)", name)
	}
	return nil
}

// unscored marks the figures of a split without nodes as NaN (not
// measured), not 0.
func unscored(ev *engine.Evaluation, val, test int) {
	if val == 0 {
		ev.ValAcc, ev.ValLoss = math.NaN(), math.NaN()
	}
	if test == 0 {
		ev.TestAcc = math.NaN()
	}
}

// Predictions are a saved model's predicted class and class probabilities
// for every node by original id, or, on a partitioned dataset, for the
// nodes of this rank's parts (NodeIDs, their original ids, increasing).
type Predictions struct {
	Dataset, Checkpoint string
	Pred                []int32
	Probs               []float32 // len(Pred) × Classes
	Classes             int
	NodeIDs             []int32
	Rank, Ranks         int
	Parts               []int
}

// Predict runs the checkpoint on every node (layer-wise inference).
func Predict(ctx context.Context, s InferSpec) (*Predictions, error) {
	if IsPartitioned(s.Dataset) {
		return predictSAR(ctx, s)
	}
	d, r, m, err := openCheckpoint(ctx, s, "predict")
	if err != nil {
		return nil, err
	}
	defer d.Close()
	logits, err := r.Predict(ctx, m)
	if err != nil {
		return nil, err
	}
	pred, probs, err := classify(logits)
	if err != nil {
		return nil, err
	}
	// By original node id, also for a packed dataset.
	return &Predictions{Dataset: d.Dir, Checkpoint: s.Checkpoint, Classes: logits.Cols, Ranks: 1,
		Pred: dataset.InOriginalOrder(d, pred, 1), Probs: dataset.InOriginalOrder(d, probs, logits.Cols)}, nil
}

// classify returns every row's argmax and softmax probabilities.
func classify(logits tensor.Matrix) ([]int32, []float32, error) {
	probs := tensor.New(logits.Rows, logits.Cols)
	if err := tensor.LogSoftmax(probs, logits); err != nil {
		return nil, nil, err
	}
	pred := make([]int32, logits.Rows)
	if err := tensor.RowArgmax(pred, logits); err != nil {
		return nil, nil, err
	}
	for i, v := range probs.Data {
		probs.Data[i] = float32(math.Exp(float64(v)))
	}
	return pred, probs.Data, nil
}

// openCheckpoint opens the dataset and loads the checkpoint's model for
// it, for command what.
func openCheckpoint(ctx context.Context, s InferSpec, what string) (*dataset.Dataset, *train.Runner, *nn.Model, error) {
	d, err := OpenDataset(ctx, s.Dataset, what)
	if err != nil {
		return nil, nil, nil, err
	}
	batch := s.BatchSize
	if batch <= 0 {
		batch = 4096
	}
	r, m, err := train.Load(d, s.Checkpoint, batch, s.MaxMemoryBytes)
	if err != nil {
		d.Close()
		return nil, nil, nil, err
	}
	return d, r, m, nil
}

// openSAR joins the ranks (or a group of one), opens this rank's shard of
// the partitioned dataset and loads the checkpoint for it.
func openSAR(ctx context.Context, s InferSpec) (*sar.Engine, *nn.Model, func(), error) {
	mode := s.Mode
	if mode == "" {
		mode = sar.SAR
	}
	ck, err := train.ReadCheckpoint(s.Checkpoint)
	if err != nil {
		return nil, nil, nil, err
	}
	comm, done := s.Comm, func() {}
	if comm == nil {
		gs, err := dist.LocalGroup(ctx, 1, dist.Options{})
		if err != nil {
			return nil, nil, nil, err
		}
		comm, done = gs[0], func() { gs[0].Close() }
	} else if err := sameInference(ctx, comm, s.Dataset, mode, ck); err != nil {
		return nil, nil, nil, err
	}
	sh, err := sar.Open(ctx, comm, s.Dataset, sar.ShardOptions{Normalize: ck.NormalizeFeatures})
	if err != nil {
		done()
		return nil, nil, nil, err
	}
	if err := ck.Fits(sh.Name, sh.FeatureDim, sh.NumClasses); err != nil {
		done()
		return nil, nil, nil, err
	}
	m, err := sar.NewModel(sh, ck.Model)
	if err == nil {
		err = m.LoadParams(ck.File, s.Checkpoint)
	}
	if err != nil {
		done()
		return nil, nil, nil, err
	}
	return sar.NewEngine(sh, mode), m, done, nil
}

// predictSAR predicts the nodes this rank owns, in original node order.
func predictSAR(ctx context.Context, s InferSpec) (*Predictions, error) {
	e, m, done, err := openSAR(ctx, s)
	if err != nil {
		return nil, err
	}
	defer done()
	sh := e.Shard
	logits, err := e.Logits(ctx, m)
	if err != nil {
		return nil, err
	}
	order := make([]int32, sh.NumInner())
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int { return int(sh.GlobalIDs[a]) - int(sh.GlobalIDs[b]) })
	c := logits.Cols
	rows := tensor.New(len(order), c)
	ids := make([]int32, len(order))
	for i, v := range order {
		ids[i] = sh.GlobalIDs[v]
		copy(rows.Row(i), logits.Row(int(v)))
	}
	pred, probs, err := classify(rows)
	if err != nil {
		return nil, err
	}
	return &Predictions{Dataset: s.Dataset, Checkpoint: s.Checkpoint, Pred: pred, Probs: probs, Classes: c, NodeIDs: ids,
		Rank: sh.Rank, Ranks: sh.Size, Parts: sh.Parts}, nil
}

// absPath is path made absolute when it names a file or folder (a
// built-in dataset's name stays as it is), so that a manifest read from
// elsewhere still says what was run.
func absPath(path string) string {
	if _, err := os.Stat(path); err != nil {
		return path
	}
	if a, err := filepath.Abs(path); err == nil {
		return a
	}
	return path
}

// RankDest is where rank (of size ranks) of a run on a partitioned
// dataset writes its predictions: out/rank-R. out must be new, empty, or
// the output of an earlier such run (rank-R folders holding predictions;
// hidden entries are writers' temporaries and locks); anything else is
// refused. Rank 0 removes the folders of ranks past size, which an earlier
// run over more ranks left, so that out never holds two runs' nodes.
func RankDest(out string, rank, size int) (string, error) {
	ents, err := os.ReadDir(out)
	if err != nil && !os.IsNotExist(err) {
		return "", err
	}
	for _, e := range ents {
		name := e.Name()
		if strings.HasPrefix(name, ".") {
			continue
		}
		var r int
		path := filepath.Join(out, name)
		if _, err := fmt.Sscanf(name, "rank-%d", &r); err != nil || !e.IsDir() || fmt.Sprintf("rank-%05d", r) != name {
			return "", fmt.Errorf("%s exists and is not a graphmill predictions folder (it holds %s); not replacing it (choose another --out, or remove it yourself)", out, name)
		}
		if r >= size && rank == 0 {
			if !PredictionsKind.Is(path) {
				return "", fmt.Errorf("%s is not a graphmill predictions folder; not removing it (choose another --out, or remove it yourself)", path)
			}
			if err := os.RemoveAll(path); err != nil {
				return "", err
			}
		}
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return "", err
	}
	return filepath.Join(out, fmt.Sprintf("rank-%05d", rank)), nil
}

// PredictionsFormat marks predictions.json, which marks a Write output.
const PredictionsFormat = "graphmill-predictions"

// manifest is predictions.json.
type manifest struct {
	Format     string `json:"format"`
	Model      string `json:"model"`
	Dataset    string `json:"dataset"`
	NumNodes   int    `json:"num_nodes"`
	NumClasses int    `json:"num_classes"`
	// A rank's part of a partitioned dataset's predictions.
	Rank  *int  `json:"rank,omitempty"`
	Ranks int   `json:"ranks,omitempty"`
	Parts []int `json:"parts,omitempty"`
}

// PredictionsKind recognises an earlier predictions folder: predictions.json
// of this format, or (written by older versions) a folder holding only
// predictions.npy and probabilities.npy.
var PredictionsKind = atomicfile.Kind{Name: "graphmill predictions folder", Is: func(dir string) bool {
	if b, err := os.ReadFile(filepath.Join(dir, "predictions.json")); err == nil {
		var m manifest
		return json.Unmarshal(b, &m) == nil && m.Format == PredictionsFormat
	}
	ents, err := os.ReadDir(dir)
	if err != nil || len(ents) == 0 {
		return false
	}
	for _, e := range ents {
		if n := e.Name(); n != "predictions.npy" && n != "probabilities.npy" {
			return false
		}
	}
	return true
}, Foreign: func(dir string) []string {
	return atomicfile.Unlisted(dir, map[string]bool{"predictions.json": true, "predictions.npy": true, "probabilities.npy": true, "node_ids.npy": true})
}}

// Write writes the predictions into dir: predictions.npy, probabilities.npy,
// node_ids.npy (a rank's nodes only) and predictions.json, into a
// temporary folder swapped with dir at once, so that a failure (a full
// disk) leaves the previous output whole. dir must be new, empty, or an
// earlier predictions folder.
func (p *Predictions) Write(dir string) error {
	o, err := atomicfile.Begin(dir, true, PredictionsKind)
	if err != nil {
		return err
	}
	defer o.Abort()
	n := len(p.Pred)
	m := manifest{Format: PredictionsFormat, Model: absPath(p.Checkpoint), Dataset: absPath(p.Dataset), NumNodes: n, NumClasses: p.Classes}
	if p.NodeIDs != nil {
		m.Rank, m.Ranks, m.Parts = &p.Rank, p.Ranks, p.Parts
		if err := npy.WriteFile(filepath.Join(o.Tmp, "node_ids.npy"), p.NodeIDs, n); err != nil {
			return fmt.Errorf("writing %s/node_ids.npy: %w", dir, err)
		}
	}
	if err := npy.WriteFile(filepath.Join(o.Tmp, "predictions.npy"), p.Pred, n); err != nil {
		return fmt.Errorf("writing %s/predictions.npy: %w", dir, err)
	}
	if err := npy.WriteFile(filepath.Join(o.Tmp, "probabilities.npy"), p.Probs, n, p.Classes); err != nil {
		return fmt.Errorf("writing %s/probabilities.npy: %w", dir, err)
	}
	b, _ := json.MarshalIndent(m, "", "  ")
	if err := atomicfile.WriteSynced(filepath.Join(o.Tmp, "predictions.json"), append(b, '\n')); err != nil {
		return fmt.Errorf("writing %s/predictions.json: %w", dir, err)
	}
	return o.Commit()
}

// sameInference fails unless every rank runs the same mode and checkpoint
// (its config, feature handling and weights) over the same partition:
// ranks with other checkpoints reported a blend of their accuracies, and
// ranks in other modes waited for each other's collectives until
// --op-timeout.
func sameInference(ctx context.Context, comm dist.Comm, dataset string, mode sar.Mode, ck *train.Checkpoint) error {
	book, err := parts.ReadBook(dataset)
	if err != nil {
		return err
	}
	b, _ := json.Marshal(struct { // plain fields
		Mode      sar.Mode
		Model     nn.Config
		Normalize bool
		DType     string
		Book      uint64
	}{mode, ck.Model, ck.NormalizeFeatures, ck.FeatureDType, bookHash(book)})
	h := fnv.New64a() // streamed: the weights are not copied
	h.Write(b)
	for _, name := range ck.File.Order {
		h.Write([]byte(name))
		h.Write(npy.AsBytes(ck.File.Tensors[name].Data))
	}
	same, err := agree(ctx, comm, h.Sum64())
	if err == nil && !same {
		err = fmt.Errorf("rank %d: the ranks run different checkpoints, --mode or partitioned datasets: give every rank the same ones", comm.Rank())
	}
	return err
}

package train

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc64"
	"log/slog"
	"math"
	"os"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/graphmill/graphmill/internal/jsonnull"
	"github.com/graphmill/graphmill/nn"
	"github.com/graphmill/graphmill/safetensors"
	"github.com/graphmill/graphmill/tensor"
)

// A training-state file ('graphmill train --state-file', Loop.StateFile)
// holds what a run needs to continue after its process is gone: the
// current weights, the optimiser's state (nn.StatefulOptimizer), the best
// weights so far, and, in its JSON record, the number of epochs done, the
// history, the model selection and early-stopping state, the run's
// configuration with its hash (Config.SharedHash) and the dataset's
// identity (DatasetID). In GAS mode it also holds the partition and the
// history tables, which cannot be derived again. It is a safetensors file
// (float32 tensors named model/..., best/..., optimizer/PARAM/STATE,
// gas/parts and gas/history.L; the record under the metadata key
// StateKey), written atomically: a crash mid-write leaves the previous
// state whole.
//
// Everything else a run draws is derived from (seed, epoch, step):
// dropout, the sampled pipeline's shuffling and neighbourhoods, GAS's
// batch order, the learning-rate schedule. So a run resumed at an epoch
// boundary trains exactly as the uninterrupted run would (the same losses
// and accuracies, bit for bit), provided the settings that shape the
// computation but are left out of the hash are the same too: a different
// memory bound splits steps into other micro-batches, whose dropout is
// drawn per piece.

// StateKey is the metadata key of a training-state file's JSON record.
const StateKey = nn.StateKey

// stateVersion is the version of the record's layout.
const stateVersion = 1

// WithState makes Run write a training-state file at path after every
// every epochs (< 1: every epoch) and after the last (Loop.StateFile).
func WithState(path string, every int) Option {
	return func(r *Runner) { r.statePath, r.stateEvery = path, every }
}

// WithResume makes Run continue the run st describes (ReadState; a State
// resumes one run: its tensors are released once restored) instead
// of starting afresh: it refuses other settings (Config.SharedHash) or
// another dataset (DatasetID) with an error naming what differs.
func WithResume(st *State) Option { return func(r *Runner) { r.resume = st } }

// DatasetID identifies a dataset in a training-state file: its name and
// sizes, and Fingerprint, a CRC-64 of the graph's offsets, the labels and
// the splits, and of samples of the edges (at most 65,536, evenly spaced,
// on more than 2^20) and of the feature rows (64): enough to tell another
// dataset, or the same one changed, without reading a graph larger than
// memory from disk.
type DatasetID struct {
	Name        string `json:"name"`
	Nodes       int    `json:"nodes"`
	Edges       int64  `json:"edges"`
	FeatureDim  int    `json:"feature_dim"`
	Classes     int    `json:"classes"`
	Train       int    `json:"train"`
	Val         int    `json:"val"`
	Test        int    `json:"test"`
	Fingerprint string `json:"fingerprint"`
}

// CheckResume refuses, before any training, the state given to
// WithResume if the run cannot continue it (State.Check); without one it
// returns nil. Run checks it too.
func (r *Runner) CheckResume(ctx context.Context) error {
	if r.resume == nil {
		return nil
	}
	id, err := r.datasetID(ctx)
	if err != nil {
		return err
	}
	return r.resume.Check(r.cfg, id)
}

// datasetID is DatasetID, computed once (it reads the whole degree table).
func (r *Runner) datasetID(ctx context.Context) (DatasetID, error) {
	if r.id == nil {
		id, err := r.DatasetID(ctx)
		if err != nil {
			return id, err
		}
		r.id = &id
	}
	return *r.id, nil
}

// DatasetID returns the identity of the run's dataset (see DatasetID).
func (r *Runner) DatasetID(ctx context.Context) (DatasetID, error) {
	if r.closed {
		return DatasetID{}, errClosed
	}
	ds, g := r.ds, r.ds.Graph
	id := DatasetID{Name: ds.Meta.Name, Nodes: g.NumNodes, Edges: g.NumEdges(), FeatureDim: ds.Meta.FeatureDim, Classes: ds.Meta.NumClasses,
		Train: len(ds.Train), Val: len(ds.Val), Test: len(ds.Test)}
	h := crc64.New(crc64.MakeTable(crc64.ECMA))
	var buf []byte
	flush := func() {
		h.Write(buf)
		buf = buf[:0]
	}
	put := func(v uint64) {
		buf = binary.LittleEndian.AppendUint64(buf, v)
		if len(buf) >= 1<<16 {
			flush()
		}
	}
	for _, v := range g.Indptr {
		put(uint64(v))
	}
	sampled := func(n int, at func(i int)) {
		step := 1
		if n > 1<<20 {
			step = n / (1 << 16)
		}
		for i := 0; i < n; i += step {
			at(i)
		}
		if n > 0 {
			at(n - 1)
		}
	}
	sampled(len(g.Indices), func(i int) { put(uint64(g.Indices[i])) })
	sampled(len(g.Weights), func(i int) { put(uint64(math.Float32bits(g.Weights[i]))) })
	for _, a := range [][]int32{ds.Labels, ds.Train, ds.Val, ds.Test} {
		put(uint64(len(a)))
		for _, v := range a {
			put(uint64(uint32(v)))
		}
	}
	if f := r.feat; f != nil && f.NumRows() > 0 && f.Dim() > 0 {
		n := f.NumRows()
		ids := make([]int32, 0, 65)
		for i := 0; i < 64; i++ {
			ids = append(ids, int32(int64(i)*int64(n)/64))
		}
		ids = append(ids, int32(n-1))
		rows := make([]float32, len(ids)*f.Dim())
		if err := f.Gather(ctx, ids, rows); err != nil {
			return id, fmt.Errorf("reading feature rows for the dataset's fingerprint: %w", err)
		}
		for _, v := range rows {
			put(uint64(math.Float32bits(v)))
		}
	}
	flush()
	id.Fingerprint = fmt.Sprintf("%016x", h.Sum64())
	return id, nil
}

// differences lists the fields in which b differs from a ("" when none).
func (a DatasetID) differences(b DatasetID) string {
	var d []string
	add := func(name string, x, y any) {
		if x != y {
			d = append(d, fmt.Sprintf("%s %v there, %v here", name, x, y))
		}
	}
	add("name", a.Name, b.Name)
	add("nodes", a.Nodes, b.Nodes)
	add("edges", a.Edges, b.Edges)
	add("features", a.FeatureDim, b.FeatureDim)
	add("classes", a.Classes, b.Classes)
	add("training nodes", a.Train, b.Train)
	add("validation nodes", a.Val, b.Val)
	add("test nodes", a.Test, b.Test)
	if len(d) == 0 && a.Fingerprint != b.Fingerprint {
		d = append(d, fmt.Sprintf("the same sizes, but other edges, labels, splits or features (fingerprint %s there, %s here)", a.Fingerprint, b.Fingerprint))
	}
	return strings.Join(d, "; ")
}

// exactFloat is a float64 written in JSON as a string that reads back
// bit for bit, NaN and the infinities included (a selection that has
// seen no evaluation holds -Inf).
type exactFloat float64

func (f exactFloat) MarshalJSON() ([]byte, error) {
	return json.Marshal(strconv.FormatFloat(float64(f), 'g', -1, 64))
}

func (f *exactFloat) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return err
	}
	*f = exactFloat(v)
	return nil
}

// progress is the loop's running totals, which the summary's means are
// made of.
type progress struct {
	TrainSeconds   float64 `json:"train_seconds"`
	SampleSeconds  float64 `json:"sample_seconds"`
	GatherSeconds  float64 `json:"gather_seconds"`
	ComputeSeconds float64 `json:"compute_seconds"`
	WaitSeconds    float64 `json:"wait_seconds"`
	FirstWait      float64 `json:"first_wait_seconds,omitempty"`
	TotalSeconds   float64 `json:"total_seconds"`
	Seeds          int64   `json:"seeds"`
	Epochs         int     `json:"epochs"`
}

// stateRecord is a training-state file's JSON record.
type stateRecord struct {
	Version int `json:"version"`
	// Epoch is the number of epochs done; Done says the run has ended
	// (its last epoch, or stopped early).
	Epoch      int       `json:"epoch"`
	Done       bool      `json:"done"`
	Written    time.Time `json:"written"`
	ConfigHash string    `json:"config_hash"`
	Config     Config    `json:"config"`
	Dataset    DatasetID `json:"dataset"`
	// Threads is the kernels' goroutines the run used (tensor.Threads):
	// another count changes how sums are split, so a sampled or GAS run
	// resumed with it no longer matches the uninterrupted one bit for bit.
	Threads int `json:"threads_used,omitempty"`
	// The summary so far.
	BestValAcc    exactFloat `json:"best_val_acc"`
	BestValLoss   exactFloat `json:"best_val_loss"`
	TestAcc       exactFloat `json:"test_acc"`
	BestEpoch     int        `json:"best_epoch"`
	StoppedEarly  bool       `json:"stopped_early"`
	Batches       int        `json:"batches"`
	MicroBatches  int        `json:"micro_batches"`
	PeakHeapBytes int64      `json:"peak_heap_bytes"`
	PeakRSSBytes  int64      `json:"peak_rss_bytes"`
	Progress      progress   `json:"progress"`
	// Selection is the model selection's state (Selection).
	Selection struct {
		Best       exactFloat `json:"best"`
		BestLoss   exactFloat `json:"best_loss"`
		LowestLoss exactFloat `json:"lowest_loss"`
		SinceBest  int        `json:"since_best"`
	} `json:"selection"`
	// Steps are the optimiser's step counts by parameter name (Adam;
	// parameters with state only).
	Steps map[string]int `json:"optimizer_steps"`
	// History is every epoch's record so far, a JSON list of EpochStats
	// (metrics that are not finite written as null: they read back as
	// absent).
	History json.RawMessage `json:"history"`
}

// State is a training run's state at the end of an epoch, read from a
// training-state file (ReadState) to continue the run (WithResume,
// Loop.Resume).
type State struct {
	// Path is the file it was read from.
	Path string
	// Epoch is the number of epochs done: the run continues with epoch
	// Epoch (numbered from 0). Done says it has ended (its last epoch, or
	// stopped early): resuming it trains nothing and returns its result,
	// unless the resumed run asks for more epochs (Ended).
	Epoch int
	Done  bool
	// Written is when the file was written.
	Written time.Time
	// Config is the run's configuration, ConfigHash its SharedHash.
	Config     Config
	ConfigHash uint64
	// Dataset identifies the dataset it trained on.
	Dataset DatasetID
	// History is every epoch's record so far.
	History []EpochStats
	// BestEpoch is the epoch of the best model so far (-1: none
	// evaluated), BestValAcc its validation accuracy.
	BestEpoch  int
	BestValAcc float64

	rec  stateRecord
	file *safetensors.File
}

// ReadState reads a training-state file (written by Loop.StateFile,
// WithState or 'graphmill train --state-file'). A model checkpoint from
// --save, or any other file, is an error saying what it is. GAS's
// history tables are left in the file, which stays open until the run
// resumed from the State restores them, or Close.
func ReadState(path string) (*State, error) { return readState(path, false) }

// PeekState is ReadState without the tensors (the header alone): what a
// state file is, for messages; it cannot be resumed.
func PeekState(path string) (*State, error) { return readState(path, true) }

func readState(path string, headerOnly bool) (*State, error) {
	if st, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("no training-state file %s (written by 'graphmill train --state-file')", path)
	} else if err != nil {
		return nil, fmt.Errorf("training state: %w", err)
	} else if st.IsDir() {
		return nil, fmt.Errorf("%s is a directory, not a training-state file (written by 'graphmill train --state-file')", path)
	}
	f := &safetensors.File{}
	var err error
	if headerOnly {
		f.Metadata, err = safetensors.ReadMetadata(path)
	} else {
		// GAS's history tables stay in the file until restored, a chunk
		// at a time (they can be most of the memory the run has).
		f, err = safetensors.Open(path, func(name string) bool { return strings.HasPrefix(name, "gas/history.") })
	}
	if err != nil {
		return nil, fmt.Errorf("%s is not a training-state file: %w", path, err)
	}
	kept := false
	defer func() {
		if !kept {
			f.Close()
		}
	}()
	js, ok := f.Metadata[StateKey]
	if !ok {
		what := "a safetensors file"
		if f.Metadata[nn.WriterKey] != "" {
			what = "a model checkpoint ('graphmill train --save'), which holds the best weights alone"
		}
		return nil, fmt.Errorf("%s is %s, not a training-state file: it cannot be resumed (write one with 'graphmill train --state-file')", path, what)
	}
	var rec stateRecord
	var history []EpochStats
	if err := json.Unmarshal([]byte(js), &rec); err != nil {
		return nil, fmt.Errorf("%s: bad training-state record: %w", path, err)
	}
	if rec.Version != stateVersion {
		return nil, fmt.Errorf("%s: training-state version %d; this graphmill reads version %d", path, rec.Version, stateVersion)
	}
	if err := json.Unmarshal(rec.History, &history); err != nil {
		return nil, fmt.Errorf("%s: bad history in the training-state record: %w", path, err)
	}
	hash, err := strconv.ParseUint(rec.ConfigHash, 10, 64)
	if err != nil {
		return nil, fmt.Errorf("%s: bad config hash %q in the training state", path, rec.ConfigHash)
	}
	switch {
	case rec.Epoch < 0 || rec.Epoch > rec.Config.Epochs || rec.Progress.Epochs != rec.Epoch:
		return nil, fmt.Errorf("%s: the training state records %d epochs done (%d counted) of %d", path, rec.Epoch, rec.Progress.Epochs, rec.Config.Epochs)
	case len(history) != rec.Epoch:
		return nil, fmt.Errorf("%s: the training state records %d epochs of history for %d epochs done", path, len(history), rec.Epoch)
	case rec.BestEpoch < -1 || rec.BestEpoch >= rec.Epoch:
		return nil, fmt.Errorf("%s: the training state's best epoch %d is outside its %d epochs", path, rec.BestEpoch, rec.Epoch)
	case !rec.Done && rec.Epoch == rec.Config.Epochs:
		return nil, fmt.Errorf("%s: the training state has all %d epochs done but is not marked done", path, rec.Epoch)
	}
	kept = true
	return &State{Path: path, Epoch: rec.Epoch, Done: rec.Done, Written: rec.Written, Config: rec.Config, ConfigHash: hash,
		Dataset: rec.Dataset, History: history, BestEpoch: rec.BestEpoch, BestValAcc: float64(rec.BestValAcc), rec: rec, file: f}, nil
}

// Check refuses to continue the run with cfg on the dataset id: another
// configuration (a different Config.SharedHash: model, mode, epochs,
// optimiser, schedule, evaluation, fanouts, batch, feature handling, GAS
// parts, seed) or another dataset is an error naming what differs,
// except another number of epochs (no fewer than are done) under a
// constant learning rate: the run then continues to cfg.Epochs. Settings
// outside the hash (threads, workers, caches, prefetching,
// where the graph and features are read from, the memory bound) may
// change.
func (s *State) Check(cfg Config, id DatasetID) error {
	if s == nil {
		return errors.New("train: no training state")
	}
	// The dataset first: another one changes the model's sizes too, which
	// would be blamed on the settings.
	if d := s.Dataset.differences(id); d != "" {
		return fmt.Errorf("%s was written by a run on another dataset (%s): resume on dataset %s, or give another --state-file to start afresh", s.Path, d, s.Dataset.Name)
	}
	if h := cfg.SharedHash(); h != s.ConfigHash && !s.extends(cfg) {
		d := configDifferences(s.Config, cfg)
		if d == "" {
			d = "their hashes differ" // a setting the record does not show
		}
		if k := s.Config.Schedule.Kind; k == cfg.Schedule.Kind && k != "constant" && s.Config.Epochs != cfg.Epochs {
			d += fmt.Sprintf(" (a %s schedule follows --epochs: only a constant learning rate lets a resumed run change its epochs)", k)
		}
		return fmt.Errorf("%s was written by a run with other settings (%s): resume with the settings it was written with, or give another --state-file to start afresh", s.Path, d)
	}
	if cfg.Epochs < s.Epoch {
		return fmt.Errorf("%s has %d epochs done, more than the %d asked: give --epochs %d or more to resume it", s.Path, s.Epoch, cfg.Epochs, s.Epoch)
	}
	return nil
}

// extends says whether cfg differs from the state's settings in its
// number of epochs alone (a learning-rate schedule that gives the same
// rate every epoch counts as the same): the run then continues to
// cfg.Epochs, more or fewer than it was started with, as a run started
// with cfg.Epochs would, except for the evaluation the first run made at
// its last epoch.
func (s *State) extends(cfg Config) bool {
	c := s.Config
	if c.SharedHash() != s.ConfigHash {
		return false // a record this version reads otherwise
	}
	c.Epochs = cfg.Epochs
	if c.Schedule.Same(cfg.Schedule) {
		c.Schedule = cfg.Schedule
	}
	return c.SharedHash() == cfg.SharedHash()
}

// Ended says whether resuming the state with cfg trains nothing: the run
// it holds stopped early, or has done cfg.Epochs epochs.
func (s *State) Ended(cfg Config) bool {
	return s.Done && (s.rec.StoppedEarly || s.Epoch >= cfg.Epochs)
}

// sharedView is what Config.SharedHash hashes (Config.sharedFields),
// flattened into names for the differences Check reports.
func sharedView(c Config) map[string]any {
	v := c.sharedFields()
	out := map[string]any{}
	for k, x := range v {
		b, err := json.Marshal(x)
		if err != nil {
			out[k] = fmt.Sprint(x)
			continue
		}
		var y any
		_ = json.Unmarshal(b, &y) // just marshalled
		if m, ok := y.(map[string]any); ok {
			for k2, z := range m {
				out[k+"."+k2] = z
			}
			continue
		}
		out[k] = y
	}
	return out
}

// configDifferences lists the shared settings in which b differs from a.
func configDifferences(a, b Config) string {
	va, vb := sharedView(a), sharedView(b)
	keys := make([]string, 0, len(va)+len(vb))
	for k := range va {
		keys = append(keys, k)
	}
	for k := range vb {
		if _, ok := va[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var d []string
	for _, k := range keys {
		x, y := va[k], vb[k]
		if empty(x) && empty(y) || reflect.DeepEqual(x, y) {
			continue
		}
		d = append(d, fmt.Sprintf("%s %s there, %s here", k, show(x), show(y)))
	}
	return strings.Join(d, "; ")
}

// empty says whether a JSON value read back is absent, null or an empty
// list (a nil and an empty slice are the same setting).
func empty(x any) bool {
	if x == nil {
		return true
	}
	l, ok := x.([]any)
	return ok && len(l) == 0
}

func show(x any) string {
	if x == nil {
		return "none"
	}
	b, err := json.Marshal(x)
	if err != nil {
		return fmt.Sprint(x)
	}
	return string(b)
}

// writeStateFile writes tensors and metadata to path as a safetensors
// file (safetensors.Write: atomically, streaming the tensors made by
// Rows) and returns the file's size.
func writeStateFile(path string, ts []safetensors.Tensor, meta map[string]string) (int64, error) {
	if err := safetensors.Write(path, ts, meta); err != nil {
		return 0, fmt.Errorf("training state: %w", err)
	}
	st, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

// stateStepper is a Stepper with state of its own that its epochs depend
// on and that cannot be derived again (GAS's histories): Loop writes its
// tensors into the training-state file and gives it the state back when
// resuming.
type stateStepper interface {
	stateTensors() []safetensors.Tensor
	restoreState(st *State) error
}

// saveState is what Loop writes into a training-state file.
type saveState struct {
	l         *Loop
	sel       *Selection
	res       *Result
	best      *nn.Model
	acc       progress
	epoch     int
	done      bool
	stepState []safetensors.Tensor
	// history caches the JSON of res.History's records written so far
	// (records do not change once made): a write encodes the new ones.
	history *[]json.RawMessage
}

// historyJSON returns res.History as a JSON list, encoding the records
// not in the cache (NaN and infinities as null: jsonnull).
func (s *saveState) historyJSON() (json.RawMessage, error) {
	c := s.history
	for _, e := range s.res.History[len(*c):] {
		js, err := jsonnull.MarshalIndent(e, "", "")
		if err != nil {
			return nil, err
		}
		var b bytes.Buffer
		if err := json.Compact(&b, js); err != nil {
			return nil, err
		}
		*c = append(*c, b.Bytes())
	}
	out := []byte{'['}
	for i, e := range *c {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, e...)
	}
	return append(out, ']'), nil
}

// write writes the state to l.StateFile and returns the file's size.
func (s *saveState) write() (int64, error) {
	l := s.l
	so, ok := l.Optimizer.(nn.StatefulOptimizer)
	if !ok {
		return 0, fmt.Errorf("training state: the optimiser (%T) cannot give its state", l.Optimizer)
	}
	var ts []safetensors.Tensor
	add := func(prefix string, m *nn.Model) {
		for _, t := range m.Tensors() {
			ts = append(ts, safetensors.Tensor{Name: prefix + t.Name, Shape: t.Shape, Data: t.Data})
		}
	}
	add("model/", l.Model)
	if s.best != nil {
		add("best/", s.best)
	}
	rec := stateRecord{Version: stateVersion, Epoch: s.epoch, Done: s.done, Written: time.Now().UTC(),
		ConfigHash: strconv.FormatUint(l.Config.SharedHash(), 10), Config: l.Config, Dataset: l.Dataset,
		Progress: s.acc, Steps: map[string]int{}, Threads: tensor.Threads()}
	var err error
	if rec.History, err = s.historyJSON(); err != nil {
		return 0, fmt.Errorf("training state: %w", err)
	}
	sum := s.res.Summary
	rec.BestValAcc, rec.BestValLoss, rec.TestAcc, rec.BestEpoch = exactFloat(sum.BestValAcc), exactFloat(sum.BestValLoss), exactFloat(sum.TestAcc), sum.BestEpoch
	rec.StoppedEarly, rec.Batches, rec.MicroBatches = sum.StoppedEarly, sum.Batches, sum.MicroBatches
	rec.PeakHeapBytes, rec.PeakRSSBytes = sum.PeakHeapBytes, sum.PeakRSSBytes
	rec.Selection.Best, rec.Selection.BestLoss, rec.Selection.LowestLoss = exactFloat(s.sel.best), exactFloat(s.sel.bestLoss), exactFloat(s.sel.lowestLoss)
	rec.Selection.SinceBest = s.sel.sinceBest
	names, ps := l.Model.NamedParams()
	snames := so.StateNames()
	for i, p := range ps {
		arrays, step, ok := so.ParamState(p)
		if !ok {
			continue
		}
		rec.Steps[names[i]] = step
		for j, a := range arrays {
			ts = append(ts, safetensors.Tensor{Name: "optimizer/" + names[i] + "/" + snames[j], Shape: []int{len(a)}, Data: a})
		}
	}
	ts = append(ts, s.stepState...)
	js, err := json.Marshal(rec)
	if err != nil {
		return 0, fmt.Errorf("training state: %w", err)
	}
	return writeStateFile(l.StateFile, ts, map[string]string{StateKey: string(js)})
}

// restore puts the state st records into the loop's model, optimiser,
// selection, result and totals, and returns the best model so far (nil:
// none evaluated).
func (l *Loop) restore(st *State, sel *Selection, res *Result, acc *progress, clone func(*nn.Model) *nn.Model) (*nn.Model, error) {
	if err := st.Check(l.Config, l.Dataset); err != nil {
		return nil, err
	}
	f, rec := st.file, &st.rec
	// Allowed, but not exact: said, not refused (threads follow the
	// machine's cores by default; a smaller memory bound resumes after an
	// out-of-memory kill).
	if n := tensor.Threads(); rec.Threads != 0 && rec.Threads != n {
		slog.Warn("graphmill: resuming with another number of kernel threads: the run continues, but no longer bit for bit as it would have (sums split otherwise)",
			"written_with", rec.Threads, "now", n, "state", st.Path)
	}
	if a, b := rec.Config.MaxMemoryBytes, l.Config.MaxMemoryBytes; a != b {
		slog.Warn("graphmill: resuming under another memory bound: steps split into other micro-batches, with their own dropout draws, so the run no longer continues bit for bit",
			"written_with", a, "now", b, "state", st.Path)
	}
	used := map[string]bool{}
	load := func(prefix string, m *nn.Model) error {
		sub := &safetensors.File{Tensors: map[string]safetensors.Tensor{}}
		for name, t := range f.Tensors {
			if n, ok := strings.CutPrefix(name, prefix); ok {
				sub.Tensors[n] = t
				used[name] = true
			}
		}
		return m.LoadParams(sub, st.Path+" ("+strings.TrimSuffix(prefix, "/")+" weights)")
	}
	if err := load("model/", l.Model); err != nil {
		return nil, err
	}
	var best *nn.Model
	if rec.BestEpoch >= 0 {
		best = clone(l.Model)
		if err := load("best/", best); err != nil {
			return nil, err
		}
	}
	so, ok := l.Optimizer.(nn.StatefulOptimizer)
	if !ok {
		return nil, fmt.Errorf("training state: the optimiser (%T) cannot take its state back", l.Optimizer)
	}
	names, ps := l.Model.NamedParams()
	snames := so.StateNames()
	byName := map[string]bool{}
	for i, p := range ps {
		byName[names[i]] = true
		step, ok := rec.Steps[names[i]]
		if !ok {
			continue
		}
		arrays := make([][]float32, len(snames))
		for j, sn := range snames {
			key := "optimizer/" + names[i] + "/" + sn
			t, ok := f.Tensors[key]
			if !ok {
				return nil, fmt.Errorf("%s: the training state has no tensor %s", st.Path, key)
			}
			arrays[j] = t.Data
			used[key] = true
		}
		if err := so.SetParamState(p, arrays, step); err != nil {
			return nil, fmt.Errorf("%s: parameter %s: %w", st.Path, names[i], err)
		}
	}
	for name := range rec.Steps {
		if !byName[name] {
			return nil, fmt.Errorf("%s: the training state has optimiser state for %s, which the model does not have", st.Path, name)
		}
	}
	if ss, ok := l.Stepper.(stateStepper); ok {
		if err := ss.restoreState(st); err != nil {
			return nil, err
		}
		for _, t := range ss.stateTensors() {
			used[t.Name] = true
		}
	}
	for name := range f.Tensors {
		if !used[name] {
			return nil, fmt.Errorf("%s: the training state has tensor %s, which this run does not use", st.Path, name)
		}
	}
	sel.best, sel.bestLoss, sel.lowestLoss = float64(rec.Selection.Best), float64(rec.Selection.BestLoss), float64(rec.Selection.LowestLoss)
	sel.sinceBest = rec.Selection.SinceBest
	res.History = append(res.History[:0], st.History...)
	s := &res.Summary
	s.BestValAcc, s.BestValLoss, s.TestAcc, s.BestEpoch = float64(rec.BestValAcc), float64(rec.BestValLoss), float64(rec.TestAcc), rec.BestEpoch
	s.StoppedEarly, s.Batches, s.MicroBatches = rec.StoppedEarly, rec.Batches, rec.MicroBatches
	s.PeakHeapBytes, s.PeakRSSBytes = max(s.PeakHeapBytes, rec.PeakHeapBytes), max(s.PeakRSSBytes, rec.PeakRSSBytes)
	s.ResumedFrom = rec.Epoch
	*acc = rec.Progress
	// Copied into the model, the optimiser and the stepper: the file's
	// tensors are not held for the rest of the run. A State resumes one
	// run.
	f.Tensors = nil
	return best, st.Close()
}

// Close closes the training-state file ReadState kept open for GAS's
// history tables (read when the run is resumed, which closes it too).
func (s *State) Close() error {
	if s == nil || s.file == nil {
		return nil
	}
	return s.file.Close()
}

// gasParts returns the GAS partition the state records, checked against
// the graph's n nodes and the run's parts.
func (s *State) gasParts(n int) ([]int32, error) {
	t, ok := s.file.Tensors["gas/parts"]
	if !ok {
		return nil, fmt.Errorf("%s: the training state has no GAS partition (gas/parts)", s.Path)
	}
	if len(t.Data) != n {
		return nil, fmt.Errorf("%s: the training state's GAS partition covers %d nodes, the graph has %d", s.Path, len(t.Data), n)
	}
	parts := s.Config.Parts
	out := make([]int32, n)
	for i, v := range t.Data {
		if !(v >= 0 && v < float32(parts)) || v != float32(int32(v)) {
			return nil, fmt.Errorf("%s: the training state puts node %d in part %v, not one of [0, %d)", s.Path, i, v, parts)
		}
		out[i] = int32(v)
	}
	return out, nil
}

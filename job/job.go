// Package job is graphmill's library entry point: Train runs a training
// job described by a Spec, picking its route from the dataset and the ranks
// it is given, and opening the dataset and its features once:
//
//   - one process, or data-parallel ranks (Spec.Comm), on a dataset
//     directory or a built-in dataset: full-graph, sampled or GNNAutoScale
//     training (package train);
//   - sampled training from sampler services (Spec.Samplers);
//   - distributed sampling over a partitioned dataset, one rank a part;
//   - SAR's distributed full-graph steps over a partitioned dataset
//     (Config.Mode sar, sa or one-shot; package sar).
//
// cmd/graphmill turns its flags into a Spec and prints what Train returns.
// A Go program trains in a few lines (see the example).
package job

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/graphmill/graphmill/dataset"
	"github.com/graphmill/graphmill/dataset/builtin"
	"github.com/graphmill/graphmill/dataset/parts"
	"github.com/graphmill/graphmill/dist"
	"github.com/graphmill/graphmill/nn"
	"github.com/graphmill/graphmill/partition"
	"github.com/graphmill/graphmill/sar"
	"github.com/graphmill/graphmill/train"
)

// Spec describes a training job.
type Spec struct {
	// Dataset is a dataset directory, the name of a built-in dataset
	// ("cora"), or a partitioned dataset ('graphmill partition').
	Dataset string
	// Config is the training configuration (train.Defaults gives one).
	Config train.Config
	// Comm joins the ranks of a distributed job (nil: one process): on a
	// dataset they train data-parallel, on a partitioned dataset they
	// sample it together (sampled mode) or run SAR (modes sar, sa,
	// one-shot). Backend names its backend (distributed sampling needs
	// "tcp").
	Comm    dist.Comm
	Backend string
	// Samplers are the addresses of sampler services ('graphmill serve
	// sampler') to take the minibatches from, serving Dataset; with
	// ConnectTimeout (default 60 s) and Security.
	Samplers       []string
	ConnectTimeout time.Duration
	Security       *dist.Security
	// RemoteCacheBytes is distributed sampling's cache of other ranks'
	// feature rows (0: none).
	RemoteCacheBytes int64
	// MFG makes SAR's steps run on message-flow graphs of the training
	// nodes' neighbourhoods (sar.Engine.MFG).
	MFG bool
	// Hooks are called as the run goes (progress bars).
	Hooks train.Hooks
	// Log receives what the job says about itself before and after the
	// run (the route, the dataset, traffic); nil: nothing.
	Log io.Writer
	// ServiceLog receives sampler-service events (failovers); nil: stderr.
	ServiceLog func(string)
	// Setup, when set, is called once the run is configured, before the
	// first step, with the effective configuration and the Go memory
	// limit the run asks for (train.Runner.GoMemoryLimit; 0: none); the
	// function it returns is called when the run ends. Process-wide
	// settings (kernel threads, the runtime's memory limit) belong to the
	// program: the library never changes them itself.
	Setup func(cfg train.Config, goMemoryLimit int64) (restore func())
	// StateFile, when set, is where the run writes its training state
	// (train.WithState) after every StateEvery epochs (0: every epoch)
	// and after the last. Resume, when set, is a state file to continue
	// (train.ReadState, train.WithResume), which StateFile defaults to.
	// An existing StateFile other than Resume is refused: it holds
	// another run's progress. One process on a whole dataset only.
	StateFile  string
	StateEvery int
	Resume     string
}

// Result is what a job returns: the run's (train.Result), the effective
// configuration, and the dataset's name.
type Result struct {
	*train.Result
	Config  train.Config
	Dataset string
}

// Train runs the job. On an interruption (ctx cancelled) after at least one
// epoch it returns the result so far with an error wrapping
// train.ErrInterrupted; on a loss that is not finite after an evaluation,
// the result so far with an error wrapping train.ErrDiverged.
func Train(ctx context.Context, s Spec) (*Result, error) {
	if err := s.Check(); err != nil {
		return nil, err
	}
	var resume *train.State
	statePath := ""
	if s.usesState() {
		var err error
		if resume, statePath, err = s.openState(); err != nil {
			return nil, err
		}
		defer resume.Close()
	}
	if s.Comm != nil {
		if err := sameSettings(ctx, s.Comm, s.Config, s.MFG); err != nil {
			return nil, err
		}
		if IsPartitioned(s.Dataset) {
			book, err := parts.ReadBook(s.Dataset)
			if err != nil {
				return nil, err
			}
			if err := sameData(ctx, s.Comm, bookHash(book), "partitioned dataset"); err != nil {
				return nil, err
			}
		}
	}
	if mode, err := sar.ParseMode(string(s.Config.Mode)); err == nil {
		return trainSAR(ctx, s, mode)
	}
	cfg := s.Config
	if s.Comm != nil {
		cfg.Parallel = dist.Trainer{Comm: s.Comm}
		if cfg.Model.Kind == nn.GIN {
			logf(s.Log, "note: GIN's batch norm normalises with each rank's share of the batch, so %d ranks do not train as one process with %d times the batch\n", s.Comm.Size(), s.Comm.Size())
		}
	}
	opts := []train.Option{train.WithPartitioner(partition.Assign), train.WithContext(ctx)}
	if statePath != "" {
		opts = append(opts, train.WithState(statePath, s.StateEvery))
	}
	if resume != nil {
		opts = append(opts, train.WithResume(resume))
	}
	var ds *dataset.Dataset
	var td *trainData
	if IsPartitioned(s.Dataset) || len(s.Samplers) > 0 {
		var err error
		if td, err = openTrainData(ctx, s, &cfg); err != nil {
			return nil, err
		}
		ds, opts = td.ds, append(opts, td.opts...)
	} else {
		var err error
		if ds, err = OpenDataset(ctx, s.Dataset, "train"); err != nil {
			return nil, err
		}
		td = &trainData{ds: ds, close: func(bool) { ds.Close() }}
		if s.Comm != nil {
			// Data-parallel ranks each read the whole dataset.
			if err := sameData(ctx, s.Comm, ds.Fingerprint(), "dataset"); err != nil {
				ds.Close()
				return nil, err
			}
		}
	}
	ok := false
	defer func() { td.close(ok) }()
	r, err := train.NewRunner(ds, cfg, s.Hooks, opts...)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	cfg = r.Config()
	if s.Setup != nil {
		defer s.Setup(cfg, r.GoMemoryLimit())()
	}
	if td.cfgFix != nil {
		td.cfgFix(&cfg)
	}
	logf(s.Log, "training %s (%s mode) on %s: %d nodes, %d edges, %d features, %d classes; split %d/%d/%d\n",
		cfg.Model.Kind, cfg.Mode, ds.Meta.Name, ds.Meta.NumNodes, ds.Meta.NumEdges, ds.Meta.FeatureDim, ds.Meta.NumClasses,
		len(ds.Train), len(ds.Val), len(ds.Test))
	if resume != nil {
		if err := r.CheckResume(ctx); err != nil {
			return nil, err
		}
		logf(s.Log, "resuming %s: %d of %d epochs done (written %s)\n", resume.Path, resume.Epoch, resume.Config.Epochs, resume.Written.Local().Format("2006-01-02 15:04:05"))
		switch {
		case resume.Ended(cfg):
			logf(s.Log, "the run it holds has ended: nothing left to train\n")
		case cfg.Epochs != resume.Config.Epochs:
			logf(s.Log, "continuing to %d epochs\n", cfg.Epochs)
		}
	}
	res, err := r.Run(ctx)
	if res != nil {
		logState(s, statePath, res.Summary)
	}
	if err != nil && !(train.Stopped(err) && res != nil) {
		return nil, err
	}
	ok = err == nil
	if td.report != nil && s.Log != nil {
		td.report(s.Log)
	}
	return &Result{Result: res, Config: cfg, Dataset: ds.Meta.Name}, err
}

// Check refuses, before any work (Train calls it; a program that joins
// ranks first calls it before), a Spec whose route cannot run: SAR's modes
// on a dataset that is not partitioned or with data-parallel settings,
// message-flow-graph steps outside them, sampler services for a
// partitioned dataset, a remote-row cache outside distributed
// sampling, and training state (StateFile, Resume) on a partitioned
// dataset.
func (s Spec) Check() error {
	if err := s.checkState(); err != nil {
		return err
	}
	parted := IsPartitioned(s.Dataset)
	if mode, err := sar.ParseMode(string(s.Config.Mode)); err == nil {
		switch {
		case !parted:
			return fmt.Errorf("--mode %s trains over a partitioned dataset, and %s is not one: make one with 'graphmill partition --parts N %s --out DIR' (N a multiple of the number of ranks) and give --dataset DIR", mode, s.Dataset, s.Dataset)
		case s.Config.Parallel != nil:
			return fmt.Errorf("--mode %s: data-parallel settings given", mode)
		}
		return nil
	}
	switch {
	case s.MFG:
		return fmt.Errorf("--mfg is for the sar, sa and one-shot modes (full-graph training over a partitioned dataset)")
	case len(s.Samplers) > 0 && parted:
		return fmt.Errorf("--sampler: give the dataset the samplers serve (a whole dataset), not the partitioned %s", s.Dataset)
	case len(s.Samplers) > 0 && s.RemoteCacheBytes > 0:
		return fmt.Errorf("--remote-cache applies to distributed sampling over a partitioned dataset, not to --sampler")
	case !parted && s.RemoteCacheBytes > 0:
		return fmt.Errorf("--remote-cache applies to distributed sampling over a partitioned dataset (graphmill partition), not to %s", s.Dataset)
	}
	return nil
}

// logf writes to w when it is set.
func logf(w io.Writer, format string, a ...any) {
	if w != nil {
		fmt.Fprintf(w, format, a...)
	}
}

// IsPartitioned reports whether dir holds a partitioned dataset's book.
func IsPartitioned(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, parts.BookFile))
	return err == nil
}

// OpenDataset opens a native dataset or a built-in one for command what
// ("train", "eval", ...). A partitioned dataset is not one: the error says
// what it is and what to give instead.
func OpenDataset(ctx context.Context, nameOrDir, what string) (*dataset.Dataset, error) {
	if IsPartitioned(nameOrDir) {
		book, err := parts.ReadBook(nameOrDir)
		if err != nil {
			return nil, err
		}
		src := book.Source
		if src == "" {
			src = "the original dataset"
		}
		over := "" // what reads the parts themselves
		if what == "train" {
			over = "; or train over the parts: in modes sar, sa and one-shot (under a launcher, or alone), or sampled under a launcher with one rank per part"
		}
		return nil, fmt.Errorf("%s is a partitioned dataset (%d parts of %s, made by 'graphmill partition'), not the whole dataset that 'graphmill %s' reads here: give %s, or one part, which is a dataset of its nodes and halo (%s)%s",
			nameOrDir, book.NumParts, book.Name, what, src, filepath.Join(nameOrDir, book.Parts[0].Dir), over)
	}
	return builtin.Open(ctx, nameOrDir)
}

// sameSettings fails unless every rank trains with the same settings
// (train.Config.SharedHash, and SAR's message-flow graphs): ranks with
// another learning rate or seed drifted apart silently, ranks with
// another epoch count or batch failed later, blaming a rank that had only
// finished, and SAR ranks with and without --mfg waited for each other's
// collectives until --op-timeout.
func sameSettings(ctx context.Context, comm dist.Comm, cfg train.Config, mfg bool) error {
	h := cfg.SharedHash()
	if mfg {
		h = ^h
	}
	same, err := agree(ctx, comm, h)
	if err == nil && !same {
		err = fmt.Errorf("rank %d: the ranks train with different settings (model, epochs, learning rate, batch, fanouts, seed, --mfg, ...): give every rank the same training flags", comm.Rank())
	}
	return err
}

// sameData fails unless every rank reads the same data (h its
// fingerprint): ranks on datasets of the same sizes but other contents
// (a stale copy on one machine) trained on without a word.
func sameData(ctx context.Context, comm dist.Comm, h uint64, what string) error {
	same, err := agree(ctx, comm, h)
	if err == nil && !same {
		err = fmt.Errorf("rank %d: the ranks read different data: give every rank the same %s (the same files, or copies made by the same command)", comm.Rank(), what)
	}
	return err
}

// PeersReady fails on every rank when one of them failed its checks (err:
// this rank's) before its first collective, naming that rank: the others
// waited for it until a timeout, blaming a rank that "never arrived".
func PeersReady(ctx context.Context, comm dist.Comm, err error) error {
	failed := int64(-1)
	if err != nil {
		failed = int64(comm.Rank())
	}
	v := []int64{failed}
	if aerr := comm.AllReduce(ctx, v, dist.Max); aerr != nil {
		return errors.Join(err, aerr)
	}
	if err == nil && v[0] >= 0 {
		err = fmt.Errorf("rank %d failed its checks before training (its output says why); rank %d stops with it", v[0], comm.Rank())
	}
	return err
}

// agree reports whether every rank gave the same h (a collective).
func agree(ctx context.Context, comm dist.Comm, h uint64) (bool, error) {
	v := []int64{int64(h >> 1), -int64(h >> 1)} // 63 bits, so that -h fits
	if err := comm.AllReduce(ctx, v, dist.Max); err != nil {
		return false, err
	}
	return v[0] == -v[1], nil
}

// bookHash is a hash of a partition's book without where its dataset
// came from (Source: copies on other machines have other paths).
func bookHash(book *parts.Book) uint64 {
	c := *book
	c.Source = ""
	b, _ := json.Marshal(c) // a struct of plain fields
	return hashBytes(b)
}

// hashBytes is FNV-1a of b.
func hashBytes(b []byte) uint64 {
	h := fnv.New64a()
	h.Write(b)
	return h.Sum64()
}

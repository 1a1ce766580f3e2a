package train

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/graphmill/graphmill/dataset"
	"github.com/graphmill/graphmill/nn"
	"github.com/graphmill/graphmill/safetensors"
)

// runTo trains cfg on d, writing the training state to path every every
// epochs (path "": none), resuming from resume (nil: afresh), and
// cancelling the run after epoch stopAfter's record (-1: never), as a
// signal would.
func runTo(t *testing.T, d *dataset.Dataset, cfg Config, path string, every int, resume *State, stopAfter int) (*Result, error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hooks := Hooks{Epoch: func(s EpochStats) {
		if s.Epoch == stopAfter {
			cancel()
		}
	}}
	opts := []Option{withTestParts}
	if path != "" {
		opts = append(opts, WithState(path, every))
	}
	if resume != nil {
		opts = append(opts, WithResume(resume))
	}
	r, err := NewRunner(d, cfg, hooks, opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	return r.Run(ctx)
}

// sameBits reports whether a and b are the same float64, bit for bit.
func sameBits(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) }

// ptrBits is sameBits for the optional metrics (nil: not evaluated).
func ptrBits(a, b *float64) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return sameBits(*a, *b)
}

// sameTraining fails unless got's history, selection and weights are
// want's, bit for bit.
func sameTraining(t *testing.T, want, got *Result) {
	t.Helper()
	if len(got.History) != len(want.History) {
		t.Fatalf("%d epochs in the resumed history, %d uninterrupted", len(got.History), len(want.History))
	}
	for i, w := range want.History {
		g := got.History[i]
		if g.Epoch != w.Epoch || !sameBits(g.Loss, w.Loss) || !sameBits(g.TrainAcc, w.TrainAcc) || !sameBits(g.LR, w.LR) ||
			!ptrBits(g.ValAcc, w.ValAcc) || !ptrBits(g.TestAcc, w.TestAcc) || !ptrBits(g.ValLoss, w.ValLoss) || g.Batches != w.Batches {
			gv, _ := g.Accuracies()
			wv, _ := w.Accuracies()
			t.Fatalf("epoch %d: resumed loss %v train %v val %v, uninterrupted loss %v train %v val %v",
				w.Epoch, g.Loss, g.TrainAcc, gv, w.Loss, w.TrainAcc, wv)
		}
	}
	ws, gs := want.Summary, got.Summary
	if gs.BestEpoch != ws.BestEpoch || !sameBits(gs.BestValAcc, ws.BestValAcc) || !sameBits(gs.TestAcc, ws.TestAcc) ||
		gs.Epochs != ws.Epochs || gs.StoppedEarly != ws.StoppedEarly || gs.Batches != ws.Batches {
		t.Fatalf("resumed summary: best epoch %d val %v test %v, %d epochs (early %v), %d batches; uninterrupted: %d %v %v, %d (%v), %d",
			gs.BestEpoch, gs.BestValAcc, gs.TestAcc, gs.Epochs, gs.StoppedEarly, gs.Batches, ws.BestEpoch, ws.BestValAcc, ws.TestAcc, ws.Epochs, ws.StoppedEarly, ws.Batches)
	}
	wt, gt := want.Model.Tensors(), got.Model.Tensors()
	for i := range wt {
		for j := range wt[i].Data {
			if math.Float32bits(wt[i].Data[j]) != math.Float32bits(gt[i].Data[j]) {
				t.Fatalf("kept model's %s[%d]: resumed %v, uninterrupted %v", wt[i].Name, j, gt[i].Data[j], wt[i].Data[j])
			}
		}
	}
}

// TestResumeIsExact trains N epochs straight, and the same run stopped
// (as by a signal) after N/2 epochs and resumed from its training-state
// file to N: every epoch's loss and accuracies, the kept model and its
// scores must be the same bit for bit, in every mode, with Adam's and
// SGD's state, batch normalisation's statistics, overlapped evaluation,
// GAS's histories (float32 and float16), a state written every few epochs,
// and early stopping.
func TestResumeIsExact(t *testing.T) {
	d := cora(t)
	cases := []struct {
		name  string
		kind  nn.Kind
		mode  Mode
		every int
		set   func(*Config)
	}{
		{"full", nn.GCN, Full, 1, nil},
		{"full-eval-every-3-state-every-3", nn.GCN, Full, 3, func(c *Config) { c.EvalEvery = 3 }},
		{"full-no-eval", nn.GCN, Full, 1, func(c *Config) { c.SkipEval = true }},
		{"full-sgd-momentum", nn.GCN, Full, 1, func(c *Config) { c.Optimizer = nn.OptimConfig{Name: "sgd", LR: 0.2, Momentum: 0.9, WeightDecay: 5e-4} }},
		{"full-overlap-cosine", nn.GAT, Full, 1, func(c *Config) {
			c.OverlapEval = true
			c.Schedule = nn.Schedule{Kind: "cosine", Base: c.Optimizer.LR, Epochs: c.Epochs}
		}},
		{"sampled", nn.SAGE, Sampled, 1, nil},
		{"sampled-gin-every-2", nn.GIN, Sampled, 2, nil},
		{"gas", nn.GCN, GAS, 1, nil},
		{"gas-half-history", nn.SAGE, GAS, 1, func(c *Config) { c.HalfHistory = true }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := Defaults(c.kind)
			cfg.Mode, cfg.Epochs = c.mode, 8
			if c.mode == Sampled {
				cfg.BatchSize = 256
			}
			if c.set != nil {
				c.set(&cfg)
			}
			want, err := runTo(t, d, cfg, "", 0, nil, -1)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), "run.state")
			part, err := runTo(t, d, cfg, path, c.every, nil, 3)
			if !errors.Is(err, ErrInterrupted) {
				t.Fatalf("first half: %v, want an interruption", err)
			}
			st, err := ReadState(path)
			if err != nil {
				t.Fatal(err)
			}
			// Stopped after epoch 3's record: 4 epochs done, or the last
			// state written before (every few epochs; overlapped
			// evaluation reports an epoch late).
			if st.Done || st.Epoch < 2 || st.Epoch > 4 || len(st.History) != st.Epoch || part.Summary.StateWrites == 0 {
				t.Fatalf("state after the first half: %d epochs (done %v), %d records, %d writes", st.Epoch, st.Done, len(st.History), part.Summary.StateWrites)
			}
			if c.every == 3 && st.Epoch != 4 {
				// Epoch 3's state was written; the interruption, between
				// epochs, writes epoch 4's.
				t.Errorf("interrupted after 4 epochs, the state holds %d", st.Epoch)
			}
			got, err := runTo(t, d, cfg, path, c.every, st, -1)
			if err != nil {
				t.Fatal(err)
			}
			if got.Summary.ResumedFrom != st.Epoch {
				t.Errorf("resumed from %d, the state had %d", got.Summary.ResumedFrom, st.Epoch)
			}
			sameTraining(t, want, got)
			// The final state is marked done: resuming it again trains
			// nothing and returns the same result; given another state
			// file, it writes the state there too, which resumes the same.
			end, err := ReadState(path)
			if err != nil {
				t.Fatal(err)
			}
			if !end.Done || end.Epoch != cfg.Epochs {
				t.Fatalf("final state: %d epochs, done %v", end.Epoch, end.Done)
			}
			other := filepath.Join(t.TempDir(), "copy.state")
			again, err := runTo(t, d, cfg, other, 1, end, -1)
			if err != nil {
				t.Fatal(err)
			}
			sameTraining(t, want, again)
			cp, err := ReadState(other)
			if err != nil || !cp.Done || cp.Epoch != cfg.Epochs {
				t.Fatalf("the finished run's state written to another file: %+v, %v", cp, err)
			}
			if again, err = runTo(t, d, cfg, "", 0, cp, -1); err != nil {
				t.Fatal(err)
			}
			sameTraining(t, want, again)
		})
	}
}

// TestResumeLeavesHistoriesInTheFile: a GAS state stores float16 history
// tables as F16 (half the bytes), and ReadState leaves the tables in the
// file, so that reading a state allocates far less than the tables
// (restore reads them a chunk at a time).
func TestResumeLeavesHistoriesInTheFile(t *testing.T) {
	d := cora(t)
	for _, halfHist := range []bool{false, true} {
		cfg := Defaults(nn.SAGE)
		cfg.Mode, cfg.Epochs, cfg.HalfHistory, cfg.Model.Hidden, cfg.Model.Layers = GAS, 2, halfHist, 256, 3
		path := filepath.Join(t.TempDir(), "run.state")
		want, err := runTo(t, d, cfg, path, 1, nil, -1)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := safetensors.Open(path, func(string) bool { return true })
		if err != nil {
			t.Fatal(err)
		}
		tables := int64(0)
		for name, x := range raw.Tensors {
			if !strings.HasPrefix(name, "gas/history.") {
				continue
			}
			if wantDT := map[bool]string{false: "F32", true: "F16"}[halfHist]; x.DType != wantDT {
				t.Errorf("half %v: %s stored as %s, want %s", halfHist, name, x.DType, wantDT)
			}
			tables += int64(x.Shape[0]*x.Shape[1]) * 4
		}
		raw.Close()
		if tables < 2*2708*256*4 {
			t.Fatalf("%d bytes of history tables, want two of 2708 x 256", tables)
		}
		allocs := func(read func()) int64 {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			read()
			runtime.ReadMemStats(&after)
			return int64(after.TotalAlloc - before.TotalAlloc)
		}
		whole := allocs(func() {
			if _, err := safetensors.Read(path); err != nil {
				t.Fatal(err)
			}
		})
		var st *State
		lazy := allocs(func() {
			if st, err = ReadState(path); err != nil {
				t.Fatal(err)
			}
		})
		if whole-lazy < tables*9/10 {
			t.Errorf("half %v: reading the state allocated %d bytes, reading the whole file %d: the %d bytes of history tables were read too", halfHist, lazy, whole, tables)
		}
		// The finished run resumed: same result, tables read back whole.
		got, err := runTo(t, d, cfg, "", 0, st, -1)
		if err != nil {
			t.Fatal(err)
		}
		sameTraining(t, want, got)
	}
}

// TestResumeEarlyStopped: a run that stopped early (patience) resumes as
// done, and a run stopped before it stops early at the same epoch.
func TestResumeEarlyStopped(t *testing.T) {
	d := cora(t)
	cfg := Defaults(nn.GCN)
	cfg.Epochs, cfg.Patience, cfg.Optimizer.LR = 60, 3, 0.05
	want, err := runTo(t, d, cfg, "", 0, nil, -1)
	if err != nil {
		t.Fatal(err)
	}
	if !want.Summary.StoppedEarly || len(want.History) < 8 {
		t.Fatalf("the run did not stop early after a few epochs: %d epochs, early %v", len(want.History), want.Summary.StoppedEarly)
	}
	path := filepath.Join(t.TempDir(), "run.state")
	stop := len(want.History) - 3
	if _, err := runTo(t, d, cfg, path, 1, nil, stop); !errors.Is(err, ErrInterrupted) {
		t.Fatalf("first part: %v", err)
	}
	st, err := ReadState(path)
	if err != nil {
		t.Fatal(err)
	}
	got, err := runTo(t, d, cfg, path, 1, st, -1)
	if err != nil {
		t.Fatal(err)
	}
	sameTraining(t, want, got)
}

// TestResumeChangesEpochs: under a constant learning rate a state resumed
// with more epochs (a finished run) or fewer (no fewer than are done)
// continues as a run started with them, bit for bit; fewer epochs than
// are done, or another number under a schedule that follows them, is
// refused; a run that stopped early stays done.
func TestResumeChangesEpochs(t *testing.T) {
	d := cora(t)
	for _, mode := range []Mode{Full, Sampled} {
		t.Run(string(mode), func(t *testing.T) {
			cfg := Defaults(nn.SAGE)
			cfg.Mode, cfg.BatchSize = mode, 256
			at := func(epochs int) Config { c := cfg; c.Epochs = epochs; return c }
			want10, err := runTo(t, d, at(10), "", 0, nil, -1)
			if err != nil {
				t.Fatal(err)
			}
			want6, err := runTo(t, d, at(6), "", 0, nil, -1)
			if err != nil {
				t.Fatal(err)
			}
			// Longer: a finished 5-epoch run resumed to 10.
			path := filepath.Join(t.TempDir(), "run.state")
			if _, err := runTo(t, d, at(5), path, 1, nil, -1); err != nil {
				t.Fatal(err)
			}
			st, err := ReadState(path)
			if err != nil {
				t.Fatal(err)
			}
			if !st.Done || !st.Ended(at(5)) || st.Ended(at(10)) {
				t.Fatalf("finished 5-epoch state: done %v, ended at 5 %v, at 10 %v", st.Done, st.Ended(at(5)), st.Ended(at(10)))
			}
			got, err := runTo(t, d, at(10), path, 1, st, -1)
			if err != nil {
				t.Fatal(err)
			}
			sameTraining(t, want10, got)
			if end, err := ReadState(path); err != nil || !end.Done || end.Epoch != 10 || end.Config.Epochs != 10 {
				t.Fatalf("state after the longer run: %+v, %v", end, err)
			}
			// Shorter: a 10-epoch run stopped after 3 epochs, resumed to 6.
			path = filepath.Join(t.TempDir(), "run.state")
			if _, err := runTo(t, d, at(10), path, 1, nil, 2); !errors.Is(err, ErrInterrupted) {
				t.Fatalf("first part: %v", err)
			}
			if st, err = ReadState(path); err != nil {
				t.Fatal(err)
			}
			if got, err = runTo(t, d, at(6), path, 1, st, -1); err != nil {
				t.Fatal(err)
			}
			sameTraining(t, want6, got)
		})
	}
	t.Run("refused", func(t *testing.T) {
		cfg := Defaults(nn.GCN)
		cfg.Epochs = 4
		cfg.Schedule = nn.Schedule{Kind: "cosine", Base: cfg.Optimizer.LR, Epochs: 4}
		path := filepath.Join(t.TempDir(), "run.state")
		if _, err := runTo(t, d, cfg, path, 1, nil, -1); err != nil {
			t.Fatal(err)
		}
		st, err := ReadState(path)
		if err != nil {
			t.Fatal(err)
		}
		more := cfg
		more.Epochs, more.Schedule.Epochs = 8, 8
		if err := st.Check(more, st.Dataset); err == nil || !strings.Contains(err.Error(), "a cosine schedule follows --epochs") {
			t.Errorf("cosine schedule resumed with more epochs: %v", err)
		}
		// A constant schedule's unread fields do not count.
		flat := Defaults(nn.GCN)
		flat.Epochs, flat.Schedule.StepSize = 4, 1
		if err := (&State{Config: Defaults(nn.GCN), ConfigHash: Defaults(nn.GCN).SharedHash()}).Check(flat, DatasetID{}); err != nil {
			t.Errorf("constant schedule with another step size: %v", err)
		}
	})
	t.Run("early-stopped", func(t *testing.T) {
		cfg := Defaults(nn.GCN)
		cfg.Epochs, cfg.Patience, cfg.Optimizer.LR = 60, 3, 0.05
		path := filepath.Join(t.TempDir(), "run.state")
		want, err := runTo(t, d, cfg, path, 1, nil, -1)
		if err != nil || !want.Summary.StoppedEarly {
			t.Fatalf("the run did not stop early: %v", err)
		}
		st, err := ReadState(path)
		if err != nil {
			t.Fatal(err)
		}
		more := cfg
		more.Epochs = 100
		got, err := runTo(t, d, more, "", 0, st, -1)
		if err != nil {
			t.Fatal(err)
		}
		sameTraining(t, want, got)
	})
}

// TestResumeRefusesOtherRuns: a state is refused with an error naming
// what differs when resumed with other settings or on another dataset,
// and a model checkpoint, a damaged file or a tampered record is an
// error, not a panic.
func TestResumeRefusesOtherRuns(t *testing.T) {
	d := cora(t)
	cfg := Defaults(nn.GCN)
	cfg.Epochs = 3
	dir := t.TempDir()
	path := filepath.Join(dir, "run.state")
	res, err := runTo(t, d, cfg, path, 1, nil, -1)
	if err != nil {
		t.Fatal(err)
	}
	st, err := ReadState(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		set  func(*Config)
		want string
	}{
		{func(c *Config) { c.Model.Hidden = 32 }, "model.hidden 16 there, 32 here"},
		{func(c *Config) { c.Optimizer.LR = 0.02 }, "optimizer.lr 0.01 there, 0.02 here"},
		{func(c *Config) { c.Epochs = 2 }, "has 3 epochs done, more than the 2 asked"},
		{func(c *Config) { c.Epochs, c.EvalEvery = 10, 2 }, "eval_every 1 there, 2 here"},
		{func(c *Config) { c.Seed = 7 }, "seed 0 there, 7 here"},
		{func(c *Config) { c.Mode = Sampled }, "mode \"full\" there, \"sampled\" here"},
	} {
		other := cfg
		c.set(&other)
		r, err := NewRunner(d, other, Hooks{}, WithResume(st), withTestParts)
		if err != nil {
			t.Fatal(err)
		}
		_, err = r.Run(context.Background())
		r.Close()
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "other settings") && other.Epochs >= st.Epoch {
			t.Errorf("resumed with other settings: %v, want an error naming %q", err, c.want)
		}
	}
	// Settings outside the hash may change.
	other := cfg
	other.Threads, other.Prefetch = 1, 1
	if _, err := runTo(t, d, other, "", 0, st, -1); err != nil {
		t.Errorf("resumed with other threads: %v", err)
	}

	// Another dataset: Cora with one training node fewer, then with one
	// label changed (same sizes).
	fewer := *d
	fewer.Train = d.Train[1:]
	r, err := NewRunner(&fewer, cfg, Hooks{}, WithResume(st), withTestParts)
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Run(context.Background())
	r.Close()
	if err == nil || !strings.Contains(err.Error(), "another dataset") || !strings.Contains(err.Error(), "training nodes 140 there, 139 here") {
		t.Errorf("resumed on another split: %v", err)
	}
	relabelled := *d
	relabelled.Labels = append([]int32(nil), d.Labels...)
	relabelled.Labels[d.Train[0]] = (relabelled.Labels[d.Train[0]] + 1) % int32(d.Meta.NumClasses)
	r, err = NewRunner(&relabelled, cfg, Hooks{}, WithResume(st), withTestParts)
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Run(context.Background())
	r.Close()
	if err == nil || !strings.Contains(err.Error(), "other edges, labels, splits or features") {
		t.Errorf("resumed on other labels: %v", err)
	}

	// Files that are not training states.
	ck := filepath.Join(dir, "m.safetensors")
	if err := Save(ck, res, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadState(ck); err == nil || !strings.Contains(err.Error(), "model checkpoint") {
		t.Errorf("a checkpoint read as a state: %v", err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join(dir, "cut.state")
	os.WriteFile(cut, b[:len(b)/2], 0o644)
	if _, err := ReadState(cut); err == nil {
		t.Error("a truncated state read")
	}
	if _, err := ReadState(dir); err == nil {
		t.Error("a directory read as a state")
	}
	// A tampered record or tensor set: errors from ReadState or Run.
	f, err := safetensors.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	rec := f.Metadata[StateKey]
	for name, edit := range map[string]func(ts []safetensors.Tensor, meta map[string]string) []safetensors.Tensor{
		"bad json": func(ts []safetensors.Tensor, m map[string]string) []safetensors.Tensor {
			m[StateKey] = rec[:len(rec)/2]
			return ts
		},
		"epochs": func(ts []safetensors.Tensor, m map[string]string) []safetensors.Tensor {
			m[StateKey] = strings.Replace(rec, `"epoch":3`, `"epoch":9`, 1)
			return ts
		},
		"missing tensor": func(ts []safetensors.Tensor, m map[string]string) []safetensors.Tensor { return ts[1:] },
		"extra tensor": func(ts []safetensors.Tensor, m map[string]string) []safetensors.Tensor {
			return append(ts, safetensors.Tensor{Name: "optimizer/nothing/exp_avg", Shape: []int{1}, Data: []float32{0}})
		},
		"bad shape": func(ts []safetensors.Tensor, m map[string]string) []safetensors.Tensor {
			for i := range ts {
				if strings.HasPrefix(ts[i].Name, "optimizer/") {
					ts[i].Data, ts[i].Shape = ts[i].Data[1:], []int{len(ts[i].Data) - 1}
					break
				}
			}
			return ts
		},
	} {
		var ts []safetensors.Tensor
		for _, n := range f.Order {
			ts = append(ts, f.Tensors[n])
		}
		meta := map[string]string{}
		for k, v := range f.Metadata {
			meta[k] = v
		}
		ts = edit(ts, meta)
		p := filepath.Join(dir, "tampered.state")
		if err := safetensors.Write(p, ts, meta); err != nil {
			t.Fatal(err)
		}
		st, err := ReadState(p)
		if err == nil {
			r, nerr := NewRunner(d, cfg, Hooks{}, WithResume(st), withTestParts)
			if nerr != nil {
				t.Fatal(nerr)
			}
			_, err = r.Run(context.Background())
			r.Close()
		}
		if err == nil {
			t.Errorf("%s: resumed without an error", name)
		}
	}
}

// TestStateWriteFailureKeepsTheRun: a state write that fails (its folder
// gone: a full disk is the usual cause) stops the run with ErrStateWrite
// and the result so far, which Stopped recognises, so that the trained
// model is still saved (the run and its model were lost).
func TestStateWriteFailureKeepsTheRun(t *testing.T) {
	d := cora(t)
	cfg := Defaults(nn.GCN)
	cfg.Epochs = 6
	dir := filepath.Join(t.TempDir(), "states")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	hooks := Hooks{Epoch: func(s EpochStats) {
		if s.Epoch == 2 {
			os.RemoveAll(dir)
		}
	}}
	r, err := NewRunner(d, cfg, hooks, WithState(filepath.Join(dir, "run.state"), 1))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	res, err := r.Run(context.Background())
	if !errors.Is(err, ErrStateWrite) || !Stopped(err) {
		t.Fatalf("error %v, want ErrStateWrite", err)
	}
	if res == nil || res.Model == nil || res.Summary.Epochs != 3 {
		t.Fatalf("result %+v: want the model after 3 epochs", res)
	}
}

// TestPeekState: the header alone says what a state file holds, as
// ReadState does, without reading its tensors.
func TestPeekState(t *testing.T) {
	d := cora(t)
	cfg := Defaults(nn.GCN)
	cfg.Epochs = 4
	path := filepath.Join(t.TempDir(), "run.state")
	if _, err := runTo(t, d, cfg, path, 1, nil, 1); !errors.Is(err, ErrInterrupted) {
		t.Fatal(err)
	}
	full, err := ReadState(path)
	if err != nil {
		t.Fatal(err)
	}
	peek, err := PeekState(path)
	if err != nil {
		t.Fatal(err)
	}
	if peek.Epoch != 2 || peek.Epoch != full.Epoch || peek.ConfigHash != full.ConfigHash || len(peek.History) != 2 || peek.file.Tensors != nil || len(full.file.Tensors) == 0 {
		t.Fatalf("peek: epoch %d hash %d, %d tensors; read: epoch %d hash %d", peek.Epoch, peek.ConfigHash, len(peek.file.Tensors), full.Epoch, full.ConfigHash)
	}
	if _, err := PeekState(filepath.Join(t.TempDir(), "none")); err == nil {
		t.Fatal("a missing file peeked")
	}
	// Given where a checkpoint goes (eval, predict --load), it says what
	// it is.
	if _, err := ReadCheckpoint(path); err == nil || !strings.Contains(err.Error(), "is a training-state file") {
		t.Fatalf("a state file loaded as a checkpoint: %v", err)
	}
}

// TestInterruptedEvaluationKeepsTheEpochs: a signal during an evaluation
// (where sampled runs spend most of their time) left the history an
// epoch or two short of the epochs the summary counted.
func TestInterruptedEvaluationKeepsTheEpochs(t *testing.T) {
	d := cora(t)
	// betweenEpochs cancels as epoch 1's record is made, before epoch 2's
	// evaluation starts: with overlap, the loop then finds the signal at
	// the top of epoch 3 with that evaluation pending (a timing the race
	// detector's slowness once gave: epoch 2 was left out).
	for _, c := range []struct{ overlap, betweenEpochs bool }{{false, false}, {true, false}, {true, true}} {
		overlap := c.overlap
		cfg := Defaults(nn.GCN)
		cfg.Epochs, cfg.EvalEvery, cfg.OverlapEval = 10, 1, overlap
		ctx, cancel := context.WithCancel(context.Background())
		var mu sync.Mutex
		calls := 0
		hooks := Hooks{Epoch: func(s EpochStats) {
			if c.betweenEpochs && s.Epoch == 1 {
				cancel()
			}
		}}
		r, err := NewRunner(d, cfg, hooks, WithEvaluator(func(ctx context.Context, m *nn.Model) (Evaluation, error) {
			mu.Lock()
			calls++
			n := calls
			mu.Unlock()
			if n == 3 || ctx.Err() != nil {
				cancel()
				return Evaluation{}, context.Canceled
			}
			return Evaluation{ValAcc: 0.5, TestAcc: 0.5}, nil
		}))
		if err != nil {
			t.Fatal(err)
		}
		res, err := r.Run(ctx)
		r.Close()
		cancel()
		if !errors.Is(err, ErrInterrupted) || res == nil {
			t.Fatalf("overlap %v: %v", overlap, err)
		}
		if len(res.History) != res.Summary.Epochs || res.History[len(res.History)-1].ValAcc != nil {
			t.Errorf("overlap %v: %d epochs in the history, %d in the summary; the last scored: %v",
				overlap, len(res.History), res.Summary.Epochs, res.History[len(res.History)-1].ValAcc != nil)
		}
	}
}

// FuzzStateRecord reads training-state files whose JSON record is
// damaged or tampered with, and resumes those ReadState accepts: an
// error, never a panic.
func FuzzStateRecord(f *testing.F) {
	d := cora(f)
	cfg := Defaults(nn.GCN)
	cfg.Epochs = 2
	path := filepath.Join(f.TempDir(), "run.state")
	r, err := NewRunner(d, cfg, Hooks{}, WithState(path, 1))
	if err != nil {
		f.Fatal(err)
	}
	_, err = r.Run(context.Background())
	r.Close()
	if err != nil {
		f.Fatal(err)
	}
	good, err := safetensors.Read(path)
	if err != nil {
		f.Fatal(err)
	}
	rec := good.Metadata[StateKey]
	f.Add([]byte(rec))
	for _, edit := range [][2]string{
		{`"epoch":2`, `"epoch":1`}, {`"done":true`, `"done":false`}, {`"best_epoch":`, `"best_epoch":-7,"x":`},
		{`"optimizer_steps":{`, `"optimizer_steps":{"nope":3,`}, {`"since_best":0`, `"since_best":-5`},
		{`"history":[`, `"history":[{"epoch":-3},`}, {`"epochs":2`, `"epochs":0`}, {`"version":`, `"version":9`},
	} {
		f.Add([]byte(strings.Replace(rec, edit[0], edit[1], 1)))
	}
	var tensors []safetensors.Tensor
	for _, name := range good.Order {
		tensors = append(tensors, good.Tensors[name])
	}
	f.Fuzz(func(t *testing.T, rec []byte) {
		p := filepath.Join(t.TempDir(), "run.state")
		meta := map[string]string{}
		for k, v := range good.Metadata {
			meta[k] = v
		}
		meta[StateKey] = string(rec)
		if err := safetensors.Write(p, tensors, meta); err != nil {
			return // not valid UTF-8 JSON for the header
		}
		st, err := ReadState(p)
		if err != nil {
			return
		}
		defer st.Close()
		more := cfg
		more.Epochs = 3
		r, err := NewRunner(d, more, Hooks{}, WithResume(st))
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		r.Run(context.Background())
	})
}

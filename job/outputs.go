package job

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/graphmill/graphmill/internal/atomicfile"
	"github.com/graphmill/graphmill/internal/curves"
	"github.com/graphmill/graphmill/internal/jsonnull"
	"github.com/graphmill/graphmill/internal/memstat"
	"github.com/graphmill/graphmill/nn"
	"github.com/graphmill/graphmill/safetensors"
	"github.com/graphmill/graphmill/train"
)

// Outputs are the files a training job's results go to (empty: not
// written): the model's checkpoint (Save, safetensors), the history and
// summary as JSON (Metrics) and the training curves (Plot, PNG or SVG by
// its extension).
type Outputs struct {
	Save, Metrics, Plot string
	// State is the training-state file (Spec.StateFile, or Spec.Resume
	// when it is not given), which Check only keeps from naming another
	// output's file or a file of another kind; Train writes it.
	// StateFlag names the flag it came from in messages ("--state-file"
	// when empty).
	State, StateFlag string
}

// output is one of Outputs with its flag's name, what it is and how to
// tell an existing file of its kind by its first bytes.
type output struct {
	flag, path, what string
	is               func(head []byte) bool
}

func (o Outputs) list() []output {
	return []output{
		{"--save", o.Save, "a safetensors checkpoint", safetensors.LooksLike},
		{"--metrics-out", o.Metrics, "a JSON file", isJSON},
		{"--plot", o.Plot, "a plot", isPlot},
		{cmp.Or(o.StateFlag, "--state-file"), o.State, "a training-state file", safetensors.LooksLike},
	}
}

func isJSON(h []byte) bool {
	h = bytes.TrimLeft(h, " \t\r\n")
	return len(h) == 0 || h[0] == '{'
}

func isPlot(h []byte) bool {
	return bytes.HasPrefix(h, []byte("\x89PNG")) || bytes.HasPrefix(h, []byte("<?xml")) || bytes.HasPrefix(h, []byte("<svg")) ||
		bytes.HasPrefix(h, []byte("%PDF"))
}

// Check refuses, before any work, outputs that could not be written or
// would destroy something: a plot format not known, a path whose folder
// takes no new files, one file given for two outputs, an existing file
// that is not of its output's kind (a dataset's features.npy given to
// --save).
func (o Outputs) Check() error {
	seen := map[string]string{}
	for _, x := range o.list() {
		if x.path == "" {
			continue
		}
		if x.flag == "--plot" {
			if _, err := curves.Format(x.path); err != nil {
				return fmt.Errorf("--plot: %w", err)
			}
		}
		abs, err := canonical(x.path)
		if err != nil {
			return fmt.Errorf("%s %s: %w", x.flag, x.path, err)
		}
		if prev, ok := seen[abs]; ok {
			return fmt.Errorf("%s and %s name the same file (%s): one would overwrite the other", prev, x.flag, x.path)
		}
		seen[abs] = x.flag
		if err := atomicfile.CheckWritable(x.path); err != nil {
			return fmt.Errorf("%s %s: %w", x.flag, x.path, err)
		}
		if err := atomicfile.CheckReplaceable(x.path, x.what, x.is); err != nil {
			return fmt.Errorf("%s: %w", x.flag, err)
		}
	}
	return nil
}

// canonical is path made absolute, its links resolved where it exists:
// one string per file, to tell two names of the same file.
func canonical(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	if p, err := filepath.EvalSymlinks(abs); err == nil {
		abs = p
	}
	return abs, nil
}

// Write writes res's outputs, the model first (it is what a failed write
// would lose), and says on out where each went. A failed output does not
// keep the others from being written: the errors are joined.
func (o Outputs) Write(out io.Writer, res *Result) error {
	var errs []error
	if o.Save != "" {
		errs = append(errs, saveModel(out, res.Model, o.Save, checkpointMeta(res)))
	}
	if o.Metrics != "" {
		if err := writeMetrics(o.Metrics, res); err != nil {
			errs = append(errs, fmt.Errorf("--metrics-out: %w", err))
		} else {
			fmt.Fprintf(out, "metrics written to %s\n", o.Metrics)
		}
	}
	if o.Plot != "" {
		pts := make([]curves.Point, len(res.History))
		for i, h := range res.History {
			val, test := h.Accuracies()
			pts[i] = curves.Point{Epoch: h.Epoch, Loss: h.Loss, TrainAcc: h.TrainAcc, ValAcc: val, TestAcc: test}
		}
		title := fmt.Sprintf("%s on %s (%s): test acc %.2f%%", res.Config.Model.Kind, res.Dataset, res.Config.Mode, 100*res.Summary.TestAcc)
		if err := curves.Write(o.Plot, title, pts); err != nil {
			errs = append(errs, fmt.Errorf("--plot: %w", err))
		} else {
			fmt.Fprintf(out, "curves drawn to %s\n", o.Plot)
		}
	}
	return errors.Join(errs...)
}

// checkpointMeta is what a checkpoint records beside the weights
// (train.CheckpointMeta), with the job's config (SAR's results carry none
// of their own) and the dataset as the job named it.
func checkpointMeta(res *Result) map[string]string {
	r := *res.Result
	r.Config = res.Config
	meta := train.CheckpointMeta(&r)
	meta[train.MetaDataset] = res.Dataset
	return meta
}

// saveModel saves m to path; if that fails (a full disk, a folder removed
// meanwhile) it saves it to a fallback location and says where, so that
// the training is not lost, and still returns the error.
func saveModel(out io.Writer, m *nn.Model, path string, meta map[string]string) error {
	err := m.Save(path, meta)
	if err == nil {
		fmt.Fprintf(out, "model saved to %s (%d parameters)\n", path, m.NumParams())
		return nil
	}
	base := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	name := fmt.Sprintf("%s.rescued-%d.safetensors", base, os.Getpid())
	var dirs []string
	if wd, werr := os.Getwd(); werr == nil {
		dirs = append(dirs, wd)
	}
	dirs = append(dirs, os.TempDir())
	if home, herr := os.UserHomeDir(); herr == nil {
		dirs = append(dirs, home)
	}
	for _, d := range dirs {
		p := filepath.Join(d, name)
		if filepath.Clean(p) == filepath.Clean(path) {
			continue
		}
		if m.Save(p, meta) == nil {
			return fmt.Errorf("saving the model to %s: %w; it was saved to %s instead", path, err, p)
		}
	}
	return fmt.Errorf("saving the model to %s: %w (and to %s in %s: the model is lost)", path, err, name, strings.Join(dirs, ", "))
}

func writeMetrics(path string, res *Result) error {
	b, err := jsonnull.MarshalIndent(struct {
		Config  train.Config       `json:"config"`
		Summary train.Summary      `json:"summary"`
		History []train.EpochStats `json:"history"`
		// Top-level copies of the headline numbers.
		TestAcc      float64 `json:"test_acc"`
		BestValAcc   float64 `json:"best_val_acc"`
		EpochSeconds float64 `json:"epoch_seconds"`
		// ProcessPeakRSS is the whole process's VmHWM.
		ProcessPeakRSS int64 `json:"process_peak_rss_bytes"`
	}{res.Config, res.Summary, res.History, res.Summary.TestAcc, res.Summary.BestValAcc, res.Summary.EpochSeconds, memstat.ProcessPeak()}, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteBytes(path, append(b, '\n'))
}

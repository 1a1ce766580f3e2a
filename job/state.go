package job

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/graphmill/graphmill/internal/atomicfile"
	"github.com/graphmill/graphmill/internal/units"
	"github.com/graphmill/graphmill/train"
)

// usesState says whether the job writes or resumes a training state.
func (s Spec) usesState() bool { return s.StateFile != "" || s.Resume != "" }

// checkState refuses the training-state settings that cannot run (Check
// calls it): on a partitioned dataset (distributed sampling, SAR), with a
// negative StateEvery.
func (s Spec) checkState() error {
	switch {
	case !s.usesState():
		if s.StateEvery != 0 {
			return errors.New("--state-every applies with --state-file or --resume")
		}
		return nil
	case s.StateEvery < 0:
		return fmt.Errorf("--state-every %d: want a number of epochs >= 1", s.StateEvery)
	case IsPartitioned(s.Dataset):
		return fmt.Errorf("--state-file and --resume are for one process on a whole dataset; training over the partitioned %s (distributed sampling, SAR) cannot save or resume its state", s.Dataset)
	}
	return nil
}

// samePath reports whether a and b name the same file.
func samePath(a, b string) bool {
	ca, erra := canonical(a)
	cb, errb := canonical(b)
	return erra == nil && errb == nil && ca == cb
}

// openState reads the state to resume (Resume), and checks the state file
// the run will write (StateFile, by default Resume): an existing file
// there is refused unless it is the one resumed, since it holds the
// progress of another run. It returns the state (nil: start afresh) and
// the path to write.
func (s Spec) openState() (*train.State, string, error) {
	if s.Comm != nil {
		return nil, "", errors.New("--state-file and --resume are for one process: under a launcher (data-parallel, distributed sampling, SAR) a run cannot save or resume its training state")
	}
	path := s.StateFile
	if path == "" {
		path = s.Resume
	}
	// Temporaries a killed writer left beside the state (tens of MiB for
	// GAS), whether or not this run writes there.
	for _, p := range []string{s.StateFile, s.Resume} {
		if p != "" {
			atomicfile.RemoveStale(p)
		}
	}
	var st *train.State
	if s.Resume != "" {
		var err error
		if st, err = train.ReadState(s.Resume); err != nil {
			return nil, "", fmt.Errorf("--resume: %w", err)
		}
	}
	refuse := func(err error) (*train.State, string, error) {
		st.Close()
		return nil, "", err
	}
	if s.Resume == "" || !samePath(path, s.Resume) {
		if _, err := os.Stat(path); err == nil {
			what := "is not a training-state file: not replacing it (remove it, or give another --state-file)"
			if old, rerr := train.PeekState(path); rerr == nil {
				what = fmt.Sprintf("holds the state of another run (%s on %s, %d of %d epochs done): give --resume %s to continue it, or remove it (or give another --state-file) to start afresh",
					old.Config.Model.Kind, old.Dataset.Name, old.Epoch, old.Config.Epochs, path)
			}
			return refuse(fmt.Errorf("--state-file %s %s", path, what))
		} else if !errors.Is(err, fs.ErrNotExist) {
			return refuse(fmt.Errorf("--state-file: %w", err))
		}
	}
	if err := atomicfile.CheckWritable(path); err != nil {
		return refuse(fmt.Errorf("--state-file %s: %w", path, err))
	}
	return st, path, nil
}

// logState says where the run's state went, and what each write cost.
func logState(s Spec, path string, sum train.Summary) {
	if sum.StateWrites == 0 {
		return
	}
	logf(s.Log, "training state: written %d times to %s (%s, %s a write)\n", sum.StateWrites, path,
		units.Bytes(sum.StateBytes), units.Duration(time.Duration(sum.StateSeconds/float64(sum.StateWrites)*float64(time.Second))))
}

package dataset

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/graphmill/graphmill/internal/atomicfile"
	"github.com/graphmill/graphmill/npy"
)

// Writer builds a dataset directory atomically. Arrays are streamed into a
// temporary directory next to the destination; Commit writes meta.json,
// fsyncs everything and renames the directory into place. Abort (or a
// crash) leaves the destination as it was.
type Writer struct {
	dir, tmp  string
	overwrite bool
	arrays    map[string]ArrayMeta
	done      bool
}

// NewWriter starts writing a dataset that will appear at dir on Commit. If
// dir exists, NewWriter fails unless overwrite is set, in which case Commit
// replaces it.
func NewWriter(dir string, overwrite bool) (*Writer, error) {
	dir = filepath.Clean(dir)
	if _, err := os.Stat(dir); err == nil && !overwrite {
		return nil, fmt.Errorf("%s already exists (use --overwrite to replace it)", dir)
	}
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(dir)+".tmp-")
	if err != nil {
		return nil, err
	}
	return &Writer{dir: dir, tmp: tmp, overwrite: overwrite, arrays: map[string]ArrayMeta{}}, nil
}

// Create starts streaming the array called name (e.g. ArrayFeatures).
func (w *Writer) Create(name string, dtype npy.DType, shape ...int) (*npy.Writer, error) {
	if _, dup := w.arrays[name]; dup {
		return nil, fmt.Errorf("array %s written twice", name)
	}
	file := name + ".npy"
	aw, err := npy.Create(filepath.Join(w.tmp, file), dtype, shape)
	if err != nil {
		return nil, err
	}
	w.arrays[name] = ArrayMeta{File: file, DType: dtype, Shape: slices.Clone(shape)}
	return aw, nil
}

// Put writes a whole array in one call.
func Put[T npy.Elem](w *Writer, name string, data []T, shape ...int) error {
	if shape == nil {
		shape = []int{len(data)}
	}
	aw, err := w.Create(name, npy.DTypeOf[T](), shape...)
	if err != nil {
		return err
	}
	if _, err := aw.Write(npy.AsBytes(data)); err != nil {
		aw.Abort()
		return fmt.Errorf("writing %s: %w", name, err)
	}
	if err := aw.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", name, err)
	}
	return nil
}

// Commit writes meta.json (its Arrays field is filled in from what was
// written), checks that the arrays are consistent with it, fsyncs and
// renames the dataset into place.
func (w *Writer) Commit(m Meta) error {
	if w.done {
		return fmt.Errorf("dataset writer for %s already finished", w.dir)
	}
	m.Format, m.FormatVersion = FormatName, FormatVersion
	m.Graph.Layout = "csc"
	m.Arrays = w.arrays
	if err := checkShapes(w.tmp, m); err != nil {
		w.Abort()
		return fmt.Errorf("refusing to commit an inconsistent dataset: %w", err)
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		w.Abort()
		return err
	}
	if err := atomicfile.WriteSynced(filepath.Join(w.tmp, "meta.json"), append(b, '\n')); err != nil {
		w.Abort()
		return err
	}
	if err := atomicfile.SyncDir(w.tmp); err != nil {
		w.Abort()
		return err
	}
	w.done = true
	if err := atomicfile.ReplaceDir(w.tmp, w.dir, w.overwrite); err != nil {
		os.RemoveAll(w.tmp)
		return err
	}
	return nil
}

// Abort discards everything written so far.
func (w *Writer) Abort() {
	if !w.done {
		w.done = true
		os.RemoveAll(w.tmp)
	}
}

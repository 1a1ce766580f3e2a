package feature

import (
	"context"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"unsafe"

	"github.com/graphmill/graphmill/dataset"
	"github.com/graphmill/graphmill/internal/half"
	"github.com/graphmill/graphmill/internal/hugemem"
	"github.com/graphmill/graphmill/npy"
)

// ConvertDataset writes a copy of dataset d to dir with its features
// stored as dtype (float16 halves the bytes, with numpy's float16 rounding;
// bfloat16 keeps float32's range with 8 significant bits). The other
// arrays are copied unchanged. The copy is written atomically (see
// dataset.Writer); an existing dir is replaced only if overwrite is set.
func ConvertDataset(ctx context.Context, d *dataset.Dataset, dir string, dtype DType, overwrite bool) error {
	src, err := Open(d, Options{})
	if err != nil {
		return err
	}
	w, err := dataset.NewWriter(dir, overwrite)
	if err != nil {
		return err
	}
	ok := false
	defer func() {
		if !ok {
			w.Abort()
		}
	}()
	for _, name := range slices.Sorted(maps.Keys(d.Meta.Arrays)) {
		if err := ctx.Err(); err != nil {
			return err
		}
		am := d.Meta.Arrays[name]
		if name == dataset.ArrayFeatures {
			if err := writeFeatures(ctx, w, src, dtype); err != nil {
				return err
			}
			continue
		}
		a, err := npy.Open(filepath.Join(d.Dir, am.File))
		if err != nil {
			return err
		}
		aw, err := w.Create(name, am.DType, am.Shape...)
		if err == nil {
			_, err = aw.Write(a.Data)
			if err == nil {
				err = aw.Close()
			} else {
				aw.Abort()
			}
		}
		a.Close()
		if err != nil {
			return fmt.Errorf("copying %s: %w", name, err)
		}
	}
	m := d.Meta
	m.FeatureDType = dtype.String()
	if err := w.Commit(m); err != nil {
		return err
	}
	ok = true
	return nil
}

// writeFeatures streams src's rows as dtype in chunks.
func writeFeatures(ctx context.Context, w *dataset.Writer, src *Store, dtype DType) error {
	nd := npy.Float32
	switch dtype {
	case Float16:
		nd = npy.Float16
	case BFloat16:
		nd = npy.Uint16
	}
	aw, err := w.Create(dataset.ArrayFeatures, nd, src.n, src.dim)
	if err != nil {
		return err
	}
	if err := encodeRows(ctx, aw, src, dtype); err != nil {
		aw.Abort()
		return fmt.Errorf("writing features: %w", err)
	}
	return aw.Close()
}

func encodeRows(ctx context.Context, out io.Writer, src *Store, dtype DType) error {
	const rows = 4096
	f := make([]float32, rows*src.dim)
	h := make([]uint16, rows*src.dim)
	ids := make([]int32, rows)
	for lo := 0; lo < src.n; lo += rows {
		if err := ctx.Err(); err != nil {
			return err
		}
		k := min(rows, src.n-lo)
		for i := range ids[:k] {
			ids[i] = int32(lo + i)
		}
		x := f[:k*src.dim]
		if err := src.Gather(ctx, ids[:k], x); err != nil {
			return err
		}
		var b []byte
		switch dtype {
		case Float32:
			b = unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(x))), len(x)*4)
		case Float16, BFloat16:
			bf := dtype == BFloat16
			if bf {
				EncodeBF16(h[:len(x)], x)
			} else {
				EncodeF16(h[:len(x)], x)
			}
			// A finite value out of the type's range would be stored as
			// infinity, which training turns into NaN losses.
			if i := half.Overflow(h[:len(x)], x, bf); i >= 0 {
				hint := "float16's largest value is 65504: keep float32, or use bfloat16 (float32's range)"
				if bf {
					hint = "keep float32"
				}
				return fmt.Errorf("node %d, column %d: %g is beyond %s's range (%s)", lo+i/src.dim, i%src.dim, x[i], dtype, hint)
			}
			b = unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(h))), len(x)*2)
		}
		if _, err := out.Write(b); err != nil {
			return err
		}
		if src.mapped {
			// The rows read leave the resident set as they are
			// converted: otherwise the file's pages count on top of
			// the copy (23.2 GiB peak for 15.4 GB of float16 converted
			// from 30.7 GB of float32 on a 23 GiB machine).
			dropMapped(src.data[lo*src.rowB : (lo+k)*src.rowB])
		}
	}
	return nil
}

// Convert returns an in-memory store holding src's rows (as Gather returns
// them: scaled after NormalizeRows) stored as dtype, e.g. a float16 copy of
// float32 features in half the memory, with opts' cache and workers
// (opts.InMemory is implied).
func Convert(ctx context.Context, src *Store, dtype DType, opts Options) (*Store, error) {
	if dtype != Float32 && dtype != Float16 && dtype != BFloat16 {
		return nil, fmt.Errorf("feature: unknown dtype %v", dtype)
	}
	n := src.n * src.dim * dtype.Size()
	buf, free := hugemem.Alloc[byte](n)
	w := &sliceWriter{b: buf[:0]}
	if err := encodeRows(ctx, w, src, dtype); err != nil {
		free()
		return nil, err
	}
	opts.InMemory = false // buf is the in-memory copy
	s, err := New(buf, dtype, src.n, src.dim, opts)
	if err != nil {
		free()
		return nil, err
	}
	s.free = append(s.free, free)
	return s, nil
}

// sliceWriter appends to a slice with enough capacity.
type sliceWriter struct{ b []byte }

func (w *sliceWriter) Write(p []byte) (int, error) {
	if len(w.b)+len(p) > cap(w.b) {
		return 0, fmt.Errorf("feature: conversion overflows its buffer")
	}
	w.b = append(w.b, p...)
	return len(p), nil
}

package curves

import (
	"io"
	"os"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

type writerTo = io.Writer

// saveAtomic writes via a temporary file and a rename.
func saveAtomic(path string, write func(io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := write(tmp); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

func saveVector(path, ext string, ps []*plot.Plot, w, h vg.Length, tiles draw.Tiles) error {
	c, err := draw.NewFormattedCanvas(w, h, ext)
	if err != nil {
		return err
	}
	dc := draw.New(c)
	canvases := plot.Align([][]*plot.Plot{{ps[0]}, {ps[1]}}, tiles, dc)
	ps[0].Draw(canvases[0][0])
	ps[1].Draw(canvases[1][0])
	return saveAtomic(path, func(f io.Writer) error {
		_, err := c.WriteTo(f)
		return err
	})
}

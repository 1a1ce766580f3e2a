package curves

import (
	"io"

	"github.com/graphmill/graphmill/internal/atomicfile"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

func saveVector(path, ext string, ps []*plot.Plot, w, h vg.Length, tiles draw.Tiles) error {
	c, err := draw.NewFormattedCanvas(w, h, ext)
	if err != nil {
		return err
	}
	dc := draw.New(c)
	canvases := plot.Align([][]*plot.Plot{{ps[0]}, {ps[1]}}, tiles, dc)
	ps[0].Draw(canvases[0][0])
	ps[1].Draw(canvases[1][0])
	return atomicfile.Write(path, func(f io.Writer) error {
		_, err := c.WriteTo(f)
		return err
	})
}

// Package curves draws training curves (loss and accuracies per epoch) to
// a PNG, SVG or PDF file with gonum/plot.
package curves

import (
	"fmt"
	"image/color"
	"io"
	"path/filepath"
	"strings"

	"github.com/graphmill/graphmill/internal/atomicfile"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// Point is one epoch's values; NaN marks a missing value (e.g. an epoch
// without evaluation).
type Point struct {
	Epoch                     int
	Loss                      float64
	TrainAcc, ValAcc, TestAcc float64
}

// Format returns the image format of path from its extension (png, svg or
// pdf), or an error naming the extensions supported: a check that can run
// before the curves exist.
func Format(path string) (string, error) {
	ext := strings.TrimPrefix(strings.ToLower(filepath.Ext(path)), ".")
	switch ext {
	case "png", "svg", "pdf":
		return ext, nil
	}
	return "", fmt.Errorf("plot %s: unsupported extension %q (use .png, .svg or .pdf)", path, ext)
}

// Write draws two panels, loss on top and accuracies below, into path; the
// format follows the extension (.png, .svg, .pdf).
func Write(path, title string, pts []Point) error {
	if len(pts) == 0 {
		return fmt.Errorf("plot: no epochs to draw")
	}
	ext, err := Format(path)
	if err != nil {
		return err
	}
	loss := plot.New()
	loss.Title.Text = title
	loss.Y.Label.Text = "training loss"
	acc := plot.New()
	acc.X.Label.Text = "epoch"
	acc.Y.Label.Text = "accuracy"
	acc.Y.Min, acc.Y.Max = 0, 1
	acc.Legend.Top, acc.Legend.Left = false, false
	acc.Legend.YOffs = vg.Points(20)
	type series struct {
		name string
		get  func(Point) float64
		c    color.RGBA
		p    *plot.Plot
	}
	for _, s := range []series{
		{"loss", func(p Point) float64 { return p.Loss }, color.RGBA{200, 60, 40, 255}, loss},
		{"train", func(p Point) float64 { return p.TrainAcc }, color.RGBA{120, 120, 120, 255}, acc},
		{"validation", func(p Point) float64 { return p.ValAcc }, color.RGBA{40, 100, 200, 255}, acc},
		{"test", func(p Point) float64 { return p.TestAcc }, color.RGBA{40, 160, 80, 255}, acc},
	} {
		var xy plotter.XYs
		for _, p := range pts {
			if v := s.get(p); v == v { // skip NaN
				xy = append(xy, plotter.XY{X: float64(p.Epoch), Y: v})
			}
		}
		if len(xy) == 0 {
			continue
		}
		l, err := plotter.NewLine(xy)
		if err != nil {
			return err
		}
		l.Color = s.c
		l.Width = vg.Points(1.5)
		s.p.Add(l)
		if s.p == acc {
			acc.Legend.Add(s.name, l)
		}
	}
	loss.Add(plotter.NewGrid())
	acc.Add(plotter.NewGrid())
	const w, h = 8 * vg.Inch, 7 * vg.Inch
	img := vgimg.New(w, h)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 2, Cols: 1, PadX: vg.Millimeter * 2, PadY: vg.Millimeter * 4, PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 4}
	canvases := plot.Align([][]*plot.Plot{{loss}, {acc}}, tiles, dc)
	loss.Draw(canvases[0][0])
	acc.Draw(canvases[1][0])
	if ext == "png" {
		return atomicfile.Write(path, func(f io.Writer) error {
			_, err := vgimg.PngCanvas{Canvas: img}.WriteTo(f)
			return err
		})
	}
	// Vector formats: redraw on a vector canvas of the same size.
	p := []*plot.Plot{loss, acc}
	return saveVector(path, ext, p, w, h, tiles)
}

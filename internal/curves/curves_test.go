package curves

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"testing"
)

func TestWritePNGAndSVG(t *testing.T) {
	var pts []Point
	for e := 0; e < 50; e++ {
		v := math.NaN()
		if e%5 == 4 {
			v = 0.5 + float64(e)/200
		}
		pts = append(pts, Point{Epoch: e, Loss: 2 / float64(e+1), TrainAcc: float64(e) / 50, ValAcc: v, TestAcc: v - 0.02})
	}
	dir := t.TempDir()
	for _, name := range []string{"c.png", "c.svg"} {
		p := filepath.Join(dir, name)
		if err := Write(p, "test", pts); err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(p)
		if name == "c.png" && !bytes.HasPrefix(b, []byte("\x89PNG")) || name == "c.svg" && !bytes.Contains(b, []byte("<svg")) {
			t.Fatalf("%s is not the right format", name)
		}
	}
	if err := Write(filepath.Join(dir, "c.bmp"), "x", pts); err == nil {
		t.Fatal("bmp accepted")
	}
	if err := Write(filepath.Join(dir, "d.png"), "x", nil); err == nil {
		t.Fatal("empty accepted")
	}
}

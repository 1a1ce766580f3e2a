package safetensors

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	p := filepath.Join(t.TempDir(), "m.safetensors")
	in := []Tensor{
		{"a.weight", []int{2, 3}, []float32{1, 2, 3, 4, 5, 6}},
		{"a.bias", []int{3}, []float32{-1, 0, 1}},
		{"empty", []int{0}, []float32{}},
	}
	if err := Write(p, in, map[string]string{"k": "v"}); err != nil {
		t.Fatal(err)
	}
	f, err := Read(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range in {
		got := f.Tensors[x.Name]
		if !reflect.DeepEqual(got.Shape, x.Shape) || !reflect.DeepEqual(got.Data, x.Data) {
			t.Fatalf("%s: got %+v", x.Name, got)
		}
	}
	if f.Metadata["k"] != "v" {
		t.Fatal("metadata lost")
	}
}

func TestWriteRejects(t *testing.T) {
	p := filepath.Join(t.TempDir(), "m.safetensors")
	if err := Write(p, []Tensor{{"x", []int{2}, []float32{1}}}, nil); err == nil {
		t.Fatal("shape/data mismatch accepted")
	}
	if err := Write(p, []Tensor{{"x", []int{1}, []float32{1}}, {"x", []int{1}, []float32{1}}}, nil); err == nil {
		t.Fatal("duplicate accepted")
	}
	if _, err := os.Stat(p); err == nil {
		t.Fatal("failed write left a file")
	}
}

func TestCorrupt(t *testing.T) {
	p := filepath.Join(t.TempDir(), "m.safetensors")
	Write(p, []Tensor{{"w", []int{2, 2}, []float32{1, 2, 3, 4}}}, nil)
	good, _ := os.ReadFile(p)
	cases := map[string][]byte{
		"empty":     {},
		"short":     good[:5],
		"truncated": good[:len(good)-4],
		"huge len":  append(binary.LittleEndian.AppendUint64(nil, 1<<40), good[8:]...),
		"bad json":  append(binary.LittleEndian.AppendUint64(nil, 2), []byte("{x")...),
	}
	for name, b := range cases {
		if _, err := parse(bytes.NewReader(b), int64(len(b))); err == nil || !errors.Is(err, ErrFormat) {
			t.Errorf("%s: got %v", name, err)
		}
	}
}

// TestTorchLoads checks that PyTorch's safetensors loader (or, without it,
// a plain-numpy reader of the documented layout) reads our files.
func TestTorchLoads(t *testing.T) {
	py := "/usr/bin/python3"
	if exec.Command(py, "-c", "import numpy").Run() != nil {
		t.Skip("numpy not installed for /usr/bin/python3")
	}
	p := filepath.Join(t.TempDir(), "m.safetensors")
	Write(p, []Tensor{{"w", []int{2, 2}, []float32{1, 2, 3, 4.5}}, {"b", []int{2}, []float32{7, 8}}}, map[string]string{"format": "pt"})
	script := `
import json, struct, sys, numpy as np
b = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", b[:8])[0]
h = json.loads(b[8:8+n]); data = b[8+n:]
w = h["w"]; lo, hi = w["data_offsets"]
arr = np.frombuffer(data[lo:hi], dtype="<f4").reshape(w["shape"])
assert arr[1, 1] == 4.5, arr
try:
    from safetensors.torch import load_file
    t = load_file(sys.argv[1]); assert float(t["w"][1, 1]) == 4.5
except ImportError:
    pass
`
	if out, err := exec.Command(py, "-c", script, p).CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
}

func FuzzParse(f *testing.F) {
	p := filepath.Join(f.TempDir(), "m.safetensors")
	Write(p, []Tensor{{"w", []int{2, 2}, []float32{1, 2, 3, 4}}, {"b", []int{2}, []float32{1, 2}}}, map[string]string{"a": "b"})
	good, _ := os.ReadFile(p)
	f.Add(good)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		out, err := parse(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			return
		}
		for name, x := range out.Tensors {
			n := 1
			for _, d := range x.Shape {
				n *= d
			}
			if n != len(x.Data) {
				t.Fatalf("%s: shape %v with %d values", name, x.Shape, len(x.Data))
			}
		}
	})
}

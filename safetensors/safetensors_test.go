package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	p := filepath.Join(t.TempDir(), "m.safetensors")
	in := []Tensor{
		{Name: "a.weight", Shape: []int{2, 3}, Data: []float32{1, 2, 3, 4, 5, 6}},
		{Name: "a.bias", Shape: []int{3}, Data: []float32{-1, 0, 1}},
		{Name: "empty", Shape: []int{0}, Data: []float32{}},
		// Streamed by rows, in chunks of 2^18 values: 3 chunks, the last short.
		{Name: "streamed", Shape: []int{70000, 8}, Rows: func(row0 int, dst []float32) error {
			for i := range dst {
				dst[i] = float32(row0*8 + i)
			}
			return nil
		}},
	}
	if err := Write(p, in, map[string]string{"k": "v"}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); !LooksLike(b[:64]) {
		t.Error("a written file does not look like safetensors")
	}
	for _, head := range []string{"", "\x93NUMPY\x01\x00v\x00{'descr'", "{\"a\": 1}", "\x10\x00\x00\x00\x00\x00\x00\x00[1]"} {
		if LooksLike([]byte(head)) {
			t.Errorf("%q looks like safetensors", head)
		}
	}
	f, err := Read(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range in {
		got := f.Tensors[x.Name]
		want := x.Data
		if x.Rows != nil {
			want = make([]float32, x.Shape[0]*x.Shape[1])
			x.Rows(0, want)
		}
		if !reflect.DeepEqual(got.Shape, x.Shape) || !reflect.DeepEqual(got.Data, want) {
			t.Fatalf("%s: got %+v", x.Name, got)
		}
	}
	if f.Metadata["k"] != "v" {
		t.Fatal("metadata lost")
	}
}

// TestHalfAndLazy writes F16 and BF16 tensors (from Data and streamed by
// Rows) and reads them back whole (Read) and a range of rows at a time
// from the file (Open's lazy tensors, Rows), which Close ends.
func TestHalfAndLazy(t *testing.T) {
	p := filepath.Join(t.TempDir(), "m.safetensors")
	rows := func(row0 int, dst []float32) error {
		for i := range dst {
			dst[i] = float32((row0*4+i)%2048) * 0.25 // exact in F16; in BF16 below 64
		}
		return nil
	}
	in := []Tensor{
		{Name: "f16", Shape: []int{3, 2}, Data: []float32{1, -2.5, 0.1, 65504, 1e-7, 70000}, DType: "F16"},
		{Name: "bf16", Shape: []int{2}, Data: []float32{1, 3.140625}, DType: "BF16"},
		{Name: "streamed", Shape: []int{70000, 4}, Rows: rows, DType: "F16"},
		{Name: "small", Shape: []int{64, 4}, Rows: rows, DType: "BF16"},
		{Name: "f32", Shape: []int{2}, Data: []float32{0.1, 2}},
	}
	if err := Write(p, in, nil); err != nil {
		t.Fatal(err)
	}
	want := map[string][]float32{
		// F16 rounds: 0.1 to 0.0999755859375, 1e-7 to the subnormal
		// 1.1920929e-07, 70000 to +Inf.
		"f16":  {1, -2.5, 0.0999755859375, 65504, 1.1920929e-07, float32(math.Inf(1))},
		"bf16": {1, 3.140625},
		"f32":  {0.1, 2},
	}
	for _, n := range []string{"streamed", "small"} {
		x := make([]float32, in[0].Shape[0])
		for _, tt := range in {
			if tt.Name == n {
				x = make([]float32, tt.Shape[0]*tt.Shape[1])
			}
		}
		rows(0, x)
		want[n] = x
	}
	f, err := Read(p)
	if err != nil {
		t.Fatal(err)
	}
	for name, w := range want {
		if got := f.Tensors[name]; !reflect.DeepEqual(got.Data, w) || got.DType != map[string]string{"f16": "F16", "bf16": "BF16", "streamed": "F16", "small": "BF16", "f32": "F32"}[name] {
			t.Fatalf("%s: %v %v, want %v", name, got.DType, got.Data[:min(8, len(got.Data))], w[:min(8, len(w))])
		}
	}
	if st, _ := os.Stat(p); st.Size() > 70000*4*2+4096 {
		t.Errorf("file of %d bytes: the F16 table is not stored at 2 bytes a value", st.Size())
	}
	lf, err := Open(p, func(name string) bool { return name != "f32" })
	if err != nil {
		t.Fatal(err)
	}
	if x := lf.Tensors["f32"]; x.Rows != nil || !reflect.DeepEqual(x.Data, want["f32"]) {
		t.Fatalf("eager tensor: %+v", x)
	}
	for name, w := range want {
		x := lf.Tensors[name]
		if name == "f32" {
			continue
		}
		if x.Data != nil || x.Rows == nil {
			t.Fatalf("%s read, not left in the file", name)
		}
		width := len(w) / x.Shape[0]
		for _, r := range [][2]int{{0, x.Shape[0]}, {1, 2}, {x.Shape[0] - 1, x.Shape[0]}} {
			got := make([]float32, (r[1]-r[0])*width)
			if err := x.Rows(r[0], got); err != nil || !reflect.DeepEqual(got, w[r[0]*width:r[1]*width]) {
				t.Fatalf("%s rows %v: %v, %v", name, r, err, got)
			}
		}
		if err := x.Rows(x.Shape[0], make([]float32, width)); err == nil {
			t.Errorf("%s: a row past the end read", name)
		}
	}
	if err := lf.Close(); err != nil {
		t.Fatal(err)
	}
	if err := lf.Tensors["f16"].Rows(0, make([]float32, 2)); err == nil {
		t.Error("a lazy tensor read after Close")
	}
}

// rawFile builds a safetensors file of one tensor of the given dtype,
// shape and raw little-endian bytes, as PyTorch's safetensors writes.
func rawFile(dtype string, shape []int, data []byte) []byte {
	h, _ := json.Marshal(map[string]any{
		"__metadata__": map[string]string{"format": "pt"},
		"t":            map[string]any{"dtype": dtype, "shape": shape, "data_offsets": []int{0, len(data)}},
	})
	b := binary.LittleEndian.AppendUint64(nil, uint64(len(h)))
	return append(append(b, h...), data...)
}

// TestReadDTypes checks that Read converts every dtype a PyTorch
// state_dict may hold to float32 values and records the stored dtype.
func TestReadDTypes(t *testing.T) {
	le := binary.LittleEndian
	var f64, i64, u64 []byte
	for _, v := range []float64{1.5, -2.25e-3, 1e300} {
		f64 = le.AppendUint64(f64, math.Float64bits(v))
	}
	for _, v := range []int64{0, 7, -3, 1 << 40} {
		i64 = le.AppendUint64(i64, uint64(v))
	}
	u64 = le.AppendUint64(u64, 1<<63)
	i32 := le.AppendUint32(le.AppendUint32(nil, uint32(0xFFFFFFFF)), 123456) // -1, 123456
	for _, tc := range []struct {
		dtype string
		shape []int
		data  []byte
		want  []float32
	}{
		{"I64", []int{}, le.AppendUint64(nil, 200), []float32{200}}, // BatchNorm's num_batches_tracked
		{"I64", []int{2, 2}, i64, []float32{0, 7, -3, 1 << 40}},
		{"U64", []int{1}, u64, []float32{1 << 63}},
		{"I32", []int{2}, i32, []float32{-1, 123456}},
		{"U32", []int{1}, le.AppendUint32(nil, 4000000000), []float32{4e9}},
		{"I16", []int{2}, le.AppendUint16(le.AppendUint16(nil, 0x8000), 5), []float32{-32768, 5}},
		{"U16", []int{1}, le.AppendUint16(nil, 0xFFFF), []float32{65535}},
		{"I8", []int{2}, []byte{0xFF, 0x7F}, []float32{-1, 127}},
		{"U8", []int{2}, []byte{0xFF, 3}, []float32{255, 3}},
		{"BOOL", []int{3}, []byte{0, 1, 1}, []float32{0, 1, 1}},
		{"F64", []int{3}, f64, []float32{1.5, float32(-2.25e-3), float32(math.Inf(1))}},
		{"F32", []int{1}, le.AppendUint32(nil, math.Float32bits(0.1)), []float32{0.1}},
		// 1, -2, 65504 (largest), 2^-24 (smallest subnormal), 6.1e-5 (subnormal 1023·2^-24), -0, +Inf.
		{"F16", []int{7}, u16s(0x3C00, 0xC000, 0x7BFF, 0x0001, 0x03FF, 0x8000, 0x7C00), []float32{1, -2, 65504, 1.0 / (1 << 24), 1023.0 / (1 << 24), float32(math.Copysign(0, -1)), float32(math.Inf(1))}},
		{"BF16", []int{2}, u16s(0x3F80, 0xC0A0), []float32{1, -5}},
	} {
		t.Run(tc.dtype, func(t *testing.T) {
			b := rawFile(tc.dtype, tc.shape, tc.data)
			f, err := parse(bytes.NewReader(b), int64(len(b)), nil)
			if err != nil {
				t.Fatal(err)
			}
			got := f.Tensors["t"]
			if got.DType != tc.dtype || !reflect.DeepEqual(got.Shape, tc.shape) || len(got.Data) != len(tc.want) {
				t.Fatalf("got %+v, want dtype %s shape %v", got, tc.dtype, tc.shape)
			}
			for i, w := range tc.want {
				if math.Float32bits(got.Data[i]) != math.Float32bits(w) {
					t.Errorf("value %d: got %v, want %v", i, got.Data[i], w)
				}
			}
		})
	}
	// F16 NaN stays NaN.
	b := rawFile("F16", []int{1}, u16s(0x7E00))
	if f, err := parse(bytes.NewReader(b), int64(len(b)), nil); err != nil || !math.IsNaN(float64(f.Tensors["t"].Data[0])) {
		t.Errorf("F16 NaN: %v, %v", f, err)
	}
}

func u16s(vs ...uint16) []byte {
	var b []byte
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint16(b, v)
	}
	return b
}

// TestReadRefuses: a dtype Read does not know, or data of the wrong size
// for the dtype and shape, is an error naming the tensor.
func TestReadRefuses(t *testing.T) {
	for _, tc := range []struct {
		name, dtype string
		shape       []int
		data        []byte
		want        string
	}{
		{"unknown dtype", "F8_E4M3", []int{2}, []byte{1, 2}, `tensor t has dtype "F8_E4M3", which graphmill does not read`},
		{"I64 of 4 bytes", "I64", []int{1}, []byte{1, 2, 3, 4}, "offsets [0, 4) do not hold shape [1]"},
		{"F16 of 4 bytes as [1]", "F16", []int{1}, []byte{1, 2, 3, 4}, "offsets [0, 4) do not hold shape [1]"},
		{"BOOL short", "BOOL", []int{3}, []byte{1, 0}, "tensor t shape [3] exceeds the file"},
		{"I32 of 2 bytes", "I32", []int{}, []byte{1, 0}, "offsets [0, 2) do not hold shape []"},
	} {
		b := rawFile(tc.dtype, tc.shape, tc.data)
		if _, err := parse(bytes.NewReader(b), int64(len(b)), nil); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
}

func TestWriteRejects(t *testing.T) {
	p := filepath.Join(t.TempDir(), "m.safetensors")
	if err := Write(p, []Tensor{{Name: "x", Shape: []int{2}, Data: []float32{1}}}, nil); err == nil {
		t.Fatal("shape/data mismatch accepted")
	}
	if err := Write(p, []Tensor{{Name: "x", Shape: []int{1}, Data: []float32{1}}, {Name: "x", Shape: []int{1}, Data: []float32{1}}}, nil); err == nil {
		t.Fatal("duplicate accepted")
	}
	if err := Write(p, []Tensor{{Name: "n", Shape: []int{}, Data: []float32{3}, DType: "I64"}}, nil); err == nil || !strings.Contains(err.Error(), "Write writes F32, F16 and BF16") {
		t.Fatalf("I64 written: %v", err)
	}
	if _, err := os.Stat(p); err == nil {
		t.Fatal("failed write left a file")
	}
}

func TestCorrupt(t *testing.T) {
	p := filepath.Join(t.TempDir(), "m.safetensors")
	Write(p, []Tensor{{Name: "w", Shape: []int{2, 2}, Data: []float32{1, 2, 3, 4}}}, nil)
	good, _ := os.ReadFile(p)
	cases := map[string][]byte{
		"empty":     {},
		"short":     good[:5],
		"truncated": good[:len(good)-4],
		"huge len":  append(binary.LittleEndian.AppendUint64(nil, 1<<40), good[8:]...),
		"bad json":  append(binary.LittleEndian.AppendUint64(nil, 2), []byte("{x")...),
	}
	for name, b := range cases {
		if _, err := parse(bytes.NewReader(b), int64(len(b)), nil); err == nil || !errors.Is(err, ErrFormat) {
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
	Write(p, []Tensor{{Name: "w", Shape: []int{2, 2}, Data: []float32{1, 2, 3, 4.5}}, {Name: "b", Shape: []int{2}, Data: []float32{7, 8}}}, map[string]string{"format": "pt"})
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
	Write(p, []Tensor{{Name: "w", Shape: []int{2, 2}, Data: []float32{1, 2, 3, 4}}, {Name: "b", Shape: []int{2}, Data: []float32{1, 2}}}, map[string]string{"a": "b"})
	good, _ := os.ReadFile(p)
	f.Add(good)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		out, err := parse(bytes.NewReader(b), int64(len(b)), nil)
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

package npy

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name  string
		write func(string) error
		check func(*testing.T, *Array)
	}{
		{"f32-2d", func(p string) error { return WriteFile(p, []float32{1, 2, 3, 4, 5, 6}, 2, 3) },
			func(t *testing.T, a *Array) {
				v, err := View[float32](a)
				if err != nil || !reflect.DeepEqual(v, []float32{1, 2, 3, 4, 5, 6}) || !reflect.DeepEqual(a.Shape, []int{2, 3}) {
					t.Fatalf("got %v %v %v", v, a.Shape, err)
				}
			}},
		{"i64-1d", func(p string) error { return WriteFile(p, []int64{-1, 1 << 40}) },
			func(t *testing.T, a *Array) {
				v, _ := View[int64](a)
				if !reflect.DeepEqual(v, []int64{-1, 1 << 40}) {
					t.Fatalf("got %v", v)
				}
			}},
		{"empty", func(p string) error { return WriteFile(p, []int32{}) },
			func(t *testing.T, a *Array) {
				v, err := View[int32](a)
				if err != nil || len(v) != 0 || !reflect.DeepEqual(a.Shape, []int{0}) {
					t.Fatalf("got %v %v", v, err)
				}
			}},
		{"f16", func(p string) error { return WriteFileDType(p, Float16, []uint16{0x3c00}) },
			func(t *testing.T, a *Array) {
				v, err := View[uint16](a)
				if err != nil || v[0] != 0x3c00 || a.DType != Float16 {
					t.Fatalf("got %v %v", v, err)
				}
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(dir, c.name+".npy")
			if err := c.write(p); err != nil {
				t.Fatal(err)
			}
			a, err := Open(p)
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			if a.DataOffset%64 != 0 {
				t.Errorf("data offset %d not 64-aligned", a.DataOffset)
			}
			c.check(t, a)
		})
	}
}

func TestWrongDType(t *testing.T) {
	p := filepath.Join(t.TempDir(), "a.npy")
	if err := WriteFile(p, []int32{1, 2}); err != nil {
		t.Fatal(err)
	}
	a, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if _, err := View[float32](a); err == nil || !strings.Contains(err.Error(), "a.npy") {
		t.Fatalf("want dtype error naming the file, got %v", err)
	}
}

func TestTruncatedAndPadded(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a.npy")
	if err := WriteFile(p, []float32{1, 2, 3, 4}); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	for name, data := range map[string][]byte{
		"truncated": b[:len(b)-3],
		"padded":    append(append([]byte{}, b...), 0),
		"header":    b[:20],
		"empty":     {},
	} {
		q := filepath.Join(dir, name+".npy")
		os.WriteFile(q, data, 0o644)
		_, err := Open(q)
		if err == nil || !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), name+".npy") {
			t.Errorf("%s: want ErrFormat naming the file, got %v", name, err)
		}
	}
}

func TestStreamingWriterChecksLength(t *testing.T) {
	p := filepath.Join(t.TempDir(), "s.npy")
	w, err := Create(p, Int32, []int{3})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(AsBytes([]int32{1, 2})); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(AsBytes([]int32{3, 4})); err == nil {
		t.Fatal("write past shape accepted")
	}
	if err := w.Close(); err == nil {
		t.Fatal("short array closed without error")
	}
}

func TestHeaderParse(t *testing.T) {
	cases := []struct {
		dict    string
		want    Header
		wantErr bool
	}{
		{"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", Header{DType: Float32, Shape: []int{2, 3}}, false},
		{"{'descr': '|b1', 'fortran_order': False, 'shape': (), }", Header{DType: Bool, Shape: []int{}}, false},
		{"{'descr':'<i8','fortran_order':False,'shape':(5,)}", Header{DType: Int64, Shape: []int{5}}, false},
		{"{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", Header{}, true},
		{"{'descr': '>f4', 'fortran_order': False, 'shape': (2, 3), }", Header{}, true},
		{"{'descr': '<f4', 'shape': (2, 3), }", Header{}, true},
		{"{'descr': '<f4', 'fortran_order': False, 'shape': (-2, 3), }", Header{}, true},
		{"{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }", Header{}, true},
		// 65536 x 2^48 = 2^64 wrapped to 0 elements and was accepted.
		{"{'descr': '<f4', 'fortran_order': False, 'shape': (65536, 281474976710656), }", Header{}, true},
		{"{'descr': '<f4', 'fortran_order': False, 'shape': (1024, 1024, 1024, 1024, 1024, 1024), }", Header{}, true},
		{"{'descr': '<f4', 'fortran_order': False, 'shape': (0, 281474976710656), }", Header{DType: Float32, Shape: []int{0, 1 << 48}}, false},
	}
	for _, c := range cases {
		h, err := parseDict(c.dict)
		if (err != nil) != c.wantErr {
			t.Errorf("%s: err=%v", c.dict, err)
			continue
		}
		if err == nil && (h.DType != c.want.DType || !reflect.DeepEqual(h.Shape, c.want.Shape)) {
			t.Errorf("%s: got %+v", c.dict, h)
		}
	}
}

// TestNumpyReadsOurFiles checks the contract that numpy.load(mmap_mode="r")
// opens every array we write unchanged, and that we read numpy's files.
func TestNumpyReadsOurFiles(t *testing.T) {
	py := "/usr/bin/python3"
	if err := exec.Command(py, "-c", "import numpy").Run(); err != nil {
		t.Skip("numpy not installed for /usr/bin/python3 (apt-get install python3-numpy)")
	}
	dir := t.TempDir()
	if err := WriteFile(filepath.Join(dir, "f.npy"), []float32{1.5, -2, 3, 4, 5, 6}, 3, 2); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(filepath.Join(dir, "i.npy"), []int64{7, -8}); err != nil {
		t.Fatal(err)
	}
	aw, err := CreateAligned(filepath.Join(dir, "a.npy"), Float32, []int{2, 2}, 4096)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := aw.Write(AsBytes([]float32{1, 2, 3, 4})); err != nil {
		t.Fatal(err)
	}
	if err := aw.Close(); err != nil {
		t.Fatal(err)
	}
	script := `
import numpy as np, sys
d = sys.argv[1]
f = np.load(d + "/f.npy", mmap_mode="r"); i = np.load(d + "/i.npy", mmap_mode="r")
assert f.dtype == np.float32 and f.shape == (3, 2) and f[0, 0] == 1.5 and f[2, 1] == 6, f
assert i.dtype == np.int64 and list(i) == [7, -8], i
a = np.load(d + "/a.npy", mmap_mode="r")
assert a.offset == 4096 and a.shape == (2, 2) and a[1, 1] == 4, (a.offset, a)
np.save(d + "/np.npy", np.arange(12, dtype=np.int32).reshape(3, 4))
np.save(d + "/np16.npy", np.array([1.0, 2.0], dtype=np.float16))
`
	out, err := exec.Command(py, "-c", script, dir).CombinedOutput()
	if err != nil {
		t.Fatalf("numpy: %v\n%s", err, out)
	}
	v, h, err := ReadFile[int32](filepath.Join(dir, "np.npy"))
	if err != nil || !reflect.DeepEqual(h.Shape, []int{3, 4}) || v[11] != 11 {
		t.Fatalf("reading numpy's file: %v %v %v", v, h, err)
	}
	v16, _, err := ReadFile[uint16](filepath.Join(dir, "np16.npy"))
	if err != nil || v16[0] != 0x3c00 || v16[1] != 0x4000 {
		t.Fatalf("reading numpy's float16: %v %v", v16, err)
	}
}

func TestHeaderAlignment(t *testing.T) {
	for _, c := range []struct {
		align int
		shape []int
		ok    bool
	}{
		{64, []int{3}, true}, {4096, []int{1000, 256}, true}, {8192, []int{7}, true},
		{0, []int{3}, false}, {100, []int{3}, false}, {16384, []int{3}, false},
	} {
		h, err := EncodeHeaderAligned(Float32, c.shape, c.align)
		if (err == nil) != c.ok {
			t.Errorf("align %d: error %v, want ok=%v", c.align, err, c.ok)
			continue
		}
		if !c.ok {
			continue
		}
		got, err := ReadHeader(bytes.NewReader(h))
		if err != nil || got.DataOffset != int64(len(h)) || len(h)%c.align != 0 || !reflect.DeepEqual(got.Shape, c.shape) {
			t.Errorf("align %d: header of %d bytes read as %+v, %v", c.align, len(h), got, err)
		}
	}
}

func FuzzReadHeader(f *testing.F) {
	for _, shape := range [][]int{{3}, {2, 5}, {}} {
		h, _ := EncodeHeader(Float32, shape)
		f.Add(h)
	}
	f.Add([]byte("\x93NUMPY\x02\x00\x10\x00\x00\x00{'descr': '<i4'}"))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := ReadHeader(bytes.NewReader(b))
		if err != nil {
			return
		}
		if h.DType.Size() == 0 || h.DataOffset > int64(len(b)) || h.Len() < 0 {
			t.Fatalf("accepted invalid header %+v", h)
		}
		// A header we accept must re-encode and parse to the same thing.
		enc, err := EncodeHeader(h.DType, h.Shape)
		if err != nil {
			t.Fatal(err)
		}
		h2, err := ReadHeader(bytes.NewReader(enc))
		if err != nil || h2.DType != h.DType || !reflect.DeepEqual(h2.Shape, h.Shape) {
			t.Fatalf("re-encode mismatch: %+v vs %+v (%v)", h, h2, err)
		}
	})
}

func TestOpenRawRejects(t *testing.T) {
	path := filepath.Join(t.TempDir(), "raw")
	if err := os.WriteFile(path, make([]byte, 64), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		dtype  DType
		shape  []int
		offset int64
		ok     bool
	}{
		{"fits", Float32, []int{4, 4}, 0, true},
		{"fits after an offset", Int32, []int{2, 3}, 40, true},
		{"one byte short", Float32, []int{4, 4}, 1, false},
		{"unsupported dtype", DType("<c8"), []int{1}, 0, false},
		{"negative dim", Float32, []int{-1, 4}, 0, false},
		{"overflowing shape", Float64, []int{1 << 40, 1 << 40}, 0, false},
		{"negative offset", Uint8, []int{1}, -1, false},
	} {
		a, err := OpenRaw(path, c.dtype, c.shape, c.offset)
		if (err == nil) != c.ok {
			t.Errorf("%s: err %v, want ok=%v", c.name, err, c.ok)
		}
		if err == nil {
			if int64(len(a.Data)) != a.DataBytes() {
				t.Errorf("%s: %d bytes of data for %v", c.name, len(a.Data), c.shape)
			}
			a.Close()
		}
	}
}

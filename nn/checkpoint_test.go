package nn

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/graphmill/graphmill/safetensors"
)

// rawTensor is a tensor as PyTorch writes it: any dtype, raw bytes.
type rawTensor struct {
	dtype string
	shape []int
	data  []byte
}

// writeRaw writes tensors of any dtype as safetensors (safetensors.Write
// writes F32 only), as PyTorch's save_file does.
func writeRaw(t *testing.T, path string, ts map[string]rawTensor, meta map[string]string) {
	t.Helper()
	header := map[string]any{"__metadata__": meta}
	var data []byte
	for name, x := range ts {
		header[name] = map[string]any{"dtype": x.dtype, "shape": x.shape, "data_offsets": []int{len(data), len(data) + len(x.data)}}
		data = append(data, x.data...)
	}
	h, err := json.Marshal(header)
	if err != nil {
		t.Fatal(err)
	}
	b := append(binary.LittleEndian.AppendUint64(nil, uint64(len(h))), h...)
	if err := os.WriteFile(path, append(b, data...), 0o644); err != nil {
		t.Fatal(err)
	}
}

func f32Bytes(vs []float32) []byte {
	var b []byte
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
	}
	return b
}

// raw returns a checkpoint's tensors as rawTensors (all F32).
func raw(f *safetensors.File) map[string]rawTensor {
	ts := map[string]rawTensor{}
	for name, x := range f.Tensors {
		ts[name] = rawTensor{"F32", x.Shape, f32Bytes(x.Data)}
	}
	return ts
}

// testModel makes a small model of kind with random weights and running
// statistics that are not their initial values.
func testModel(t *testing.T, kind Kind, seed uint64) (*Model, []float32) {
	t.Helper()
	deg := []float32{0, 1, 2, 3, 3, 7}
	m, err := NewModel(Config{Kind: kind, In: 5, Hidden: 4, Out: 3, Layers: 2, Seed: seed}, deg)
	if err != nil {
		t.Fatal(err)
	}
	_, ts := m.NamedTensors()
	for i, v := range ts {
		for j := range v.Value.Data {
			v.Value.Data[j] = float32(i+1) + float32(j)/8 + float32(seed)
		}
	}
	return m, deg
}

// TestCheckpointHoldsPyGBuffers: a checkpoint holds the buffers PyG's
// modules register with the values graphmill computes with (GINConv's eps,
// PNAConv's degree averages), so that PyTorch loads it with strict=True,
// and loads back into graphmill.
func TestCheckpointHoldsPyGBuffers(t *testing.T) {
	for _, tc := range []struct {
		kind Kind
		want map[string][]float32 // buffers by name, shape [len]
		none string               // a name that must not be there
	}{
		{GIN, map[string][]float32{"convs.0.eps": {0}, "convs.1.eps": {0}}, "convs.0.nn.1.num_batches_tracked"},
		{PNA, map[string][]float32{
			// deg {0, 1, 2, 3, 3, 7}: mean 16/6, mean log(d+1) as AvgLogDegree.
			"convs.0.aggr_module.avg_deg_lin": {float32(16.0 / 6)},
			"convs.0.aggr_module.avg_deg_log": {float32(AvgLogDegree([]float32{0, 1, 2, 3, 3, 7}))},
			"convs.1.aggr_module.avg_deg_lin": {float32(16.0 / 6)},
			"convs.1.aggr_module.avg_deg_log": {float32(AvgLogDegree([]float32{0, 1, 2, 3, 3, 7}))},
		}, ""},
		{GCN, nil, "convs.0.eps"},
	} {
		t.Run(string(tc.kind), func(t *testing.T) {
			m, deg := testModel(t, tc.kind, 1)
			p := filepath.Join(t.TempDir(), "m.safetensors")
			if err := m.Save(p, nil); err != nil {
				t.Fatal(err)
			}
			cfg, f, err := ReadConfig(p)
			if err != nil {
				t.Fatal(err)
			}
			names, ps := m.NamedTensors()
			if len(f.Tensors) != len(names)+len(tc.want) {
				t.Errorf("%d tensors, want %d weights and %d buffers: %v", len(f.Tensors), len(names), len(tc.want), f.Order)
			}
			for name, want := range tc.want {
				got, ok := f.Tensors[name]
				if !ok || got.DType != "F32" || !reflect.DeepEqual(got.Shape, []int{len(want)}) || !reflect.DeepEqual(got.Data, want) {
					t.Errorf("%s: got %+v (present %v), want F32 %v of shape [%d]", name, got, ok, want, len(want))
				}
			}
			if _, ok := f.Tensors[tc.none]; ok && tc.none != "" {
				t.Errorf("checkpoint holds %s", tc.none)
			}
			m2, err := NewModel(cfg, deg)
			if err != nil {
				t.Fatal(err)
			}
			if err := m2.LoadParams(f, p); err != nil {
				t.Fatal(err)
			}
			_, ps2 := m2.NamedTensors()
			for i := range ps {
				if !reflect.DeepEqual(ps[i].Value.Data, ps2[i].Value.Data) {
					t.Errorf("%s not loaded", names[i])
				}
			}
		})
	}
}

// TestLoadPyTorchStateDict: a state_dict saved by PyTorch from the PyG
// twin of a model (all of its tensors: BatchNorm's I64
// num_batches_tracked, the buffers graphmill holds fixed) loads when the
// buffers hold graphmill's values, and everything else that does not
// match is refused with a message naming the tensor.
func TestLoadPyTorchStateDict(t *testing.T) {
	i64 := func(v int64) rawTensor {
		return rawTensor{"I64", []int{}, binary.LittleEndian.AppendUint64(nil, uint64(v))}
	}
	f32 := func(vs ...float32) rawTensor { return rawTensor{"F32", []int{len(vs)}, f32Bytes(vs)} }
	f64 := func(n int) rawTensor { return rawTensor{"F64", []int{n}, make([]byte, 8*n)} }
	avgLog := float32(AvgLogDegree([]float32{0, 1, 2, 3, 3, 7}))
	for _, tc := range []struct {
		name   string
		kind   Kind
		change func(ts map[string]rawTensor)
		want   string // "" to load
	}{
		{"gin with num_batches_tracked and eps", GIN, func(ts map[string]rawTensor) {
			ts["convs.0.nn.1.num_batches_tracked"], ts["convs.1.nn.1.num_batches_tracked"] = i64(200), i64(200)
		}, ""},
		{"gin without eps (written before graphmill saved it)", GIN, func(ts map[string]rawTensor) {
			delete(ts, "convs.0.eps")
			delete(ts, "convs.1.eps")
		}, ""},
		{"gin with eps 0 as F64", GIN, func(ts map[string]rawTensor) { ts["convs.1.eps"] = f64(1) }, ""},
		{"gin with another eps", GIN, func(ts map[string]rawTensor) { ts["convs.1.eps"] = f32(0.25) },
			"tensor convs.1.eps is [0.25], but graphmill's model holds [0]: graphmill's GIN computes (1+eps)·x_i + Σ_j x_j with eps fixed at 0"},
		{"gin with a NaN eps", GIN, func(ts map[string]rawTensor) { ts["convs.0.eps"] = f32(float32(math.NaN())) }, "tensor convs.0.eps is [NaN]"},
		{"gin with eps of shape [2]", GIN, func(ts map[string]rawTensor) { ts["convs.0.eps"] = f32(0, 0) },
			"tensor convs.0.eps has shape [2], the model expects [1]"},
		{"gin with an F16 weight", GIN, func(ts map[string]rawTensor) {
			ts["convs.1.nn.3.bias"] = rawTensor{"F16", []int{3}, make([]byte, 6)}
		}, "tensor convs.1.nn.3.bias has dtype F16; graphmill's weights are F32"},
		{"gin with F64 running statistics", GIN, func(ts map[string]rawTensor) { ts["convs.0.nn.1.running_var"] = f64(4) },
			"tensor convs.0.nn.1.running_var has dtype F64; graphmill's weights are F32"},
		{"gin with an I64 weight", GIN, func(ts map[string]rawTensor) {
			ts["convs.0.nn.0.weight"] = rawTensor{"I64", []int{4, 5}, make([]byte, 8*20)}
		}, "tensor convs.0.nn.0.weight has dtype I64"},
		{"gin without a weight", GIN, func(ts map[string]rawTensor) { delete(ts, "convs.1.nn.3.bias") },
			"checkpoint has no tensor convs.1.nn.3.bias"},
		{"gin with an unknown tensor", GIN, func(ts map[string]rawTensor) { ts["convs.0.nn.2.weight"] = f32(1) },
			"checkpoint has tensor convs.0.nn.2.weight that the model does not"},
		{"num_batches_tracked of no batch norm", GIN, func(ts map[string]rawTensor) { ts["convs.0.nn.3.num_batches_tracked"] = i64(1) },
			"checkpoint has tensor convs.0.nn.3.num_batches_tracked that the model does not"},
		{"eps of a model without", GCN, func(ts map[string]rawTensor) { ts["convs.0.eps"] = f32(0) },
			"checkpoint has tensor convs.0.eps that the model does not"},
		{"pna with any avg_deg_lin", PNA, func(ts map[string]rawTensor) { ts["convs.1.aggr_module.avg_deg_lin"] = f32(11) }, ""},
		{"pna with avg_deg_log rounded otherwise", PNA, func(ts map[string]rawTensor) {
			ts["convs.0.aggr_module.avg_deg_log"] = f32(math.Nextafter32(avgLog, 0))
		}, ""},
		{"pna with another avg_deg_log", PNA, func(ts map[string]rawTensor) { ts["convs.0.aggr_module.avg_deg_log"] = f32(avgLog * 1.01) },
			"tensor convs.0.aggr_module.avg_deg_log is"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, _ := testModel(t, tc.kind, 1)
			dir := t.TempDir()
			p := filepath.Join(dir, "m.safetensors")
			if err := m.Save(p, nil); err != nil {
				t.Fatal(err)
			}
			_, f, err := ReadConfig(p)
			if err != nil {
				t.Fatal(err)
			}
			ts := raw(f)
			tc.change(ts)
			q := filepath.Join(dir, "torch.safetensors")
			writeRaw(t, q, ts, f.Metadata)
			cfg, g, err := ReadConfig(q)
			if err != nil {
				t.Fatal(err)
			}
			// Another model's weights, which loading must replace.
			m2, _ := testModel(t, tc.kind, 2)
			m2.Config = cfg
			err = m2.LoadParams(g, q)
			if tc.want != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), q) {
					t.Fatalf("got %v, want an error naming %s and containing %q", err, q, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			names, ps := m.NamedTensors()
			_, ps2 := m2.NamedTensors()
			for i := range ps {
				if !reflect.DeepEqual(ps[i].Value.Data, ps2[i].Value.Data) {
					t.Errorf("%s: loaded %v, want %v", names[i], ps2[i].Value.Data, ps[i].Value.Data)
				}
			}
		})
	}
}

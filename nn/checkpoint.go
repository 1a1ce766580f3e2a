package nn

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/graphmill/graphmill/safetensors"
	"github.com/graphmill/graphmill/tensor/autograd"
)

// Checkpoint layout (PyTorch Geometric names; weights [out, in]):
//
//	sage: convs.{i}.lin_l.weight [out, in], convs.{i}.lin_l.bias [out], convs.{i}.lin_r.weight [out, in]
//	gcn:  convs.{i}.lin.weight [out, in], convs.{i}.bias [out]
//	gat:  convs.{i}.lin.weight [heads*out, in], convs.{i}.att_src [1, heads, out],
//	      convs.{i}.att_dst [1, heads, out], convs.{i}.bias [heads*out or out]
//
// The model Config is stored as JSON in the metadata key "graphmill_config".

// torchShape gives the PyTorch shape of tensor v, named name, stored
// rows×cols here.
func torchShape(v *autograd.Var, name string, rows, cols int) []int {
	if _, ok := vectors.Load(v); ok {
		return []int{cols}
	}
	switch {
	case strings.HasSuffix(name, "bias"), strings.HasSuffix(name, "running_mean"), strings.HasSuffix(name, "running_var"):
		return []int{cols}
	case strings.HasSuffix(name, "att_src"), strings.HasSuffix(name, "att_dst"):
		return []int{1, rows, cols}
	}
	return []int{rows, cols}
}

// Save writes the model's parameters and config to a safetensors file,
// atomically.
func (m *Model) Save(path string, extra map[string]string) error {
	names, ps := m.NamedTensors()
	ts := make([]safetensors.Tensor, len(ps))
	for i, p := range ps {
		ts[i] = safetensors.Tensor{Name: names[i], Shape: torchShape(p, names[i], p.Value.Rows, p.Value.Cols), Data: p.Value.Data}
	}
	cfg, err := json.Marshal(m.Config)
	if err != nil {
		return err
	}
	meta := map[string]string{"format": "pt", "graphmill_config": string(cfg)}
	for k, v := range extra {
		meta[k] = v
	}
	return safetensors.Write(path, ts, meta)
}

// ReadConfig returns the model config stored in a checkpoint.
func ReadConfig(path string) (Config, *safetensors.File, error) {
	f, err := safetensors.Read(path)
	if err != nil {
		return Config{}, nil, err
	}
	var c Config
	s, ok := f.Metadata["graphmill_config"]
	if !ok {
		return Config{}, nil, fmt.Errorf("%s: no graphmill_config in the metadata: not a graphmill checkpoint", path)
	}
	if err := json.Unmarshal([]byte(s), &c); err != nil {
		return Config{}, nil, fmt.Errorf("%s: bad graphmill_config: %w", path, err)
	}
	for _, t := range f.Tensors {
		c.stored += int64(len(t.Data))
	}
	return c, f, nil
}

// LoadParams copies a checkpoint's tensors into the model, failing with a
// message naming the parameter if a tensor is missing, extra, or of the
// wrong shape.
func (m *Model) LoadParams(f *safetensors.File, path string) error {
	names, ps := m.NamedTensors()
	seen := map[string]bool{}
	for i, p := range ps {
		t, ok := f.Tensors[names[i]]
		if !ok {
			return fmt.Errorf("%s: checkpoint has no tensor %s (the model expects %v): wrong model or layer count?", path, names[i], torchShape(p, names[i], p.Value.Rows, p.Value.Cols))
		}
		want := torchShape(p, names[i], p.Value.Rows, p.Value.Cols)
		if fmt.Sprint(t.Shape) != fmt.Sprint(want) {
			return fmt.Errorf("%s: tensor %s has shape %v, the model expects %v: checkpoint and model do not match", path, names[i], t.Shape, want)
		}
		seen[names[i]] = true
	}
	for name := range f.Tensors {
		if !seen[name] {
			return fmt.Errorf("%s: checkpoint has tensor %s that the model does not: checkpoint and model do not match", path, name)
		}
	}
	for i, p := range ps {
		copy(p.Value.Data, f.Tensors[names[i]].Data)
	}
	return nil
}

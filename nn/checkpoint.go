package nn

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
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
//	gin:  convs.{i}.nn.{0,1,3}.* and the buffer convs.{i}.eps [1] (0)
//	pna:  ... and the buffers convs.{i}.aggr_module.avg_deg_{lin,log} [1]
//
// The buffers a PyG module registers that graphmill holds fixed (see
// ConstBuffered) are written so that PyTorch's load_state_dict(strict=True)
// finds them; BatchNorm's num_batches_tracked is not (PyTorch fills it in
// when missing), and loading ignores it.
//
// The model Config is stored as JSON in the metadata key "graphmill_config".

// ConstBuffer is a tensor that a layer's PyTorch Geometric twin keeps in
// its state_dict (a registered buffer, such as GINConv's eps) but that
// graphmill holds fixed, given by the model's config: Save writes it so
// that PyTorch loads the checkpoint strictly, and LoadParams checks that a
// checkpoint's value is the one graphmill computes with (a checkpoint
// without it loads: graphmill wrote none before).
type ConstBuffer struct {
	// Name is relative to the layer, as the parameters' names.
	Name string
	// Value is the value graphmill computes with, stored with shape
	// [len(Value)].
	Value []float32
	// Tol is the relative tolerance of LoadParams' comparison (0: exact).
	Tol float64
	// Unused says graphmill does not compute with the tensor: any value
	// loads (PNA's avg_deg_lin, for scalers graphmill does not have).
	Unused bool
	// Why says what graphmill computes with it, for the error refusing
	// another value.
	Why string
}

// ConstBuffered is a layer with ConstBuffers.
type ConstBuffered interface {
	ConstBuffers() []ConstBuffer
}

// namedConsts gives the layers' ConstBuffers with their full names.
func (m *Model) namedConsts() ([]string, []ConstBuffer) {
	var names []string
	var cs []ConstBuffer
	for i, l := range m.Layers {
		if c, ok := l.(ConstBuffered); ok {
			for _, b := range c.ConstBuffers() {
				names = append(names, fmt.Sprintf("convs.%d.%s", i, b.Name))
				cs = append(cs, b)
			}
		}
	}
	return names, cs
}

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

// WriterKey is the metadata key Save records ("graphmill"), beside the
// config: a reader can tell a checkpoint graphmill wrote from one that
// PyTorch code assembled with graphmill's config alone, and refuse the
// first when it lacks metadata graphmill's trainers record (train.Save).
const WriterKey = "graphmill_writer"

// StateKey is the metadata key of a training-state file's JSON record
// (train.StateKey): such a file holds a checkpoint's weights and more, but
// is not one.
const StateKey = "graphmill_training_state"

// Save writes the model's parameters and config to a safetensors file,
// atomically, with the metadata extra. It knows nothing of how training
// read the features (normalisation, dtype), which inference must repeat:
// a trained model is saved with train.Save, which records them.
func (m *Model) Save(path string, extra map[string]string) error {
	ts := m.Tensors()
	cfg, err := json.Marshal(m.Config)
	if err != nil {
		return err
	}
	meta := map[string]string{"format": "pt", "graphmill_config": string(cfg), WriterKey: "graphmill"}
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
	if _, state := f.Metadata[StateKey]; state {
		return Config{}, nil, fmt.Errorf("%s is a training-state file ('graphmill train --state-file'), not a model checkpoint: continue the run with 'graphmill train --resume %s', or load the checkpoint 'graphmill train --save' wrote", path, path)
	} else if !ok {
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
// message naming the tensor if one is missing, extra, of the wrong shape,
// or (a parameter or running statistic) not F32. It also loads a PyTorch
// state_dict of the model's PyG twin: the buffers graphmill holds fixed
// (ConstBuffered) must have graphmill's value, and BatchNorm's
// num_batches_tracked, which graphmill does not keep, is ignored.
func (m *Model) LoadParams(f *safetensors.File, path string) error {
	names, ps := m.NamedTensors()
	seen := map[string]bool{}
	for i, p := range ps {
		t, ok := f.Tensors[names[i]]
		if !ok {
			return fmt.Errorf("%s: checkpoint has no tensor %s (the model expects %v): wrong model or layer count?", path, names[i], torchShape(p, names[i], p.Value.Rows, p.Value.Cols))
		}
		if t.DType != "F32" && t.DType != "" {
			return fmt.Errorf("%s: tensor %s has dtype %s; graphmill's weights are F32 (save the PyTorch model's state_dict after model.float())", path, names[i], t.DType)
		}
		want := torchShape(p, names[i], p.Value.Rows, p.Value.Cols)
		if fmt.Sprint(t.Shape) != fmt.Sprint(want) {
			return fmt.Errorf("%s: tensor %s has shape %v, the model expects %v: checkpoint and model do not match", path, names[i], t.Shape, want)
		}
		seen[names[i]] = true
	}
	cnames, cs := m.namedConsts()
	for i, c := range cs {
		t, ok := f.Tensors[cnames[i]]
		if !ok {
			continue // written before graphmill saved it
		}
		if want := []int{len(c.Value)}; fmt.Sprint(t.Shape) != fmt.Sprint(want) {
			return fmt.Errorf("%s: tensor %s has shape %v, the model expects %v: checkpoint and model do not match", path, cnames[i], t.Shape, want)
		}
		if !c.Unused {
			for j, v := range c.Value {
				if d := math.Abs(float64(t.Data[j]) - float64(v)); !(d <= c.Tol*math.Abs(float64(v))) {
					return fmt.Errorf("%s: tensor %s is %v, but graphmill's model holds %v: %s", path, cnames[i], t.Data, c.Value, c.Why)
				}
			}
		}
		seen[cnames[i]] = true
	}
	rest := make([]string, 0, len(f.Tensors))
	for name := range f.Tensors {
		rest = append(rest, name)
	}
	slices.Sort(rest)
	for _, name := range rest {
		if seen[name] {
			continue
		}
		// BatchNorm's counter of training steps, beside its running
		// statistics: graphmill's batch norm has a fixed momentum and
		// does not use it.
		if prefix, ok := strings.CutSuffix(name, "num_batches_tracked"); ok && seen[prefix+"running_mean"] {
			continue
		}
		return fmt.Errorf("%s: checkpoint has tensor %s that the model does not: checkpoint and model do not match", path, name)
	}
	for i, p := range ps {
		copy(p.Value.Data, f.Tensors[names[i]].Data)
	}
	return nil
}

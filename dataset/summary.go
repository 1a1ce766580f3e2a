package dataset

import (
	"math"

	"github.com/graphmill/graphmill/graph"
	"github.com/graphmill/graphmill/internal/half"
	"github.com/graphmill/graphmill/npy"
)

// Summary is what 'graphmill data info' reports about a dataset. Its JSON
// keys are stable.
type Summary struct {
	Name          string         `json:"name"`
	Dir           string         `json:"dir"`
	NumNodes      int            `json:"num_nodes"`
	NumEdges      int64          `json:"num_edges"`
	FeatureDim    int            `json:"feature_dim"`
	FeatureDType  string         `json:"feature_dtype,omitempty"`
	NumClasses    int            `json:"num_classes"`
	Splits        map[string]int `json:"splits"`
	TrainSize     int            `json:"train_size"`
	ValSize       int            `json:"val_size"`
	TestSize      int            `json:"test_size"`
	Symmetrized   bool           `json:"symmetrized"`
	SelfLoops     string         `json:"self_loops"`
	HasWeights    bool           `json:"has_weights"`
	InDegree      DegreeSummary  `json:"in_degree"`
	OutDegree     DegreeSummary  `json:"out_degree"`
	Features      *FeatureStats  `json:"features,omitempty"`
	LabelCounts   []int          `json:"label_counts,omitempty"`
	Unlabelled    int            `json:"unlabelled"`
	Bytes         int64          `json:"bytes"`
	FormatVersion int            `json:"format_version"`
	// Packed says how the nodes were renumbered ('graphmill data pack').
	Packed *PackMeta `json:"packed,omitempty"`
}

// DegreeSummary is graph.DegreeStats with JSON names.
type DegreeSummary struct {
	Min      int32   `json:"min"`
	Max      int32   `json:"max"`
	Mean     float64 `json:"mean"`
	Median   int32   `json:"median"`
	Isolated int     `json:"zero"`
}

// FeatureStats summarises the feature matrix over (a sample of) its rows.
type FeatureStats struct {
	Rows      int     `json:"rows_scanned"`
	Mean      float64 `json:"mean"`
	Std       float64 `json:"std"`
	Min       float32 `json:"min"`
	Max       float32 `json:"max"`
	NonZero   float64 `json:"nonzero_fraction"`
	NonFinite int     `json:"non_finite"`
}

// maxStatRows bounds the rows Summarize reads for feature statistics, so
// info stays fast on datasets larger than memory.
const maxStatRows = 100_000

// Summarize computes the Summary of an opened dataset. Degree statistics
// read the whole graph; feature statistics read at most 100,000 evenly
// spaced rows.
func (d *Dataset) Summarize() Summary {
	m := d.Meta
	s := Summary{
		Name: m.Name, Dir: d.Dir, NumNodes: m.NumNodes, NumEdges: m.NumEdges,
		FeatureDim: m.FeatureDim, NumClasses: m.NumClasses, Splits: m.Splits, Packed: m.Packed,
		TrainSize: m.Splits["train"], ValSize: m.Splits["val"], TestSize: m.Splits["test"],
		Symmetrized: m.Graph.Symmetric, SelfLoops: m.Graph.SelfLoops, HasWeights: m.Graph.HasWeights,
		FormatVersion: m.FormatVersion,
	}
	s.Bytes = d.Bytes()
	s.InDegree = degSummary(graph.Stats(d.Graph.InDegrees()))
	s.OutDegree = degSummary(graph.Stats(d.Graph.OutDegrees()))
	if d.FeatureArray != nil {
		s.FeatureDType = d.FeatureArray.DType.Name()
		if m.FeatureDType != "" {
			s.FeatureDType = m.FeatureDType // bfloat16 is stored as uint16
		}
	}
	if row := d.featureRow(); row != nil && m.NumNodes > 0 {
		s.Features = featureStats(row, m.NumNodes)
	}
	if d.Labels != nil {
		s.LabelCounts = make([]int, m.NumClasses)
		for _, c := range d.Labels {
			if c < 0 {
				s.Unlabelled++
			} else {
				s.LabelCounts[c]++
			}
		}
	}
	return s
}

// Bytes returns the size of the dataset's arrays (their .npy files).
func (d *Dataset) Bytes() int64 {
	var n int64
	for _, a := range d.arrays {
		n += a.DataOffset + a.DataBytes()
	}
	return n
}

func degSummary(st graph.DegreeStats) DegreeSummary {
	return DegreeSummary{Min: st.Min, Max: st.Max, Mean: st.Mean, Median: st.Median, Isolated: st.Zero}
}

// featureRow returns a function giving feature row v as float32 (float16
// and bfloat16 rows decoded into one buffer it reuses), or nil without
// features.
func (d *Dataset) featureRow() func(v int) []float32 {
	a, f := d.FeatureArray, d.Meta.FeatureDim
	if f == 0 {
		return nil
	}
	if d.Features != nil {
		return func(v int) []float32 { return d.Features[v*f : (v+1)*f] }
	}
	if a == nil || a.DType != npy.Float16 && a.DType != npy.Uint16 {
		return nil
	}
	x, err := npy.View[uint16](a)
	if err != nil {
		return nil
	}
	decode := half.DecodeF16
	if a.DType == npy.Uint16 {
		decode = half.DecodeBF16
	}
	buf := make([]float32, f)
	return func(v int) []float32 {
		decode(buf, x[v*f:(v+1)*f])
		return buf
	}
}

func featureStats(row func(v int) []float32, n int) *FeatureStats {
	step := max(1, n/maxStatRows)
	st := &FeatureStats{Min: float32(math.Inf(1)), Max: float32(math.Inf(-1))}
	var sum, sum2 float64
	var nz, cnt int
	for v := 0; v < n; v += step {
		st.Rows++
		for _, x := range row(v) {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				st.NonFinite++
				continue
			}
			sum += float64(x)
			sum2 += float64(x) * float64(x)
			st.Min = min(st.Min, x)
			st.Max = max(st.Max, x)
			if x != 0 {
				nz++
			}
			cnt++
		}
	}
	if cnt > 0 {
		st.Mean = sum / float64(cnt)
		st.Std = math.Sqrt(max(0, sum2/float64(cnt)-st.Mean*st.Mean))
		st.NonZero = float64(nz) / float64(cnt)
	}
	return st
}

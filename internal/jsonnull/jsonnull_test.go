package jsonnull_test

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/graphmill/graphmill/internal/jsonnull"
	"github.com/graphmill/graphmill/train"
)

type inner struct {
	A float64 `json:"a"`
	B []int   `json:"b,omitempty"`
}

type sample struct {
	inner
	Name   string             `json:"name"`
	P      *float64           `json:"p"`
	Q      *float64           `json:"q,omitempty"`
	F32    float32            `json:"f32"`
	Skip   int                `json:"-"`
	Plain  int                // no tag
	M      map[string]float64 `json:"m"`
	IntKey map[int]string     `json:"int_key"`
	Bytes  []byte             `json:"bytes"`
	When   time.Time          `json:"when"`
	Arr    [2]float64         `json:"arr"`
	Any    any                `json:"any"`
	hidden int
}

// TestMatchesEncodingJSON: with finite values the bytes are
// encoding/json's, field order and all; with NaN or Inf those values are
// null and the rest the same.
func TestMatchesEncodingJSON(t *testing.T) {
	p := 2.5
	vals := []any{
		sample{inner: inner{A: 1, B: []int{1}}, Name: "x", P: &p, F32: 1.5, Skip: 3, Plain: 4, M: map[string]float64{"z": 1, "a": 2},
			IntKey: map[int]string{3: "c", 1: "a"}, Bytes: []byte("hi"), When: time.Unix(5, 0).UTC(), Arr: [2]float64{1, 2}, Any: []string{"q"}, hidden: 1},
		sample{},
		train.Summary{Epochs: 3, BestValAcc: 0.5, BestEpoch: 1},
		[]train.EpochStats{{Epoch: 1, Loss: 0.25, ValAcc: &p}},
		map[string]any{"k": []float64{1, 2}},
		nil, 3.25, "s",
	}
	for i, v := range vals {
		want, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		got, err := jsonnull.MarshalIndent(v, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("value %d:\n%s\nwant\n%s", i, got, want)
		}
	}
	nan := math.NaN()
	ind, err := jsonnull.MarshalIndent(sample{inner: inner{A: math.Inf(1)}, P: &nan, F32: float32(math.Inf(-1)), M: map[string]float64{"n": nan}, Arr: [2]float64{nan, 1}}, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	if err := json.Compact(&got, ind); err != nil {
		t.Fatal(err)
	}
	want := `{"a":null,"name":"","p":null,"f32":null,"Plain":0,"m":{"n":null},"int_key":null,"bytes":null,"when":"0001-01-01T00:00:00Z","arr":[null,1],"any":null}`
	if got.String() != want {
		t.Errorf("got  %s\nwant %s", got.String(), want)
	}
}

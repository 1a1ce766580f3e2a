package graph

import (
	"math"
	"strings"
	"testing"
)

func TestBlockValidate(t *testing.T) {
	good := func() Block {
		return Block{NumSrc: 4, NumDst: 2, Indptr: []int64{0, 2, 3}, Indices: []int32{2, 3, 0}, EdgeIDs: []int64{5, 6, 7}, Weights: []float32{1, 0.5, 2}}
	}
	for _, c := range []struct {
		name string
		edit func(*Block)
		want string
	}{
		{"ok", func(*Block) {}, ""},
		{"no optional arrays", func(b *Block) { b.EdgeIDs, b.Weights = nil, nil }, ""},
		{"more destinations than sources", func(b *Block) { b.NumDst = 5 }, "destinations"},
		{"indptr length", func(b *Block) { b.Indptr = b.Indptr[:2] }, "indptr has 2"},
		{"indptr start", func(b *Block) { b.Indptr[0] = 1 }, "starts at 1"},
		{"indptr order", func(b *Block) { b.Indptr[1] = 4 }, "decreases"},
		{"indptr end", func(b *Block) { b.Indptr[2] = 2 }, "ends at 2"},
		{"source position", func(b *Block) { b.Indices[1] = 4 }, "source position 4"},
		{"negative position", func(b *Block) { b.Indices[1] = -1 }, "source position -1"},
		{"edge ids", func(b *Block) { b.EdgeIDs = b.EdgeIDs[:1] }, "1 edge ids"},
		{"negative edge id", func(b *Block) { b.EdgeIDs[2] = -1 }, "id -1"},
		{"weights", func(b *Block) { b.Weights = b.Weights[:2] }, "2 weights"},
		{"NaN weight", func(b *Block) { b.Weights[0] = float32(math.NaN()) }, "weight NaN"},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := good()
			c.edit(&b)
			err := b.Validate()
			if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
				t.Fatalf("error %v, want %q", err, c.want)
			}
		})
	}
	b := good()
	b.Reset()
	if b.NumSrc != 0 || len(b.Indptr) != 0 || cap(b.Indices) == 0 {
		t.Fatalf("Reset: %+v", b)
	}
}

package diskbench

import "testing"

func TestBelady(t *testing.T) {
	pages := func(v int32) (int64, int64) { return int64(v), int64(v) } // a page a row
	for _, c := range []struct {
		name       string
		trace      [][]int32
		order      []int32
		budget     int
		superbatch int
		hits       float64
		read       int64
	}{
		// 3 is cached but unused: 1 (used again) replaces it; 2 (not
		// used again) is read and not kept; 1 then hits.
		{"keeps the row used again", [][]int32{{1}, {2}, {1}}, []int32{3}, 1, 3, 1.0 / 3, 2 * 4096},
		// Without look-ahead past the superbatch, 1 looks unused again
		// and is not kept.
		{"superbatch of one", [][]int32{{1}, {2}, {1}}, []int32{3}, 1, 1, 0, 3 * 4096},
		// Rows not used again go coldest first: 4 (rank 1) before 3.
		{"coldest unused first", [][]int32{{1}, {1, 3}}, []int32{3, 4}, 2, 2, 2.0 / 3, 4096},
		{"no cache", [][]int32{{1, 2}, {1}}, nil, 0, 2, 0, 3 * 4096},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, err := belady("b", c.trace, c.order, c.budget, 8, c.superbatch, pages)
			if err != nil {
				t.Fatal(err)
			}
			if r.HitRate != c.hits || r.ReadBytes != c.read {
				t.Errorf("hit rate %v, read %d; want %v, %d", r.HitRate, r.ReadBytes, c.hits, c.read)
			}
		})
	}
}

// TestBarsMissed: every bar is judged, and one not measured (a zero) is
// missed, never met by default.
func TestBarsMissed(t *testing.T) {
	yes, no := true, false
	good := Report{IOEfficiency: 1, ReadAmplification: 1.01, FillEfficiency: 0.9, FirstBatch: 1, FirstBatchBound: 3, LossesEqual: &yes}
	if m := good.missed(); len(m) != 0 {
		t.Errorf("a run meeting every bar missed %v", m)
	}
	for _, c := range []struct {
		edit func(*Report)
		want string
	}{
		{func(r *Report) { r.IOEfficiency = 0.5 }, "io_efficiency"},
		{func(r *Report) { r.ReadAmplification = 0 }, "read_amplification"},
		{func(r *Report) { r.ReadAmplification = 1.4 }, "read_amplification"},
		{func(r *Report) { r.FillEfficiency = 0 }, "fill_efficiency"},
		{func(r *Report) { r.FirstBatch = 3.5 }, "time_to_first_batch"},
		{func(r *Report) { r.FirstBatch = 0 }, "time_to_first_batch"},
		{func(r *Report) { r.LossesEqual = &no }, "losses_equal"},
		{func(r *Report) { r.LossesEqual = nil }, "losses_equal"},
	} {
		r := good
		c.edit(&r)
		if m := r.missed(); len(m) != 1 || m[0] != c.want {
			t.Errorf("missed %v, want [%s]", m, c.want)
		}
	}
}

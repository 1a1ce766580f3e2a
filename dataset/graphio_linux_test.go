package dataset

import (
	"context"
	"path/filepath"
	"sync"
	"testing"

	"github.com/graphmill/graphmill/internal/diskio"
	"github.com/graphmill/graphmill/internal/rng"
)

// listsResident reports, for each of the nodes, whether every page of its
// neighbour list is in the page cache (mincore).
func listsResident(d *Dataset, nodes []int32) []bool {
	a := d.indices
	out := make([]bool, len(nodes))
	for i, v := range nodes {
		lo, hi := d.Graph.Indptr[v], d.Graph.Indptr[v+1]
		p0 := (a.DataOffset + 4*lo) / pageSize
		p1 := (a.DataOffset + 4*hi - 1) / pageSize
		vec := make([]byte, p1-p0+1)
		resident(a.Data, a.DataOffset, p0, vec)
		out[i] = true
		for _, b := range vec {
			out[i] = out[i] && b&1 == 1
		}
	}
	return out
}

// TestGraphReaderPrefetch drops the graph's pages from the page cache,
// prefetches some nodes and checks that their neighbour lists (and only
// about them) are then in the page cache, read with reads in flight.
func TestGraphReaderPrefetch(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "g")
	n := 20000
	r := rng.New(4)
	raw := &Raw{Name: "g", NumNodes: n}
	for v := range n {
		for range 50 {
			raw.Src = append(raw.Src, int32(r.IntN(n)))
			raw.Dst = append(raw.Dst, int32(v))
		}
	}
	if err := Write(context.Background(), dir, raw, WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	d, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	d.AdviseGraphRandom()
	// Open's edge check mapped every page: unmap them, then drop them.
	d.indices.DropResident()
	if err := diskio.DropCache(d.indices.Path); err != nil {
		t.Skipf("cannot drop the page cache: %v", err)
	}
	var nodes, others []int32
	for v := int32(0); v < int32(n); v += 100 {
		nodes = append(nodes, v)
		others = append(others, v+50)
	}
	for _, in := range listsResident(d, others) {
		if in {
			t.Skip("the page cache keeps this filesystem's pages (tmpfs?): nothing to measure")
		}
	}
	gr, err := d.OpenGraphReader()
	if err != nil {
		t.Fatal(err)
	}
	defer gr.Close()
	var wg sync.WaitGroup
	for w := range 2 { // concurrent callers, as sampling threads are
		wg.Add(1)
		go func() {
			defer wg.Done()
			gr.Prefetch(nodes[w*len(nodes)/2 : (w+1)*len(nodes)/2])
		}()
	}
	wg.Wait()
	for i, in := range listsResident(d, nodes) {
		if !in {
			t.Fatalf("node %d's neighbour list is not in the page cache after Prefetch", nodes[i])
		}
	}
	missing := 0
	for _, in := range listsResident(d, others) {
		if !in {
			missing++
		}
	}
	if missing < len(others)/2 {
		t.Errorf("%d of %d other nodes' lists were read too: no random-access advice?", len(others)-missing, len(others))
	}
	if st := gr.Stats(); st.Reads == 0 || st.Bytes < int64(len(nodes))*pageSize {
		t.Errorf("stats %+v for %d nodes", st, len(nodes))
	}
	// Pages already in the page cache are not read again.
	before := gr.Stats()
	gr.Prefetch(nodes)
	if after := gr.Stats(); after != before {
		t.Errorf("a second Prefetch of the same nodes read again: %+v then %+v", before, after)
	}
	gr.Prefetch([]int32{int32(n - 1)}) // the last page of each file
}

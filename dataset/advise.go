package dataset

// AdviseGraphRandom tells the kernel that the graph's arrays (offsets and
// neighbour lists) are read at random, so that a page fault reads its page
// and no readahead window: for a graph larger than memory, sampled in a
// memory cgroup too small for it, the default readahead read 600 GB in 12
// minutes without finishing an epoch that takes 13-25 s and 1.2-2.4 GB
// with this advice. (Handing the kernel each hop's pages ahead with
// MADV_WILLNEED, tried too, gained nothing measurable and read more.) It
// is a hint: errors are ignored.
func (d *Dataset) AdviseGraphRandom() {
	if d.indptr != nil {
		d.indptr.AdviseRandom()
	}
	if d.indices != nil {
		d.indices.AdviseRandom()
	}
}

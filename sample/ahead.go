package sample

// aheadGroup is what drawAhead's kernels (aheadRanges, aheadMasks) read
// of a hop: the assembly reads the fields at fixed offsets (given beside
// each; TestAheadGroupLayout checks them).
type aheadGroup struct {
	dst    *int32  // 0: the destinations
	sp     *int64  // 8: their ranges kept for the next hop (2 a destination)
	indptr *int64  // 16: the graph's offsets
	span   *int64  // 24: the ring of ranges (2 a slot, aheadRing slots)
	seeds  *uint64 // 32: the group's Floyd seeds, by lane
	ds     *uint64 // 40: and degrees
	ms     *uint64 // 48: and masks
	ring   *uint64 // 56: the ring of masks (aheadRing slots)
	ip     *int64  // 64: the block's offsets
	keyIDs *int32  // 72: Config.KeyIDs, or nil
	hk     uint64  // 80: the hop's key
	done   int     // 88: destinations whose ranges sp holds already
	nodes  int     // 96: the graph's node count
	k      int     // 104: the fanout
	keep   int     // 112: 1 where the ranges are kept in sp
	ind    *int32  // 120: the graph's neighbour lists
}

// aheadRing is the slots of drawAhead's rings.
const aheadRing = 64

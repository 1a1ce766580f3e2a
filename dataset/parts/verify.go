package parts

import (
	"context"
	"fmt"
	"path/filepath"
)

// Verify checks a whole partitioned dataset: every part as OpenPart and
// dataset.Verify check it (arrays, every edge, the book's counts, halo
// maps, degrees), and across the parts that every node of the graph is
// owned by exactly one part and that every halo node is the node its
// owner holds at the local id the halo map names. progress, when not nil,
// is called before each part.
func Verify(ctx context.Context, dir string, progress func(part, parts int)) error {
	book, err := ReadBook(dir)
	if err != nil {
		return err
	}
	owner := make([]int32, book.NumNodes)
	for i := range owner {
		owner[i] = -1
	}
	globals := make([][]int32, book.NumParts) // each part's inner nodes' global ids
	halos := make([]struct{ global, parts, local []int32 }, book.NumParts)
	for p := range book.NumParts {
		if progress != nil {
			progress(p, book.NumParts)
		}
		part, err := OpenPart(dir, book, p)
		if err != nil {
			return err
		}
		err = part.Verify(ctx)
		if err == nil {
			pd := filepath.Join(dir, part.Info.Dir)
			n := part.NumInner()
			for v, g := range part.GlobalIDs[:n] {
				if owner[g] >= 0 {
					err = fmt.Errorf("%s: node %d (global %d) is also owned by part %d", pd, v, g, owner[g])
					break
				}
				owner[g] = int32(p)
			}
			globals[p] = append([]int32(nil), part.GlobalIDs[:n]...)
			h := &halos[p]
			h.global = append([]int32(nil), part.GlobalIDs[n:]...)
			h.parts, h.local = append([]int32(nil), part.HaloParts...), append([]int32(nil), part.HaloLocal...)
		}
		part.Close()
		if err != nil {
			return err
		}
	}
	for g, p := range owner {
		if p < 0 {
			return fmt.Errorf("%s: node %d of the graph is owned by no part", dir, g)
		}
	}
	for p, h := range halos {
		for i, g := range h.global {
			if q, l := h.parts[i], h.local[i]; globals[q][l] != g {
				return fmt.Errorf("%s: halo node %d (global %d) maps to local node %d of part %d, which is global %d",
					filepath.Join(dir, book.Parts[p].Dir), book.Parts[p].NumInner+i, g, l, q, globals[q][l])
			}
		}
	}
	return nil
}

package databench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// scipyPeer builds the same CSR arrays with scipy.sparse, the library
// users of Python build them with: the peer of graph.Build.
type scipyPeer struct {
	python string
	name   string // "scipy 1.10.1, one thread"
}

// peerScript times one build of the edge list in argv[1] (src.npy and
// dst.npy) with n = argv[2] nodes; argv[3] "sym" symmetrizes, drops self
// loops and duplicates (as graph.Build with Symmetrize, Dedup and
// RemoveSelfLoops), anything else keeps every edge as it is (scipy's
// coo_tocsr, the counting sort inside tocsr before it sums duplicates,
// which public calls cannot skip, then csr_sort_indices: graph.Build
// sorts every list). Rows are destinations, as in our CSC.
// Loading the arrays is not timed.
const peerScript = `
import json, sys, time
import numpy as np, scipy, scipy.sparse as sp
src = np.load(sys.argv[1] + "/src.npy"); dst = np.load(sys.argv[1] + "/dst.npy")
n, sym = int(sys.argv[2]), sys.argv[3] == "sym"
t = time.perf_counter()
if sym:
    keep = src != dst
    s, d = src[keep], dst[keep]
    a = sp.coo_matrix((np.ones(len(s), np.float32), (d, s)), shape=(n, n)).tocsr()
    a = (a + a.T).tocsr()
    edges = a.nnz
else:
    from scipy.sparse import _sparsetools
    m = len(src)
    indptr = np.empty(n + 1, np.int32); indices = np.empty(m, np.int32); data = np.empty(m, np.float32)
    _sparsetools.coo_tocsr(n, n, m, dst, src, np.ones(m, np.float32), indptr, indices, data)
    _sparsetools.csr_sort_indices(n, indptr, indices, data)
    edges = int(indptr[n])
secs = time.perf_counter() - t
print(json.dumps({"seconds": secs, "edges": int(edges)}))
`

// findPeer returns the peer run by python ("" picks python3 on PATH or
// /usr/bin/python3, whichever imports scipy; "none": no peer), or why
// there is none.
func findPeer(ctx context.Context, python string) (*scipyPeer, error) {
	if python == "none" {
		return nil, fmt.Errorf("--python none")
	}
	cands := []string{python}
	if python == "" {
		cands = nil
		if p, err := exec.LookPath("python3"); err == nil {
			cands = append(cands, p)
		}
		cands = append(cands, "/usr/bin/python3")
	}
	for _, py := range cands {
		out, err := exec.CommandContext(ctx, py, "-c", "import scipy, scipy.sparse._sparsetools; print(scipy.__version__)").Output()
		if err == nil {
			return &scipyPeer{python: py, name: "scipy " + strings.TrimSpace(string(out)) + ", one thread"}, nil
		}
	}
	return nil, fmt.Errorf("no Python interpreter imports scipy (tried %s): apt-get install python3-scipy, or give --python", strings.Join(cands, ", "))
}

// build runs one build of the edge list in dir on n nodes and returns its
// time and the edges it stored.
func (p *scipyPeer) build(ctx context.Context, dir string, n int, sym bool) (float64, int64, error) {
	mode := "as-is"
	if sym {
		mode = "sym"
	}
	cmd := exec.CommandContext(ctx, p.python, "-c", peerScript, filepath.Clean(dir), strconv.Itoa(n), mode)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return 0, 0, fmt.Errorf("databench: the scipy peer failed: %v: %s", err, strings.TrimSpace(stderr.String()))
	}
	var r struct {
		Seconds float64 `json:"seconds"`
		Edges   int64   `json:"edges"`
	}
	if err := json.Unmarshal(out, &r); err != nil || r.Seconds <= 0 {
		return 0, 0, fmt.Errorf("databench: the scipy peer printed %q", strings.TrimSpace(string(out)))
	}
	return r.Seconds, r.Edges, nil
}

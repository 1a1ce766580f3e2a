package importer

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unsafe"

	"github.com/graphmill/graphmill/dataset"
	"github.com/graphmill/graphmill/graph"
)

// OGB reads an Open Graph Benchmark node-property dataset in its raw
// layout, as extracted from the OGB zip (e.g. dir = ".../ogbn_arxiv"):
//
//	raw/edge.csv.gz          one "src,dst" line per edge
//	raw/node-feat.csv.gz     one comma-separated float row per node (optional)
//	raw/node-label.csv.gz    one integer per node; NaN = unlabelled (optional)
//	raw/num-node-list.csv.gz the node count (optional)
//	split/<split>/{train,valid,test}.csv.gz  one node id per line (optional)
//
// Files may also be uncompressed (.csv). split names the split directory;
// with "" the only sub-directory of split/ is used (an error if there are
// several). The node count comes from num-node-list, else from the feature
// or label rows, else from the largest edge id; all present sources must
// agree.
//
// Edges are kept as listed, with Build = {Dedup} and no symmetrization,
// like OGB (ogbn-arxiv is a directed citation graph); set
// Raw.Build.Symmetrize to train on the undirected graph, as most arxiv
// baselines do.
func OGB(dir, split string) (*dataset.Raw, error) {
	raw := filepath.Join(dir, "raw")
	r := &dataset.Raw{
		Name:   strings.ReplaceAll(filepath.Base(filepath.Clean(dir)), "_", "-"),
		Source: dir,
		Build:  graph.BuildOptions{Dedup: true},
	}
	// Node count.
	n := -1
	var nSource string
	setN := func(v int, source string) error {
		if n >= 0 && v != n {
			return fmt.Errorf("%s: %d nodes, but %s says %d", source, v, nSource, n)
		}
		n, nSource = v, source
		return nil
	}
	if path, ok := findCSV(raw, "num-node-list"); ok {
		v, err := readNumNodes(path)
		if err != nil {
			return nil, err
		}
		if err := setN(v, path); err != nil {
			return nil, err
		}
	}
	if path, ok := findCSV(raw, "node-feat"); ok {
		feats, dim, rows, err := readFeatures(path)
		if err != nil {
			return nil, err
		}
		if err := setN(rows, path); err != nil {
			return nil, err
		}
		r.Features, r.FeatureDim = feats, dim
	}
	if path, ok := findCSV(raw, "node-label"); ok {
		labels, classes, err := readLabels(path)
		if err != nil {
			return nil, err
		}
		if err := setN(len(labels), path); err != nil {
			return nil, err
		}
		r.Labels, r.NumClasses = labels, classes
	}
	edgePath, ok := findCSV(raw, "edge")
	if !ok {
		return nil, fmt.Errorf("ogb %s: missing file %s: %w", dir, filepath.Join(raw, "edge.csv.gz"), fs.ErrNotExist)
	}
	maxID, err := readOGBEdges(edgePath, r, n)
	if err != nil {
		return nil, err
	}
	if n < 0 {
		n = int(maxID + 1)
	}
	r.NumNodes = n
	if err := readOGBSplit(dir, split, r); err != nil {
		return nil, err
	}
	if err := validate(r); err != nil {
		return nil, fmt.Errorf("ogb %s: %w", dir, err)
	}
	return r, nil
}

// findCSV returns dir/name.csv.gz or dir/name.csv, whichever exists.
func findCSV(dir, name string) (string, bool) {
	for _, ext := range []string{".csv.gz", ".csv"} {
		p := filepath.Join(dir, name+ext)
		if _, err := os.Stat(p); err == nil {
			return p, true
		}
	}
	return "", false
}

// eachLine calls f for every line of the (possibly compressed) file path;
// errors are prefixed with the file name and line number.
func eachLine(path string, f func(line []byte) error) error {
	rc, err := openText(path)
	if err != nil {
		return err
	}
	defer rc.Close()
	return eachLineOf(rc, path, f)
}

func eachLineOf(rd io.Reader, name string, f func(line []byte) error) error {
	lr := newLineReader(rd)
	for {
		line, err := lr.next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: line %d: %w", name, lr.line+1, err)
		}
		if err := f(line); err != nil {
			return fmt.Errorf("%s: line %d: %w", name, lr.line, err)
		}
	}
}

// parseID parses a whole-line non-negative id below limit (limit < 0: no
// limit besides int32).
func parseID(b []byte, limit int) (int64, error) {
	i := skipSpace(b, 0)
	v, j, err := parseUint(b, i)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", quote(b), err)
	}
	if skipSpace(b, j) != len(b) {
		return 0, fmt.Errorf("%s: want one integer id", quote(b))
	}
	if v >= maxNodes || (limit >= 0 && v >= int64(limit)) {
		if limit < 0 {
			limit = maxNodes
		}
		return 0, fmt.Errorf("id %d out of range [0,%d)", v, limit)
	}
	return v, nil
}

func readNumNodes(path string) (int, error) {
	n := -1
	err := eachLine(path, func(line []byte) error {
		if skipSpace(line, 0) == len(line) {
			return nil
		}
		if n >= 0 {
			return fmt.Errorf("more than one node count (several graphs are not supported)")
		}
		v, err := parseID(line, -1)
		n = int(v)
		return err
	})
	if err == nil && n < 0 {
		err = fmt.Errorf("%s: no node count", path)
	}
	return n, err
}

func readFeatures(path string) (feats []float32, dim, rows int, err error) {
	dim = -1
	err = eachLine(path, func(line []byte) error {
		k := 0
		for i := 0; ; {
			end := len(line)
			if c := slices.Index(line[i:], ','); c >= 0 {
				end = i + c
			}
			tok := trimBlank(line[i:end])
			if len(tok) == 0 {
				return fmt.Errorf("empty feature in column %d", k+1)
			}
			v, perr := strconv.ParseFloat(unsafe.String(&tok[0], len(tok)), 32)
			if perr != nil || math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("feature %q in column %d is not a finite number", tok, k+1)
			}
			feats = append(feats, float32(v))
			k++
			if end == len(line) {
				break
			}
			i = end + 1
		}
		if dim < 0 {
			dim = k
		} else if k != dim {
			return fmt.Errorf("%d features, but earlier rows have %d", k, dim)
		}
		rows++
		if rows >= maxNodes {
			return fmt.Errorf("too many rows")
		}
		return nil
	})
	if dim < 0 {
		dim = 0
	}
	return feats, dim, rows, err
}

func trimBlank(b []byte) []byte {
	i, j := 0, len(b)
	for i < j && isSpace(b[i]) {
		i++
	}
	for j > i && isSpace(b[j-1]) {
		j--
	}
	return b[i:j]
}

// readLabels reads one label per line: an integer, a float with an
// integral value, or NaN (unlabelled, -1).
func readLabels(path string) ([]int32, int, error) {
	var labels []int32
	top := int64(-1)
	err := eachLine(path, func(line []byte) error {
		tok := trimBlank(line)
		if len(tok) == 0 {
			return fmt.Errorf("empty label (use NaN for unlabelled nodes)")
		}
		if strings.EqualFold(string(tok), "nan") {
			labels = append(labels, -1)
			return nil
		}
		if slices.Contains(tok, ',') {
			return fmt.Errorf("%s: several label columns (multi-task labels are not supported)", quote(tok))
		}
		v, perr := strconv.ParseFloat(unsafe.String(&tok[0], len(tok)), 64)
		if perr != nil || v != math.Trunc(v) {
			return fmt.Errorf("label %s is not an integer", quote(tok))
		}
		if v < 0 || v >= 1<<20 {
			return fmt.Errorf("label %s out of range [0,%d)", quote(tok), 1<<20)
		}
		labels = append(labels, int32(v))
		top = max(top, int64(v))
		if len(labels) >= maxNodes {
			return fmt.Errorf("too many rows")
		}
		return nil
	})
	return labels, int(top + 1), err
}

// readOGBEdges reads "src,dst" lines into r and returns the largest id.
func readOGBEdges(path string, r *dataset.Raw, n int) (int64, error) {
	maxID := int64(-1)
	err := eachLine(path, func(line []byte) error {
		i := skipSpace(line, 0)
		if i == len(line) {
			return fmt.Errorf("empty line")
		}
		u, i, err := parseUint(line, i)
		if err != nil {
			return fmt.Errorf("source %s: %w", quote(line), err)
		}
		i = skipSpace(line, i)
		if i == len(line) || line[i] != ',' {
			return fmt.Errorf("%s: want \"src,dst\"", quote(line))
		}
		v, i, err := parseUint(line, skipSpace(line, i+1))
		if err != nil {
			return fmt.Errorf("destination %s: %w", quote(line), err)
		}
		if skipSpace(line, i) != len(line) {
			return fmt.Errorf("%s: want \"src,dst\"", quote(line))
		}
		limit := int64(n)
		if n < 0 {
			limit = maxNodes
		}
		for _, x := range []int64{u, v} {
			if x >= limit {
				return fmt.Errorf("node id %d out of range [0,%d)", x, limit)
			}
		}
		r.Src = append(r.Src, int32(u))
		r.Dst = append(r.Dst, int32(v))
		maxID = max(maxID, u, v)
		return nil
	})
	return maxID, err
}

// readOGBSplit reads split/<name>/{train,valid,test}.csv.gz if split/
// exists.
func readOGBSplit(dir, name string, r *dataset.Raw) error {
	splitRoot := filepath.Join(dir, "split")
	entries, err := os.ReadDir(splitRoot)
	if errors.Is(err, fs.ErrNotExist) && name == "" {
		return nil // no split
	}
	if err != nil {
		return fmt.Errorf("ogb %s: %w", dir, err)
	}
	if name == "" {
		var subs []string
		for _, e := range entries {
			if e.IsDir() {
				subs = append(subs, e.Name())
			}
		}
		switch len(subs) {
		case 0:
			return nil
		case 1:
			name = subs[0]
		default:
			return fmt.Errorf("ogb %s: %s holds several splits %v; name one (--ogb-split)", dir, splitRoot, subs)
		}
	}
	sdir := filepath.Join(splitRoot, name)
	if st, err := os.Stat(sdir); err != nil || !st.IsDir() {
		return fmt.Errorf("ogb %s: no split directory %s", dir, sdir)
	}
	for _, s := range []struct {
		file string
		dst  *[]int32
	}{{"train", &r.Train}, {"valid", &r.Val}, {"test", &r.Test}} {
		path, ok := findCSV(sdir, s.file)
		if !ok {
			return fmt.Errorf("ogb %s: missing file %s: %w", dir, filepath.Join(sdir, s.file+".csv.gz"), fs.ErrNotExist)
		}
		ids := []int32{}
		err := eachLine(path, func(line []byte) error {
			if skipSpace(line, 0) == len(line) {
				return nil
			}
			v, err := parseID(line, r.NumNodes)
			ids = append(ids, int32(v))
			return err
		})
		if err != nil {
			return err
		}
		*s.dst = ids
	}
	return nil
}

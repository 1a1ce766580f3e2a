package importer

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/graphmill/graphmill/dataset"
	"github.com/graphmill/graphmill/graph"
)

// PlanetoidValCount is the number of validation nodes of the standard
// Planetoid split: the nodes right after the training nodes.
const PlanetoidValCount = 500

// Planetoid reads the original Planetoid files ind.<name>.{x,y,tx,ty,allx,
// ally,graph,test.index} from dir (as downloaded by PyG and DGL, e.g. name
// "cora", "citeseer" or "pubmed") and assembles them as PyG does:
//
//   - features = vstack(allx, tx), where tx row i belongs to node
//     test.index[i];
//   - labels are the argmax of the one-hot rows of ally and ty;
//   - train = 0..len(y)-1, val = the next 500 nodes, test = test.index
//     (sorted);
//   - edges are all adjacency-list entries of ind.<name>.graph in file
//     order, with Build = {Symmetrize, Dedup, RemoveSelfLoops} as in PyG.
//
// Node ids between len(allx) and max(test.index) that have no row in tx
// (15 isolated nodes in CiteSeer) get zero features like in PyG, but label
// -1 (unlabelled) instead of PyG's class 0, and are in no split.
func Planetoid(dir, name string) (*dataset.Raw, error) {
	r, err := planetoid(os.DirFS(dir), dir, name)
	if err != nil {
		return nil, err
	}
	r.Source = dir
	return r, nil
}

// PlanetoidFS is Planetoid reading the files from the root of fsys (for
// example an embed.FS sub-tree). Errors name the files relative to fsys.
func PlanetoidFS(fsys fs.FS, name string) (*dataset.Raw, error) {
	return planetoid(fsys, "", name)
}

// planetoidFile is one pickled Planetoid file after decoding.
type planetoidParts struct {
	x, tx, allx *csrMatrix
	y, ty, ally *ndarray
	src, dst    []int64
	testIndex   []int64
}

// planetoidMissing says what fsys (the directory dir) holds when it has
// no ind.NAME.* files: a mistyped name or directory (nil where there is
// nothing better to say than the missing file).
func planetoidMissing(fsys fs.FS, dir, name string) error {
	if _, err := fs.Stat(fsys, "."); err != nil {
		return fmt.Errorf("planetoid: no directory %s", dir)
	}
	found, _ := fs.Glob(fsys, "ind.*.graph")
	if len(found) == 0 {
		return nil
	}
	for i, f := range found {
		found[i] = strings.TrimSuffix(strings.TrimPrefix(f, "ind."), ".graph")
	}
	return fmt.Errorf("planetoid %s: no ind.%s.* files in %s; it holds %s", name, name, cmp.Or(dir, "."), strings.Join(found, ", "))
}

func planetoid(fsys fs.FS, dir, name string) (*dataset.Raw, error) {
	if name == "" || !fs.ValidPath(name) || path.Base(name) != name {
		return nil, fmt.Errorf("planetoid: invalid dataset name %q", name)
	}
	// PyG spells them "Cora", "CiteSeer", "PubMed"; the files are
	// ind.cora.* and so on.
	if _, err := fs.Stat(fsys, "ind."+name+".graph"); err != nil {
		if _, lerr := fs.Stat(fsys, "ind."+strings.ToLower(name)+".graph"); lerr == nil {
			name = strings.ToLower(name)
		} else if merr := planetoidMissing(fsys, dir, name); errors.Is(err, fs.ErrNotExist) && merr != nil {
			return nil, merr
		}
	}
	display := func(suffix string) string {
		f := "ind." + name + "." + suffix
		if dir == "" {
			return f
		}
		return filepath.Join(dir, f)
	}
	read := func(suffix string) ([]byte, error) {
		b, err := fs.ReadFile(fsys, "ind."+name+"."+suffix)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("planetoid %s: missing file %s: %w", name, display(suffix), err)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", display(suffix), err)
		}
		return b, nil
	}
	var p planetoidParts
	// Read every file first so that a missing one is reported by name
	// before any decoding error.
	files := map[string][]byte{}
	for _, s := range []string{"x", "y", "tx", "ty", "allx", "ally", "graph", "test.index"} {
		b, err := read(s)
		if err != nil {
			return nil, err
		}
		files[s] = b
	}
	var err error
	for _, s := range []struct {
		suffix string
		dst    **csrMatrix
	}{{"x", &p.x}, {"tx", &p.tx}, {"allx", &p.allx}} {
		if *s.dst, err = decodeCSRPickle(files[s.suffix]); err != nil {
			return nil, fmt.Errorf("%s: %w", display(s.suffix), err)
		}
	}
	for _, s := range []struct {
		suffix string
		dst    **ndarray
	}{{"y", &p.y}, {"ty", &p.ty}, {"ally", &p.ally}} {
		if *s.dst, err = decodeNDArrayPickle(files[s.suffix]); err != nil {
			return nil, fmt.Errorf("%s: %w", display(s.suffix), err)
		}
		if len((*s.dst).shape) != 2 {
			return nil, fmt.Errorf("%s: label array has shape %v, want 2-D one-hot", display(s.suffix), (*s.dst).shape)
		}
	}
	if p.src, p.dst, err = decodeGraphPickle(files["graph"]); err != nil {
		return nil, fmt.Errorf("%s: %w", display("graph"), err)
	}
	if p.testIndex, err = parseIndexFile(files["test.index"]); err != nil {
		return nil, fmt.Errorf("%s: %w", display("test.index"), err)
	}
	r, err := assemblePlanetoid(&p, display)
	if err != nil {
		return nil, err
	}
	r.Name = name
	if err := validate(r); err != nil {
		return nil, fmt.Errorf("planetoid %s: %w", name, err)
	}
	return r, nil
}

func decodeCSRPickle(b []byte) (*csrMatrix, error) {
	v, err := decodePickle(b)
	if err != nil {
		return nil, err
	}
	return asCSR(v)
}

func decodeNDArrayPickle(b []byte) (*ndarray, error) {
	v, err := decodePickle(b)
	if err != nil {
		return nil, err
	}
	return asNDArray(v)
}

func decodeGraphPickle(b []byte) (src, dst []int64, err error) {
	v, err := decodePickle(b)
	if err != nil {
		return nil, nil, err
	}
	return asGraph(v)
}

// parseIndexFile parses a text file of one non-negative id per line.
func parseIndexFile(b []byte) ([]int64, error) {
	var out []int64
	for ln, line := range bytes.Split(b, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		v, err := strconv.ParseInt(string(line), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("line %d: %q is not an integer id", ln+1, line)
		}
		if v < 0 || v >= maxNodes {
			return nil, fmt.Errorf("line %d: id %d out of range [0,%d)", ln+1, v, maxNodes)
		}
		out = append(out, v)
	}
	return out, nil
}

// oneHotLabels converts one-hot rows to class ids; an all-zero row is -1.
func oneHotLabels(a *ndarray, dst []int32) error {
	rows, cols := a.shape[0], a.shape[1]
	for r := 0; r < rows; r++ {
		label := int32(-1)
		for c := 0; c < cols; c++ {
			v := a.float(a.index2(r, c))
			switch {
			case v == 0:
			case v == 1 && label == -1:
				label = int32(c)
			default:
				return fmt.Errorf("row %d is not one-hot (column %d = %v)", r, c, v)
			}
		}
		dst[r] = label
	}
	return nil
}

func assemblePlanetoid(p *planetoidParts, display func(string) string) (*dataset.Raw, error) {
	nAll, f := p.allx.rows, p.allx.cols
	nTrain, nTest := p.x.rows, p.tx.rows
	if p.x.cols != f {
		return nil, fmt.Errorf("%s: %d feature columns, but allx has %d", display("x"), p.x.cols, f)
	}
	if p.tx.cols != f {
		return nil, fmt.Errorf("%s: %d feature columns, but allx has %d", display("tx"), p.tx.cols, f)
	}
	c := p.ally.shape[1]
	for _, s := range []struct {
		suffix string
		a      *ndarray
		rows   int
	}{{"y", p.y, nTrain}, {"ty", p.ty, nTest}, {"ally", p.ally, nAll}} {
		if s.a.shape[0] != s.rows || s.a.shape[1] != c {
			return nil, fmt.Errorf("%s: label shape %v, want (%d, %d) to match the features", display(s.suffix), s.a.shape, s.rows, c)
		}
	}
	if c == 0 {
		return nil, fmt.Errorf("%s: zero classes", display("ally"))
	}
	if len(p.testIndex) != nTest {
		return nil, fmt.Errorf("%s: %d ids, but tx has %d rows", display("test.index"), len(p.testIndex), nTest)
	}
	if nTrain+PlanetoidValCount > nAll {
		return nil, fmt.Errorf("%s: %d training rows + %d validation nodes exceed the %d rows of allx", display("y"), nTrain, PlanetoidValCount, nAll)
	}
	n, maxLine := nAll, 0
	for i, t := range p.testIndex {
		if t < int64(nAll) {
			return nil, fmt.Errorf("%s: line %d: test id %d overlaps the %d rows of allx", display("test.index"), i+1, t, nAll)
		}
		if int(t)+1 > n {
			n, maxLine = int(t)+1, i+1
		}
	}
	// Test ids follow allx's rows, with a few gaps at most (CiteSeer: 15
	// missing in 1,015). A range far beyond the rows present is a damaged
	// file, which would otherwise give millions of empty nodes.
	if span := n - nAll; span > 2*nTest+16 {
		return nil, fmt.Errorf("%s: line %d: test id %d is far beyond the rows present (allx %d + tx %d rows: test ids should lie in about [%d, %d)); the file is damaged",
			display("test.index"), maxLine, n-1, nAll, nTest, nAll, nAll+nTest)
	}
	if n > maxNodes || f > 0 && n > maxDenseFeatures/f {
		return nil, fmt.Errorf("%s: %d nodes x %d features is too large", display("test.index"), n, f)
	}
	r := &dataset.Raw{
		NumNodes:   n,
		FeatureDim: f,
		Features:   make([]float32, n*f),
		NumClasses: c,
		Labels:     make([]int32, n),
		Build:      graph.BuildOptions{Symmetrize: true, Dedup: true, SelfLoops: graph.RemoveSelfLoops},
	}
	p.allx.denseInto(r.Features, 0)
	if err := oneHotLabels(p.ally, r.Labels[:nAll]); err != nil {
		return nil, fmt.Errorf("%s: %w", display("ally"), err)
	}
	// Nodes in the test range without a tx row stay zero and unlabelled.
	for i := nAll; i < n; i++ {
		r.Labels[i] = -1
	}
	testLabels := make([]int32, nTest)
	if err := oneHotLabels(p.ty, testLabels); err != nil {
		return nil, fmt.Errorf("%s: %w", display("ty"), err)
	}
	seen := make([]bool, n)
	for i, t := range p.testIndex {
		if seen[t] {
			return nil, fmt.Errorf("%s: line %d: test id %d repeated", display("test.index"), i+1, t)
		}
		seen[t] = true
		r.Labels[t] = testLabels[i]
		row := r.Features[int(t)*f : int(t+1)*f]
		for k := p.tx.indptr[i]; k < p.tx.indptr[i+1]; k++ {
			row[p.tx.indices[k]] = p.tx.data[k]
		}
	}
	// y must be the first rows of ally and x the first rows of allx.
	trainLabels := make([]int32, nTrain)
	if err := oneHotLabels(p.y, trainLabels); err != nil {
		return nil, fmt.Errorf("%s: %w", display("y"), err)
	}
	for i, l := range trainLabels {
		if l != r.Labels[i] {
			return nil, fmt.Errorf("%s: row %d has label %d but ally row %d has %d", display("y"), i, l, i, r.Labels[i])
		}
	}
	r.Train = make([]int32, nTrain)
	for i := range r.Train {
		r.Train[i] = int32(i)
	}
	r.Val = make([]int32, PlanetoidValCount)
	for i := range r.Val {
		r.Val[i] = int32(nTrain + i)
	}
	// Every node of the standard split needs its label: an all-zero
	// one-hot row, named here by file and row.
	for i, l := range trainLabels {
		if l < 0 {
			return nil, fmt.Errorf("%s: row %d is all zero, but node %d is in the standard training split", display("y"), i, i)
		}
	}
	for _, v := range r.Val {
		if r.Labels[v] < 0 {
			return nil, fmt.Errorf("%s: row %d is all zero, but node %d is in the standard validation split (nodes %d..%d)", display("ally"), v, v, nTrain, nTrain+PlanetoidValCount-1)
		}
	}
	for i, l := range testLabels {
		if l < 0 {
			return nil, fmt.Errorf("%s: row %d is all zero, but line %d of %s names node %d as a test node", display("ty"), i, i+1, display("test.index"), p.testIndex[i])
		}
	}
	r.Test = make([]int32, nTest)
	for i, t := range p.testIndex {
		r.Test[i] = int32(t)
	}
	slices.Sort(r.Test)
	r.Src = make([]int32, len(p.src))
	r.Dst = make([]int32, len(p.dst))
	for i := range p.src {
		s, d := p.src[i], p.dst[i]
		if s < 0 || s >= int64(n) {
			return nil, fmt.Errorf("%s: node id %d out of range [0,%d)", display("graph"), s, n)
		}
		if d < 0 || d >= int64(n) {
			return nil, fmt.Errorf("%s: neighbour id %d of node %d out of range [0,%d)", display("graph"), d, s, n)
		}
		r.Src[i], r.Dst[i] = int32(s), int32(d)
	}
	return r, nil
}

package importer

import (
	"archive/zip"
	"encoding/binary"
	"fmt"
	"io"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/graphmill/graphmill/dataset"
	"github.com/graphmill/graphmill/graph"
)

// maxDenseFeatures bounds NumNodes*FeatureDim of a dense feature matrix
// built from a sparse one (2^31 float32 values = 8 GiB). Fuzz tests lower
// it so that a hostile shape cannot exhaust memory.
var maxDenseFeatures = 1 << 31

// npyArray is a parsed .npy file.
type npyArray struct {
	descr   string // e.g. "<f4", "|i1", "<U7", "|O"
	fortran bool
	shape   []int
	data    []byte // the raw values after the header
}

// parseNPY parses a .npy file (format versions 1.0, 2.0 and 3.0). It checks
// that the data length matches the shape and dtype; object arrays (which
// hold pickles) are reported as such.
func parseNPY(b []byte) (*npyArray, error) { return parseNPYAt(b, false) }

// parseNPYAt is parseNPY; with headOnly it parses the header alone (b may
// be the file's first bytes), for shapes and dtype.
func parseNPYAt(b []byte, headOnly bool) (*npyArray, error) {
	const magic = "\x93NUMPY"
	if len(b) < 10 || string(b[:6]) != magic {
		return nil, fmt.Errorf("not a .npy file (bad magic)")
	}
	var hlen, off int
	switch b[6] {
	case 1:
		hlen, off = int(binary.LittleEndian.Uint16(b[8:10])), 10
	case 2, 3:
		if len(b) < 12 {
			return nil, fmt.Errorf("truncated .npy header")
		}
		h := binary.LittleEndian.Uint32(b[8:12])
		if h > uint32(len(b)) {
			return nil, fmt.Errorf("truncated .npy header: %d bytes announced, %d present", h, len(b)-12)
		}
		hlen, off = int(h), 12
	default:
		return nil, fmt.Errorf("unsupported .npy format version %d.%d", b[6], b[7])
	}
	if off+hlen > len(b) {
		return nil, fmt.Errorf("truncated .npy header: %d bytes announced, %d present", hlen, len(b)-off)
	}
	a := &npyArray{}
	if err := parseNPYHeader(string(b[off:off+hlen]), a); err != nil {
		return nil, fmt.Errorf(".npy header: %w", err)
	}
	a.data = b[off+hlen:]
	if headOnly {
		return a, nil
	}
	if a.descr == "|O" || a.descr == "O" {
		return a, nil // holds a pickle; callers skip or reject it
	}
	size, err := descrItemSize(a.descr)
	if err != nil {
		return nil, err
	}
	count := 1
	for _, s := range a.shape {
		if s != 0 && count > math.MaxInt/s/max(size, 1) {
			return nil, fmt.Errorf("shape %v too large", a.shape)
		}
		count *= s
	}
	if want := count * size; len(a.data) != want {
		if len(a.data) < want {
			return nil, fmt.Errorf("truncated .npy data: %d bytes, want %d for shape %v of %s", len(a.data), want, a.shape, a.descr)
		}
		return nil, fmt.Errorf(".npy data has %d bytes, want %d for shape %v of %s", len(a.data), want, a.shape, a.descr)
	}
	return a, nil
}

// descrItemSize returns the bytes per element of a dtype descr such as
// "<f4" or "<U7" (4 bytes per character).
func descrItemSize(d string) (int, error) {
	if len(d) < 2 {
		return 0, fmt.Errorf("unsupported dtype %q", d)
	}
	body := d
	switch d[0] {
	case '<', '>', '|', '=':
		body = d[1:]
	}
	if len(body) < 2 {
		return 0, fmt.Errorf("unsupported dtype %q", d)
	}
	n, err := strconv.Atoi(body[1:])
	if err != nil || n <= 0 || n > 1<<20 {
		return 0, fmt.Errorf("unsupported dtype %q", d)
	}
	switch body[0] {
	case 'U':
		return 4 * n, nil
	case 'S', 'V':
		return n, nil
	}
	if _, ok := dtypeKinds[body]; !ok {
		return 0, fmt.Errorf("unsupported dtype %q", d)
	}
	return n, nil
}

// numeric converts the array to an ndarray of a numeric dtype.
func (a *npyArray) numeric() (*ndarray, error) {
	if a.descr == "|O" || a.descr == "O" {
		return nil, fmt.Errorf("dtype object (pickled data) is not supported")
	}
	body, big := a.descr, false
	switch a.descr[0] {
	case '<', '|', '=':
		body = a.descr[1:]
	case '>':
		body, big = a.descr[1:], true
	}
	k, ok := dtypeKinds[body]
	if !ok {
		return nil, fmt.Errorf("dtype %s is not numeric", a.descr)
	}
	return &ndarray{shape: a.shape, kind: k, big: big && k.size > 1, fort: a.fortran, raw: a.data}, nil
}

// parseNPYHeader parses the Python dict literal of a .npy header, e.g.
// {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }.
func parseNPYHeader(h string, a *npyArray) error {
	p := &pyLiteral{s: strings.TrimRight(h, " \n\x00")}
	if !p.eat('{') {
		return fmt.Errorf("header %q is not a dict", truncate(h))
	}
	seen := map[string]bool{}
	for {
		if p.eat('}') {
			break
		}
		key, err := p.str()
		if err != nil {
			return err
		}
		if !p.eat(':') {
			return fmt.Errorf("want ':' after %q", key)
		}
		switch key {
		case "descr":
			if a.descr, err = p.str(); err != nil {
				return fmt.Errorf("descr: %w (structured dtypes are not supported)", err)
			}
		case "fortran_order":
			if a.fortran, err = p.boolean(); err != nil {
				return fmt.Errorf("fortran_order: %w", err)
			}
		case "shape":
			if a.shape, err = p.tuple(); err != nil {
				return fmt.Errorf("shape: %w", err)
			}
		default:
			return fmt.Errorf("unknown key %q", key)
		}
		seen[key] = true
		if !p.eat(',') {
			if !p.eat('}') {
				return fmt.Errorf("want ',' or '}' at offset %d", p.i)
			}
			break
		}
	}
	if p.skip(); p.i != len(p.s) {
		return fmt.Errorf("trailing data after the header dict")
	}
	for _, k := range []string{"descr", "fortran_order", "shape"} {
		if !seen[k] {
			return fmt.Errorf("no %q", k)
		}
	}
	return nil
}

func truncate(s string) string {
	if len(s) > 60 {
		return s[:60] + "..."
	}
	return s
}

// pyLiteral is a tiny scanner of the Python literals in .npy headers.
type pyLiteral struct {
	s string
	i int
}

func (p *pyLiteral) skip() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t' || p.s[p.i] == '\n') {
		p.i++
	}
}

func (p *pyLiteral) eat(c byte) bool {
	p.skip()
	if p.i < len(p.s) && p.s[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *pyLiteral) str() (string, error) {
	p.skip()
	if p.i >= len(p.s) || (p.s[p.i] != '\'' && p.s[p.i] != '"') {
		return "", fmt.Errorf("want a string at offset %d", p.i)
	}
	q := p.s[p.i]
	end := strings.IndexByte(p.s[p.i+1:], q)
	if end < 0 {
		return "", fmt.Errorf("unterminated string")
	}
	v := p.s[p.i+1 : p.i+1+end]
	if strings.IndexByte(v, '\\') >= 0 {
		return "", fmt.Errorf("escapes in strings are not supported")
	}
	p.i += end + 2
	return v, nil
}

func (p *pyLiteral) boolean() (bool, error) {
	p.skip()
	for _, w := range []string{"True", "False"} {
		if strings.HasPrefix(p.s[p.i:], w) {
			p.i += len(w)
			return w == "True", nil
		}
	}
	return false, fmt.Errorf("want True or False at offset %d", p.i)
}

func (p *pyLiteral) tuple() ([]int, error) {
	if !p.eat('(') {
		return nil, fmt.Errorf("want a tuple at offset %d", p.i)
	}
	out := []int{}
	for {
		if p.eat(')') {
			return out, nil
		}
		p.skip()
		j := p.i
		for j < len(p.s) && p.s[j] >= '0' && p.s[j] <= '9' {
			j++
		}
		v, err := strconv.Atoi(p.s[p.i:j])
		if err != nil || v > maxNodes*4 {
			return nil, fmt.Errorf("bad dimension %q", p.s[p.i:j])
		}
		p.i = j
		if p.i < len(p.s) && p.s[p.i] == 'L' { // Python 2 long
			p.i++
		}
		out = append(out, v)
		if len(out) > 32 {
			return nil, fmt.Errorf("more than 32 dimensions")
		}
		if !p.eat(',') {
			if !p.eat(')') {
				return nil, fmt.Errorf("want ',' or ')' at offset %d", p.i)
			}
			return out, nil
		}
	}
}

// NPZOptions controls NPZ. The zero value imports the data without a split.
type NPZOptions struct {
	// RandomSplit makes a random split of the labelled nodes, as in
	// Shchur et al. ("Pitfalls of GNN evaluation"): TrainPerClass nodes of
	// every class for training, then Val nodes for validation, then Test
	// nodes (all remaining labelled nodes when Test is 0) for testing.
	RandomSplit bool
	// TrainPerClass is the number of training nodes per class (default 20).
	TrainPerClass int
	// Val is the total number of validation nodes (default 500).
	Val int
	// Test is the number of test nodes; 0 means all remaining labelled
	// nodes.
	Test int
	// Seed seeds the split: the same seed gives the same split.
	Seed uint64
	// Name is stored in Raw.Name (default: the file name without .npz).
	Name string
}

// NPZ reads a graph stored as a NumPy .npz archive in the style of
// shchur/gnn-benchmark: the scipy CSR components adj_data, adj_indices,
// adj_indptr and adj_shape of the adjacency matrix, optionally attr_* for
// the node features and labels (1-D integer array, -1 = unlabelled) with
// class_names. The "SparseGraph" naming of klicperajo/ppnp (adj_matrix.data,
// attr_matrix.indices, ...) and a dense 2-D attr_matrix are accepted too;
// members holding pickled objects are never read.
//
// Edge i->j is the stored entry (i, j) of the adjacency matrix; the weights
// are kept unless they are all 1. Build is {Symmetrize, Dedup,
// KeepSelfLoops}: these adjacency matrices are meant as undirected graphs
// but do not store both directions of every edge.
func NPZ(path string, opts NPZOptions) (*dataset.Raw, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if opts.Name == "" {
		opts.Name = baseName(path)
	}
	return ReadNPZ(f, st.Size(), path, opts)
}

// ReadNPZ is NPZ reading the archive from r (size bytes); name is used in
// errors and as Raw.Source.
func ReadNPZ(r io.ReaderAt, size int64, name string, opts NPZOptions) (*dataset.Raw, error) {
	raw, err := readNPZ(r, size, name, opts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return raw, nil
}

func readNPZ(r io.ReaderAt, size int64, name string, opts NPZOptions) (*dataset.Raw, error) {
	z, err := zip.NewReader(r, size)
	if err != nil {
		return nil, fmt.Errorf("not a .npz (zip) archive: %w", err)
	}
	members := map[string]*zip.File{}
	for _, f := range z.File {
		members[strings.TrimSuffix(f.Name, ".npy")] = f
	}
	cache := map[string]*npyArray{}
	// read reads member key's first limit bytes (all of it: -1) and
	// parses them with parse, wrapping errors with the member's name.
	read := func(key string, limit int64, parse func([]byte) (*npyArray, error)) (*npyArray, error) {
		f, ok := members[key]
		if !ok {
			return nil, fmt.Errorf("no member %s.npy: %w", key, fs.ErrNotExist)
		}
		rc, err := f.Open()
		if err != nil {
			return nil, fmt.Errorf("%s.npy: %w", key, err)
		}
		defer rc.Close()
		var b []byte
		if limit < 0 {
			b, err = io.ReadAll(io.LimitReader(rc, 1<<40))
		} else {
			b = make([]byte, min(f.UncompressedSize64, uint64(limit)))
			var k int
			k, err = io.ReadFull(rc, b)
			b = b[:k]
			if err == io.ErrUnexpectedEOF {
				err = nil
			}
		}
		if err != nil {
			return nil, fmt.Errorf("%s.npy: %w", key, err)
		}
		a, err := parse(b)
		if err != nil {
			return nil, fmt.Errorf("%s.npy: %w", key, err)
		}
		return a, nil
	}
	load := func(key string) (*npyArray, error) {
		if a, ok := cache[key]; ok {
			return a, nil
		}
		a, err := read(key, -1, parseNPY)
		if err == nil {
			cache[key] = a
		}
		return a, err
	}
	has := func(key string) bool { _, ok := members[key]; return ok }
	// peek reads a member's header alone: a CSR matrix's arrays are
	// checked against each other before any is decompressed (a 585 KB
	// archive declaring 150M entries of data beside 4 indices took 1.3 GB
	// before it was refused).
	peek := func(key string) (*npyArray, error) {
		if a, ok := cache[key]; ok {
			return a, nil
		}
		return read(key, 1<<17, func(b []byte) (*npyArray, error) { return parseNPYAt(b, true) })
	}

	adj, err := loadCSR(load, peek, has, "adj")
	if err != nil {
		return nil, err
	}
	if adj == nil {
		return nil, fmt.Errorf("no adjacency matrix (adj_data/adj_indices/adj_indptr/adj_shape or adj_matrix.*)")
	}
	if adj.rows != adj.cols {
		return nil, fmt.Errorf("adjacency matrix shape (%d,%d) is not square", adj.rows, adj.cols)
	}
	n := adj.rows
	out := &dataset.Raw{
		Name:     opts.Name,
		Source:   name,
		NumNodes: n,
		Src:      make([]int32, len(adj.indices)),
		Dst:      make([]int32, len(adj.indices)),
		Build:    graph.BuildOptions{Symmetrize: true, Dedup: true, SelfLoops: graph.KeepSelfLoops},
	}
	weighted := false
	for row := 0; row < n; row++ {
		for k := adj.indptr[row]; k < adj.indptr[row+1]; k++ {
			out.Src[k], out.Dst[k] = int32(row), adj.indices[k]
			weighted = weighted || adj.data[k] != 1
		}
	}
	if weighted {
		out.EdgeWeights = adj.data
	}

	attr, err := loadCSR(load, peek, has, "attr")
	if err != nil {
		return nil, err
	}
	switch {
	case attr != nil:
		if attr.rows != n {
			return nil, fmt.Errorf("attribute matrix has %d rows for %d nodes", attr.rows, n)
		}
		if attr.cols > 0 && n > maxDenseFeatures/attr.cols {
			return nil, fmt.Errorf("dense features of %d x %d are too large", n, attr.cols)
		}
		out.FeatureDim = attr.cols
		out.Features = make([]float32, n*attr.cols)
		attr.denseInto(out.Features, 0)
	case has("attr_matrix"):
		a, err := load("attr_matrix")
		if err != nil {
			return nil, err
		}
		x, err := a.numeric()
		if err != nil {
			return nil, fmt.Errorf("attr_matrix.npy: %w", err)
		}
		if len(x.shape) != 2 || x.shape[0] != n {
			return nil, fmt.Errorf("attr_matrix.npy: shape %v, want (%d, features)", x.shape, n)
		}
		out.FeatureDim = x.shape[1]
		if out.FeatureDim > 0 {
			out.Features = make([]float32, n*out.FeatureDim)
			for i := 0; i < n; i++ {
				for j := 0; j < out.FeatureDim; j++ {
					out.Features[i*out.FeatureDim+j] = float32(x.float(x.index2(i, j)))
				}
			}
		}
	}
	if out.FeatureDim == 0 {
		out.Features = nil
	}
	for i, v := range out.Features {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return nil, fmt.Errorf("attribute of node %d, column %d is %v", i/out.FeatureDim, i%out.FeatureDim, v)
		}
	}

	if has("labels") {
		if err := npzLabels(load, has, out); err != nil {
			return nil, err
		}
	} else if has("labels_data") || has("labels.data") {
		return nil, fmt.Errorf("sparse (multi-label) labels are not supported")
	}
	if opts.RandomSplit {
		if out.Labels == nil {
			return nil, fmt.Errorf("random split requested but the archive has no labels")
		}
		if err := randomSplit(out, opts); err != nil {
			return nil, err
		}
	}
	if err := validate(out); err != nil {
		return nil, err
	}
	return out, nil
}

// loadCSR loads the CSR matrix <prefix>_{data,indices,indptr,shape} or
// <prefix>_matrix.{...}; it returns nil, nil when neither is present.
func loadCSR(load, peek func(string) (*npyArray, error), has func(string) bool, prefix string) (*csrMatrix, error) {
	var sep string
	switch {
	case has(prefix + "_data"):
		sep = prefix + "_"
	case has(prefix + "_matrix.data"):
		sep = prefix + "_matrix."
	default:
		return nil, nil
	}
	// Shapes first, from the headers: data and indices as long as each
	// other, before either is read (object arrays, pickles, are refused
	// by load).
	lens := [2]int{-1, -1}
	for i, k := range []string{"data", "indices"} {
		a, err := peek(sep + k)
		if err != nil {
			return nil, err
		}
		if a.descr == "|O" || a.descr == "O" {
			lens = [2]int{}
			break
		}
		if len(a.shape) != 1 {
			return nil, fmt.Errorf("%s.npy: shape %v, want 1-D", sep+k, a.shape)
		}
		lens[i] = a.shape[0]
	}
	if lens[0] != lens[1] {
		return nil, fmt.Errorf("%s* CSR matrix: data has %d entries but indices has %d", sep, lens[0], lens[1])
	}
	parts := map[string]*ndarray{}
	for _, k := range []string{"data", "indices", "indptr", "shape"} {
		a, err := load(sep + k)
		if err != nil {
			return nil, err
		}
		x, err := a.numeric()
		if err != nil {
			return nil, fmt.Errorf("%s.npy: %w", sep+k, err)
		}
		if len(x.shape) != 1 {
			return nil, fmt.Errorf("%s.npy: shape %v, want 1-D", sep+k, x.shape)
		}
		parts[k] = x
	}
	sh := parts["shape"]
	if sh.len() != 2 || sh.kind.kind == 'f' {
		return nil, fmt.Errorf("%sshape.npy: want 2 integers, got %d values of %s", sep, sh.len(), sh.dtypeName())
	}
	rows, ok1 := sh.int(0)
	cols, ok2 := sh.int(1)
	if !ok1 || !ok2 || rows < 0 || cols < 0 || rows > maxNodes || cols > maxNodes {
		return nil, fmt.Errorf("%sshape.npy: shape (%d,%d) out of range", sep, rows, cols)
	}
	m, err := newCSR(int(rows), int(cols), parts["data"], parts["indices"], parts["indptr"])
	if err != nil {
		return nil, fmt.Errorf("%s* CSR matrix: %w", sep, err)
	}
	return m, nil
}

func npzLabels(load func(string) (*npyArray, error), has func(string) bool, out *dataset.Raw) error {
	a, err := load("labels")
	if err != nil {
		return err
	}
	x, err := a.numeric()
	if err != nil {
		return fmt.Errorf("labels.npy: %w", err)
	}
	if x.kind.kind == 'f' || x.kind.kind == 'b' {
		return fmt.Errorf("labels.npy: dtype %s, want an integer type", a.descr)
	}
	if len(x.shape) != 1 || x.shape[0] != out.NumNodes {
		return fmt.Errorf("labels.npy: shape %v, want (%d,)", x.shape, out.NumNodes)
	}
	classes := -1 // unknown
	if has("class_names") {
		c, err := load("class_names")
		if err == nil && len(c.shape) == 1 {
			classes = c.shape[0]
		}
	}
	out.Labels = make([]int32, out.NumNodes)
	top := int64(-1)
	for i := range out.Labels {
		v, ok := x.int(i)
		if !ok || v < -1 || v >= maxNodes || (classes >= 0 && v >= int64(classes)) {
			limit := "(-1 = unlabelled)"
			if classes >= 0 {
				limit = fmt.Sprintf("[0,%d) given by class_names, or -1 for unlabelled", classes)
			}
			return fmt.Errorf("labels.npy: labels[%d]=%d out of range %s", i, v, limit)
		}
		out.Labels[i] = int32(v)
		top = max(top, v)
	}
	out.NumClasses = int(top + 1)
	if classes >= 0 {
		out.NumClasses = classes
	}
	return nil
}

// randomSplit fills Train, Val and Test of r from its labels.
func randomSplit(r *dataset.Raw, opts NPZOptions) error {
	perClass, val, test := opts.TrainPerClass, opts.Val, opts.Test
	if perClass == 0 {
		perClass = 20
	}
	if val == 0 {
		val = 500
	}
	if perClass < 0 || val < 0 || test < 0 {
		return fmt.Errorf("negative split size (train per class %d, val %d, test %d)", perClass, val, test)
	}
	rng := rand.New(rand.NewPCG(opts.Seed, 0x6772617068))
	byClass := make([][]int32, r.NumClasses)
	for v, l := range r.Labels {
		if l >= 0 {
			byClass[l] = append(byClass[l], int32(v))
		}
	}
	var rest []int32
	for c, nodes := range byClass {
		if len(nodes) < perClass {
			return fmt.Errorf("random split: class %d has %d labelled nodes, fewer than %d per class", c, len(nodes), perClass)
		}
		rng.Shuffle(len(nodes), func(i, j int) { nodes[i], nodes[j] = nodes[j], nodes[i] })
		r.Train = append(r.Train, nodes[:perClass]...)
		rest = append(rest, nodes[perClass:]...)
	}
	slices.Sort(rest) // independent of class order before shuffling
	rng.Shuffle(len(rest), func(i, j int) { rest[i], rest[j] = rest[j], rest[i] })
	if val > len(rest) {
		return fmt.Errorf("random split: %d validation nodes requested, %d labelled nodes left", val, len(rest))
	}
	r.Val = slices.Clone(rest[:val])
	rest = rest[val:]
	if test == 0 {
		test = len(rest)
	}
	if test > len(rest) {
		return fmt.Errorf("random split: %d test nodes requested, %d labelled nodes left", test, len(rest))
	}
	r.Test = slices.Clone(rest[:test])
	for _, s := range [][]int32{r.Train, r.Val, r.Test} {
		slices.Sort(s)
	}
	return nil
}

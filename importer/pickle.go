package importer

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
	"strings"
	"unicode/utf8"

	"github.com/nlpodyssey/gopickle/pickle"
	"github.com/nlpodyssey/gopickle/types"

	"github.com/graphmill/graphmill/internal/half"
)

// This file decodes the Python 2 pickles of the Planetoid files with
// gopickle. Only the handful of classes those files use are mapped; any other
// global makes decoding fail, so a pickle can never construct anything else.

// scanPickle walks the opcode stream of a pickle without executing it and
// checks that every length-prefixed argument fits in the data and that the
// stream ends with STOP. gopickle allocates a length-prefixed argument
// before reading it, so without this check a 12-byte input could ask for
// gigabytes.
func scanPickle(data []byte) error {
	p := 0
	need := func(k uint64) error {
		if k > uint64(len(data)-p) {
			return fmt.Errorf("truncated pickle: opcode at offset %d needs %d more bytes, %d left", p, k, len(data)-p)
		}
		return nil
	}
	line := func() error {
		i := bytes.IndexByte(data[p:], '\n')
		if i < 0 {
			return fmt.Errorf("truncated pickle: unterminated text argument at offset %d", p)
		}
		p += i + 1
		return nil
	}
	for p < len(data) {
		op := data[p]
		p++
		var err error
		switch op {
		case '.': // STOP
			return nil
		case '(', '0', '1', '2', 'N', 'R', 'a', 'b', 'd', '}', 'e', 'l', ']', 'o', 's', 't', ')', 'u',
			0x81, 0x85, 0x86, 0x87, 0x88, 0x89, 0x8f, 0x90, 0x91, 0x92, 0x93, 0x94, 0x97, 0x98:
		case 'I', 'L', 'F', 'S', 'V', 'P', 'g', 'p':
			err = line()
		case 'c', 'i':
			if err = line(); err == nil {
				err = line()
			}
		case 'K', 'h', 'q', 0x80, 0x82:
			err = need(1)
			p += 1
		case 'M', 0x83:
			err = need(2)
			p += 2
		case 'J', 'j', 'r', 0x84:
			err = need(4)
			p += 4
		case 'G':
			err = need(8)
			p += 8
		case 0x95: // FRAME: gopickle allocates the announced frame size
			if err = need(8); err == nil {
				k := binary.LittleEndian.Uint64(data[p:])
				p += 8
				err = need(k)
			}
		case 'U', 'C', 0x8c, 0x8a:
			if err = need(1); err == nil {
				k := uint64(data[p])
				p++
				if err = need(k); err == nil {
					if op == 0x8a && k == 0 {
						// gopickle indexes the last byte of a LONG1 argument.
						return fmt.Errorf("unsupported pickle: empty LONG1 at offset %d", p-2)
					}
					p += int(k)
				}
			}
		case 'T', 'B', 'X', 0x8b:
			if err = need(4); err == nil {
				k := uint64(binary.LittleEndian.Uint32(data[p:]))
				p += 4
				if err = need(k); err == nil {
					if op == 0x8b && k == 0 {
						return fmt.Errorf("unsupported pickle: empty LONG4 at offset %d", p-5)
					}
					p += int(k)
				}
			}
		case 0x8d, 0x8e, 0x96:
			if err = need(8); err == nil {
				k := binary.LittleEndian.Uint64(data[p:])
				p += 8
				if err = need(k); err == nil {
					p += int(k)
				}
			}
		default:
			return fmt.Errorf("unsupported pickle opcode 0x%02x at offset %d", op, p-1)
		}
		if err != nil {
			return err
		}
	}
	return fmt.Errorf("truncated pickle: no STOP opcode in %d bytes", len(data))
}

// decodePickle unpickles data, mapping only the classes that Planetoid
// files use. It never panics: panics inside gopickle become errors.
func decodePickle(data []byte) (v any, err error) {
	if err := scanPickle(data); err != nil {
		return nil, err
	}
	defer func() {
		if r := recover(); r != nil {
			v, err = nil, fmt.Errorf("malformed pickle: %v", r)
		}
	}()
	u := pickle.NewUnpickler(bytes.NewReader(data))
	u.FindClass = findClass
	u.PersistentLoad = func(any) (any, error) { return nil, fmt.Errorf("unsupported pickle: persistent id") }
	v, err = u.Load()
	if err != nil {
		return nil, fmt.Errorf("malformed pickle: %w", err)
	}
	return v, nil
}

func findClass(module, name string) (any, error) {
	switch module + "." + name {
	case "scipy.sparse.csr.csr_matrix", "scipy.sparse._csr.csr_matrix":
		return csrClass{}, nil
	case "numpy.core.multiarray._reconstruct", "numpy._core.multiarray._reconstruct":
		return reconstructFunc{}, nil
	case "numpy.ndarray":
		return ndarrayClass{}, nil
	case "numpy.dtype":
		return dtypeClass{}, nil
	case "collections.defaultdict":
		return defaultDictClass{}, nil
	case "__builtin__.list", "builtins.list":
		return listClass{}, nil
	case "_codecs.encode":
		// Python 3 pickles byte strings with protocol 2 as
		// _codecs.encode(unicode, "latin1").
		return latin1Encode{}, nil
	}
	return nil, fmt.Errorf("unsupported pickled class %s.%s", module, name)
}

type csrClass struct{}

func (csrClass) PyNew(args ...any) (any, error) { return &pyCSR{}, nil }

// pyCSR is an unpickled scipy.sparse.csr_matrix: its state dict.
type pyCSR struct{ state *types.Dict }

func (c *pyCSR) PySetState(s any) error {
	d, ok := s.(*types.Dict)
	if !ok {
		return fmt.Errorf("csr_matrix state is %T, want dict", s)
	}
	c.state = d
	return nil
}

type ndarrayClass struct{}

type reconstructFunc struct{}

func (reconstructFunc) Call(args ...any) (any, error) {
	if len(args) < 1 {
		return nil, fmt.Errorf("_reconstruct: no arguments")
	}
	if _, ok := args[0].(ndarrayClass); !ok {
		return nil, fmt.Errorf("_reconstruct of %T, want numpy.ndarray", args[0])
	}
	return &pyNDArray{}, nil
}

// pyNDArray is an unpickled numpy.ndarray: its __setstate__ tuple.
type pyNDArray struct {
	set   bool
	shape []int
	dtype *pyDType
	fort  bool
	raw   []byte
}

func (a *pyNDArray) PySetState(s any) error {
	t, ok := s.(*types.Tuple)
	if !ok {
		return fmt.Errorf("ndarray state is %T, want tuple", s)
	}
	st := []any(*t)
	if len(st) == 5 {
		st = st[1:] // (version, shape, dtype, is_fortran, data)
	}
	if len(st) != 4 {
		return fmt.Errorf("ndarray state has %d items, want 4 or 5", len(*t))
	}
	shape, err := intTuple(st[0])
	if err != nil {
		return fmt.Errorf("ndarray shape: %w", err)
	}
	dt, ok := st[1].(*pyDType)
	if !ok {
		return fmt.Errorf("ndarray dtype is %T, want numpy.dtype", st[1])
	}
	fort, ok := st[2].(bool)
	if !ok {
		return fmt.Errorf("ndarray fortran flag is %T, want bool", st[2])
	}
	var raw []byte
	switch d := st[3].(type) {
	case string:
		raw = []byte(d)
	case []byte:
		raw = d
	default:
		return fmt.Errorf("ndarray data is %T, want a byte string (object arrays are not supported)", st[3])
	}
	want, err := dt.itemSize()
	if err != nil {
		return err
	}
	count := 1
	for _, s := range shape {
		if s < 0 {
			return fmt.Errorf("ndarray shape %v has a negative dimension", shape)
		}
		if s != 0 && count > math.MaxInt32/s {
			return fmt.Errorf("ndarray shape %v too large", shape)
		}
		count *= s
	}
	if len(raw) != count*want {
		// Python 3 pickles of protocol 2 carry the bytes as a latin-1
		// decoded unicode string, which gopickle returns UTF-8 encoded.
		if s, ok := st[3].(string); ok && utf8.ValidString(s) && utf8.RuneCountInString(s) == count*want {
			raw = raw[:0:0]
			for _, r := range s {
				if r > 0xff {
					return fmt.Errorf("ndarray data is not a latin-1 string")
				}
				raw = append(raw, byte(r))
			}
		} else {
			return fmt.Errorf("ndarray data has %d bytes, want %d for shape %v of %s (truncated?)", len(raw), count*want, shape, dt.name)
		}
	}
	a.set, a.shape, a.dtype, a.fort, a.raw = true, shape, dt, fort, raw
	return nil
}

type dtypeClass struct{}

func (dtypeClass) Call(args ...any) (any, error) {
	if len(args) < 1 {
		return nil, fmt.Errorf("numpy.dtype: no arguments")
	}
	name, ok := args[0].(string)
	if !ok {
		return nil, fmt.Errorf("numpy.dtype(%T), want a string", args[0])
	}
	return &pyDType{name: name, order: '<'}, nil
}

// pyDType is an unpickled numpy.dtype such as dtype('f4') with byte order.
type pyDType struct {
	name  string // e.g. "f4", "i8", "b1"
	order byte   // '<', '>', '|' or '='
}

func (d *pyDType) PySetState(s any) error {
	t, ok := s.(*types.Tuple)
	if !ok || t.Len() < 2 {
		return fmt.Errorf("dtype state is %T, want a tuple", s)
	}
	o, ok := t.Get(1).(string)
	if !ok || len(o) != 1 || (o[0] != '<' && o[0] != '>' && o[0] != '|' && o[0] != '=') {
		return fmt.Errorf("dtype byte order %v not understood", t.Get(1))
	}
	d.order = o[0]
	return nil
}

func (d *pyDType) itemSize() (int, error) {
	k, ok := dtypeKinds[d.name]
	if !ok {
		return 0, fmt.Errorf("unsupported dtype %q", d.name)
	}
	return k.size, nil
}

type defaultDictClass struct{}

func (defaultDictClass) Call(args ...any) (any, error) { return &pyDefaultDict{}, nil }

// pyDefaultDict is an unpickled collections.defaultdict (items in order).
type pyDefaultDict struct{ items types.Dict }

func (d *pyDefaultDict) Set(k, v any) { d.items.Set(k, v) }

type listClass struct{}

type latin1Encode struct{}

func (latin1Encode) Call(args ...any) (any, error) {
	if len(args) != 2 {
		return nil, fmt.Errorf("_codecs.encode: %d arguments, want 2", len(args))
	}
	s, ok1 := args[0].(string)
	enc, ok2 := args[1].(string)
	if !ok1 || !ok2 {
		return nil, fmt.Errorf("_codecs.encode(%T, %T), want strings", args[0], args[1])
	}
	switch strings.ToLower(enc) {
	case "latin1", "latin-1", "iso-8859-1", "iso8859-1":
	default:
		return nil, fmt.Errorf("_codecs.encode: unsupported encoding %q", enc)
	}
	out := make([]byte, 0, len(s))
	for _, r := range s {
		if r > 0xff {
			return nil, fmt.Errorf("_codecs.encode: %U is not latin-1", r)
		}
		out = append(out, byte(r))
	}
	return out, nil
}

// pyInt converts a pickled Python int to int64.
func pyInt(v any) (int64, error) {
	switch x := v.(type) {
	case int:
		return int64(x), nil
	case int64:
		return x, nil
	case bool:
		if x {
			return 1, nil
		}
		return 0, nil
	case *big.Int:
		if x.IsInt64() {
			return x.Int64(), nil
		}
		return 0, fmt.Errorf("integer %s out of range", x)
	}
	return 0, fmt.Errorf("%T is not an integer", v)
}

func intTuple(v any) ([]int, error) {
	t, ok := v.(*types.Tuple)
	if !ok {
		return nil, fmt.Errorf("%T is not a tuple", v)
	}
	out := make([]int, t.Len())
	for i := range out {
		x, err := pyInt(t.Get(i))
		if err != nil {
			return nil, err
		}
		if x < 0 || x > math.MaxInt32 {
			return nil, fmt.Errorf("dimension %d out of range", x)
		}
		out[i] = int(x)
	}
	return out, nil
}

// ndarray is a decoded numeric numpy array (from a pickle or an npy file).
type ndarray struct {
	shape []int
	kind  dtypeKind
	big   bool // big-endian storage
	fort  bool // Fortran (column-major) order
	raw   []byte
}

type dtypeKind struct {
	kind byte // 'f' float, 'i' signed, 'u' unsigned, 'b' bool
	size int
}

var dtypeKinds = map[string]dtypeKind{
	"f2": {'f', 2}, "f4": {'f', 4}, "f8": {'f', 8},
	"i1": {'i', 1}, "i2": {'i', 2}, "i4": {'i', 4}, "i8": {'i', 8},
	"u1": {'u', 1}, "u2": {'u', 2}, "u4": {'u', 4}, "u8": {'u', 8},
	"b1": {'b', 1},
}

func (a *ndarray) len() int {
	if a.kind.size == 0 {
		return 0
	}
	return len(a.raw) / a.kind.size
}

func (a *ndarray) dtypeName() string { return fmt.Sprintf("%c%d", a.kind.kind, a.kind.size) }

func (a *ndarray) uint(i int) uint64 {
	b := a.raw[i*a.kind.size : (i+1)*a.kind.size]
	switch a.kind.size {
	case 1:
		return uint64(b[0])
	case 2:
		if a.big {
			return uint64(binary.BigEndian.Uint16(b))
		}
		return uint64(binary.LittleEndian.Uint16(b))
	case 4:
		if a.big {
			return uint64(binary.BigEndian.Uint32(b))
		}
		return uint64(binary.LittleEndian.Uint32(b))
	default:
		if a.big {
			return binary.BigEndian.Uint64(b)
		}
		return binary.LittleEndian.Uint64(b)
	}
}

// int returns element i as int64; ok is false for a float that is not a
// whole number or an unsigned value above MaxInt64.
func (a *ndarray) int(i int) (int64, bool) {
	u := a.uint(i)
	switch a.kind.kind {
	case 'i':
		shift := 64 - 8*uint(a.kind.size)
		return int64(u<<shift) >> shift, true
	case 'u', 'b':
		return int64(u), u <= math.MaxInt64
	default:
		f := a.float(i)
		if f != math.Trunc(f) || f < math.MinInt64 || f >= math.MaxInt64 {
			return 0, false
		}
		return int64(f), true
	}
}

func (a *ndarray) float(i int) float64 {
	switch a.kind.kind {
	case 'f':
		u := a.uint(i)
		switch a.kind.size {
		case 2:
			return float64(half.F16ToF32(uint16(u)))
		case 4:
			return float64(math.Float32frombits(uint32(u)))
		}
		return math.Float64frombits(u)
	default:
		v, ok := a.int(i)
		if !ok {
			return float64(a.uint(i))
		}
		return float64(v)
	}
}

// ints returns the array as int64 values; it fails for float arrays.
func (a *ndarray) ints() ([]int64, error) {
	if a.kind.kind == 'f' {
		return nil, fmt.Errorf("dtype %s is not an integer type", a.dtypeName())
	}
	out := make([]int64, a.len())
	for i := range out {
		v, ok := a.int(i)
		if !ok {
			return nil, fmt.Errorf("element %d does not fit in int64", i)
		}
		out[i] = v
	}
	return out, nil
}

// floats returns the array as float32 values (any numeric dtype).
func (a *ndarray) floats() []float32 {
	out := make([]float32, a.len())
	for i := range out {
		out[i] = float32(a.float(i))
	}
	return out
}

// rowMajorIndex maps a row-major 2-D index to the storage index.
func (a *ndarray) index2(r, c int) int {
	if a.fort {
		return c*a.shape[0] + r
	}
	return r*a.shape[1] + c
}

// asNDArray turns an unpickled object into an ndarray.
func asNDArray(v any) (*ndarray, error) {
	p, ok := v.(*pyNDArray)
	if !ok {
		return nil, fmt.Errorf("pickled object is %s, want numpy.ndarray", pyTypeName(v))
	}
	if !p.set {
		return nil, fmt.Errorf("numpy.ndarray without state")
	}
	k, ok := dtypeKinds[p.dtype.name]
	if !ok {
		return nil, fmt.Errorf("unsupported dtype %q", p.dtype.name)
	}
	return &ndarray{shape: p.shape, kind: k, big: p.dtype.order == '>', fort: p.fort, raw: p.raw}, nil
}

func pyTypeName(v any) string {
	switch v.(type) {
	case *pyCSR:
		return "scipy.sparse.csr_matrix"
	case *pyNDArray:
		return "numpy.ndarray"
	case *pyDefaultDict:
		return "collections.defaultdict"
	case *types.Dict:
		return "dict"
	case *types.List:
		return "list"
	case *types.Tuple:
		return "tuple"
	case nil:
		return "None"
	}
	return fmt.Sprintf("%T", v)
}

// csrMatrix is a validated CSR matrix with float32 values.
type csrMatrix struct {
	rows, cols int
	indptr     []int64
	indices    []int32
	data       []float32
}

// asCSR turns an unpickled scipy.sparse.csr_matrix into a validated
// csrMatrix.
func asCSR(v any) (*csrMatrix, error) {
	p, ok := v.(*pyCSR)
	if !ok {
		return nil, fmt.Errorf("pickled object is %s, want scipy.sparse.csr_matrix", pyTypeName(v))
	}
	if p.state == nil {
		return nil, fmt.Errorf("csr_matrix without state")
	}
	get := func(key string) (*ndarray, error) {
		x, ok := p.state.Get(key)
		if !ok {
			return nil, fmt.Errorf("csr_matrix has no %q", key)
		}
		a, err := asNDArray(x)
		if err != nil {
			return nil, fmt.Errorf("csr_matrix %s: %w", key, err)
		}
		if len(a.shape) != 1 {
			return nil, fmt.Errorf("csr_matrix %s has shape %v, want 1-D", key, a.shape)
		}
		return a, nil
	}
	sv, ok := p.state.Get("_shape")
	if !ok {
		return nil, fmt.Errorf("csr_matrix has no \"_shape\"")
	}
	shape, err := intTuple(sv)
	if err != nil || len(shape) != 2 {
		return nil, fmt.Errorf("csr_matrix _shape %v is not a pair of sizes", sv)
	}
	if f, ok := p.state.Get("format"); ok && f != "csr" {
		return nil, fmt.Errorf("sparse matrix format %v, want csr", f)
	}
	data, err := get("data")
	if err != nil {
		return nil, err
	}
	indices, err := get("indices")
	if err != nil {
		return nil, err
	}
	indptr, err := get("indptr")
	if err != nil {
		return nil, err
	}
	return newCSR(shape[0], shape[1], data, indices, indptr)
}

// newCSR validates CSR components (from a pickle or an npz).
func newCSR(rows, cols int, data, indices, indptr *ndarray) (*csrMatrix, error) {
	if rows < 0 || cols < 0 || rows > maxNodes || cols > maxNodes {
		return nil, fmt.Errorf("shape (%d,%d) out of range", rows, cols)
	}
	if indices.kind.kind == 'f' || indptr.kind.kind == 'f' {
		return nil, fmt.Errorf("indices dtype %s / indptr dtype %s: want integer types", indices.dtypeName(), indptr.dtypeName())
	}
	if data.kind.kind != 'f' && data.kind.kind != 'i' && data.kind.kind != 'u' && data.kind.kind != 'b' {
		return nil, fmt.Errorf("data dtype %s is not numeric", data.dtypeName())
	}
	if indptr.len() != rows+1 {
		return nil, fmt.Errorf("indptr has %d entries, want rows+1 = %d", indptr.len(), rows+1)
	}
	nnz := indices.len()
	if data.len() != nnz {
		return nil, fmt.Errorf("data has %d entries but indices has %d", data.len(), nnz)
	}
	m := &csrMatrix{rows: rows, cols: cols, indptr: make([]int64, rows+1), indices: make([]int32, nnz)}
	prev := int64(0)
	for i := 0; i <= rows; i++ {
		v, ok := indptr.int(i)
		if !ok || v < prev || v > int64(nnz) || (i == 0 && v != 0) {
			return nil, fmt.Errorf("indptr[%d]=%d: want non-decreasing values from 0 to nnz=%d", i, v, nnz)
		}
		m.indptr[i] = v
		prev = v
	}
	if prev != int64(nnz) {
		return nil, fmt.Errorf("indptr[%d]=%d, want nnz=%d", rows, prev, nnz)
	}
	for i := 0; i < nnz; i++ {
		v, ok := indices.int(i)
		if !ok || v < 0 || v >= int64(cols) {
			return nil, fmt.Errorf("indices[%d]=%d out of range [0,%d)", i, v, cols)
		}
		m.indices[i] = int32(v)
	}
	m.data = data.floats()
	for i, f := range m.data {
		if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
			return nil, fmt.Errorf("data[%d]=%v is not finite", i, f)
		}
	}
	return m, nil
}

// dense writes the matrix into dst (rows x cols, row-major) starting at
// row offset row0.
func (m *csrMatrix) denseInto(dst []float32, row0 int) {
	for r := 0; r < m.rows; r++ {
		base := (row0 + r) * m.cols
		for k := m.indptr[r]; k < m.indptr[r+1]; k++ {
			dst[base+int(m.indices[k])] = m.data[k]
		}
	}
}

// asGraph turns an unpickled dict or defaultdict of node -> neighbour list
// into parallel source and destination slices in the pickle's order.
func asGraph(v any) (src, dst []int64, err error) {
	var items types.Dict
	switch d := v.(type) {
	case *pyDefaultDict:
		items = d.items
	case *types.Dict:
		items = *d
	default:
		return nil, nil, fmt.Errorf("pickled object is %s, want collections.defaultdict of lists", pyTypeName(v))
	}
	for _, e := range items {
		k, err := pyInt(e.Key)
		if err != nil {
			return nil, nil, fmt.Errorf("graph key: %w", err)
		}
		var list []any
		switch l := e.Value.(type) {
		case *types.List:
			list = *l
		case *types.Tuple:
			list = *l
		default:
			return nil, nil, fmt.Errorf("graph[%d] is %s, want a list", k, pyTypeName(e.Value))
		}
		for i, x := range list {
			n, err := pyInt(x)
			if err != nil {
				return nil, nil, fmt.Errorf("graph[%d][%d]: %w", k, i, err)
			}
			src = append(src, k)
			dst = append(dst, n)
		}
	}
	return src, dst, nil
}

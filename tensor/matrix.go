package tensor

import (
	"errors"
	"fmt"
	"math"
	"sync/atomic"
)

// Matrix is a dense row-major float32 matrix: element (i, j) is
// Data[i*Cols+j]. The zero value is an empty 0×0 matrix. A Matrix is a small
// value (a slice header and two ints); copying it shares Data.
type Matrix struct {
	Rows, Cols int
	Data       []float32
}

// Errors returned by the kernels. Use errors.Is to test for them; the
// returned errors wrap them with the offending shapes.
var (
	// ErrShape reports operands whose shapes do not fit together.
	ErrShape = errors.New("tensor: shape mismatch")
	// ErrEmpty reports a zero-size operand where a non-empty one is needed.
	ErrEmpty = errors.New("tensor: zero-size matrix")
	// ErrAlias reports an output that overlaps an input in memory.
	ErrAlias = errors.New("tensor: output overlaps an input")
	// ErrNonFinite reports a NaN or ±Inf found by CheckFinite.
	ErrNonFinite = errors.New("tensor: non-finite value")
	// ErrGraph reports a malformed CSR adjacency.
	ErrGraph = errors.New("tensor: malformed CSR")
)

// New returns a zeroed rows×cols matrix. It panics if rows or cols is
// negative, like make does for a negative length.
func New(rows, cols int) Matrix {
	if rows < 0 || cols < 0 {
		panic(fmt.Sprintf("tensor.New: negative size %d×%d", rows, cols))
	}
	allocated.Add(int64(rows) * int64(cols) * 4)
	return Matrix{Rows: rows, Cols: cols, Data: make([]float32, rows*cols)}
}

// allocated counts the bytes of every matrix made by New (and Clone).
var allocated atomic.Int64

// Allocated returns the bytes of all matrices allocated by New since the
// process started. The difference over a training step is the step's
// activation and gradient memory, which the trainer's memory model
// predicts (and its tests check against this counter).
func Allocated() int64 { return allocated.Load() }

// FromSlice wraps data (not copied) as a rows×cols matrix. It returns
// ErrShape if len(data) != rows*cols.
func FromSlice(rows, cols int, data []float32) (Matrix, error) {
	m := Matrix{Rows: rows, Cols: cols, Data: data}
	return m, m.Validate()
}

// Validate reports whether the matrix is well formed: non-negative sizes and
// len(Data) == Rows*Cols.
func (m Matrix) Validate() error {
	if m.Rows < 0 || m.Cols < 0 || len(m.Data) != m.Rows*m.Cols {
		return fmt.Errorf("%w: matrix %d×%d with %d elements", ErrShape, m.Rows, m.Cols, len(m.Data))
	}
	return nil
}

// Empty reports whether the matrix has no elements.
func (m Matrix) Empty() bool { return m.Rows == 0 || m.Cols == 0 }

// At returns element (i, j).
func (m Matrix) At(i, j int) float32 { return m.Data[i*m.Cols+j] }

// Set sets element (i, j) to v.
func (m Matrix) Set(i, j int, v float32) { m.Data[i*m.Cols+j] = v }

// Row returns row i as a slice sharing Data.
func (m Matrix) Row(i int) []float32 { return m.Data[i*m.Cols : (i+1)*m.Cols : (i+1)*m.Cols] }

// RowSlice returns rows [from, to) as a matrix sharing Data.
func (m Matrix) RowSlice(from, to int) Matrix {
	return Matrix{Rows: to - from, Cols: m.Cols, Data: m.Data[from*m.Cols : to*m.Cols : to*m.Cols]}
}

// Clone returns a deep copy.
func (m Matrix) Clone() Matrix {
	c := New(m.Rows, m.Cols)
	copy(c.Data, m.Data)
	return c
}

// Zero sets every element to 0.
func (m Matrix) Zero() { clear(m.Data) }

// SameShape reports whether m and o have equal Rows and Cols.
func (m Matrix) SameShape(o Matrix) bool { return m.Rows == o.Rows && m.Cols == o.Cols }

// String formats small matrices for debugging.
func (m Matrix) String() string {
	if m.Rows*m.Cols > 64 {
		return fmt.Sprintf("Matrix(%d×%d)", m.Rows, m.Cols)
	}
	s := fmt.Sprintf("Matrix(%d×%d)[", m.Rows, m.Cols)
	for i := 0; i < m.Rows; i++ {
		if i > 0 {
			s += "; "
		}
		for j := 0; j < m.Cols; j++ {
			if j > 0 {
				s += " "
			}
			s += fmt.Sprint(m.At(i, j))
		}
	}
	return s + "]"
}

// NonFiniteError says where CheckFinite found a NaN or an infinity.
type NonFiniteError struct {
	Name     string // the name given to CheckFinite
	Row, Col int
	Value    float32
}

// Error implements error.
func (e *NonFiniteError) Error() string {
	return fmt.Sprintf("tensor: %s has non-finite value %v at (row %d, col %d)", e.Name, e.Value, e.Row, e.Col)
}

// Unwrap makes errors.Is(err, ErrNonFinite) true.
func (e *NonFiniteError) Unwrap() error { return ErrNonFinite }

// CheckFinite returns a *NonFiniteError for the first NaN or ±Inf in m (in
// row-major order), naming it name, or nil if every element is finite.
func CheckFinite(name string, m Matrix) error {
	for i, v := range m.Data {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			r, c := 0, i
			if m.Cols > 0 {
				r, c = i/m.Cols, i%m.Cols
			}
			return &NonFiniteError{Name: name, Row: r, Col: c, Value: v}
		}
	}
	return nil
}

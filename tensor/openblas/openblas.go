//go:build openblas

package openblas

/*
#cgo LDFLAGS: -lopenblas
#include <cblas.h>

void openblas_set_num_threads(int num_threads);
char* openblas_get_corename(void);
*/
import "C"

import (
	"fmt"
	"sync"
)

// Available is true when the package was built with the openblas tag.
const Available = true

var mu sync.Mutex

// CoreName is the kernel set OpenBLAS chose for this CPU (or was told to
// use by OPENBLAS_CORETYPE), e.g. "Haswell" (AVX2) or "SkylakeX"
// (AVX-512).
func CoreName() string { return C.GoString(C.openblas_get_corename()) }

// Sgemm computes C = alpha*op(A)*op(B) + beta*C for row-major matrices with
// OpenBLAS (cblas_sgemm), after openblas_set_num_threads(threads). op(A) is
// m×k, op(B) is k×n, C is m×n; lda, ldb, ldc are the row lengths as stored.
// Calls are serialised because the thread count is global to OpenBLAS.
func Sgemm(threads int, transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) error {
	if m <= 0 || n <= 0 || k <= 0 {
		return fmt.Errorf("openblas: empty product %d×%d×%d", m, n, k)
	}
	ta, tb := C.enum_CBLAS_TRANSPOSE(C.CblasNoTrans), C.enum_CBLAS_TRANSPOSE(C.CblasNoTrans)
	ar, br := m, k
	if transA {
		ta, ar = C.CblasTrans, k
	}
	if transB {
		tb, br = C.CblasTrans, n
	}
	if len(a) < (ar-1)*lda+1 || len(b) < (br-1)*ldb+1 || len(c) < (m-1)*ldc+n {
		return fmt.Errorf("openblas: slice too short")
	}
	mu.Lock()
	defer mu.Unlock()
	C.openblas_set_num_threads(C.int(threads))
	C.cblas_sgemm(C.CblasRowMajor, ta, tb, C.blasint(m), C.blasint(n), C.blasint(k), C.float(alpha),
		(*C.float)(&a[0]), C.blasint(lda), (*C.float)(&b[0]), C.blasint(ldb), C.float(beta),
		(*C.float)(&c[0]), C.blasint(ldc))
	return nil
}

//go:build !openblas

package openblas

import "errors"

// Available is true when the package was built with the openblas tag.
const Available = false

// CoreName is "": no OpenBLAS is built in.
func CoreName() string { return "" }

// Sgemm returns an error: the binary was built without the openblas tag.
func Sgemm(threads int, transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) error {
	return errors.New("openblas: not built in (use -tags openblas)")
}

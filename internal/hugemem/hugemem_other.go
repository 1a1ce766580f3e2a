//go:build !linux

package hugemem

// Alloc returns make([]T, n) on platforms without transparent huge
// pages, and a no-op free function.
func Alloc[T any](n int) ([]T, func()) { return make([]T, n), func() {} }

// AllocLazy is Alloc.
func AllocLazy[T any](n int) ([]T, func()) { return Alloc[T](n) }

// Populate does nothing: the memory is the Go heap's, already zeroed.
func Populate[T any](s []T, workers int) {}

// Make is make([]T, n, c): no transparent huge pages to advise here.
func Make[T any](n, c int) []T { return make([]T, n, c) }

// Table is make([]T, n): no transparent huge pages here.
func Table[T any](n int) []T { return make([]T, n) }

//go:build !linux

package hugemem

// Alloc returns make([]T, n) on platforms without transparent huge
// pages, and a no-op free function.
func Alloc[T any](n int) ([]T, func()) { return make([]T, n), func() {} }

//go:build !linux

package membench

// AllocHuge returns make([]T, n) on platforms without transparent huge
// pages, and a no-op free function.
func AllocHuge[T any](n int) ([]T, func()) { return make([]T, n), func() {} }

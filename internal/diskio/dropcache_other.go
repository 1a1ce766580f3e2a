//go:build !linux

package diskio

// DropCache does nothing where POSIX_FADV_DONTNEED is not available.
func DropCache(path string) error { return nil }

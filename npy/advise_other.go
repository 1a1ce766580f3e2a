//go:build unix && !linux

package npy

// adviseHuge does nothing where transparent huge pages do not exist: the
// mapping stays on the system's base pages.
func adviseHuge([]byte) {}

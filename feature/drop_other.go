//go:build !unix

package feature

// dropMapped does nothing where the store cannot drop mapped pages.
func dropMapped(b []byte) {}

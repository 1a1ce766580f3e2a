//go:build !linux

package arena

import "errors"

// Elsewhere New returns nil and every array comes from the Go heap.
const supported = false

var pageSize = 4096

func mapRegion(int) ([]byte, error) { return nil, errors.New("arena: not supported") }

func unmapRegion([]byte) {}

func populate([]byte) {}

//go:build !linux

package arena

import "errors"

// Elsewhere New returns nil and every array comes from the Go heap.
const supported = false

var pageSize = 4096

func mapRegion(int) ([]byte, bool, error) { return nil, false, errors.New("arena: not supported") }

func unmapRegion([]byte) {}

func populate([]byte) {}

func discard([]byte) {}

// hugePages: no transparent huge pages here.
const hugePages = false

//go:build !linux

package dist

import (
	"errors"
	"time"
)

// Off Linux the shared-memory transport is not built: local ranks talk
// over loopback TCP.

const shmSupported = false

var errNoShm = errors.New("shared memory transport needs Linux")

func hostKey() string { return "" }

func createSegment(size int) ([]byte, string, error) { return nil, "", errNoShm }

func openSegment(name string, size int) ([]byte, error) { return nil, errNoShm }

func unmapSegment(mem []byte) error { return nil }

func removeSegment(name string) {}

func futexWait(addr *byte, val uint32, d time.Duration) { time.Sleep(d) }

func futexWake(addr *byte) {}

func osYield() {}

func spinPause() {}

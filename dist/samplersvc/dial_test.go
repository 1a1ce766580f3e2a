package samplersvc

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestDialRefusesMalformedAddresses: an address without a port is refused
// at once (it waited the whole connect timeout for gRPC's resolver).
func TestDialRefusesMalformedAddresses(t *testing.T) {
	for _, a := range []string{"garbage", "127.0.0.1", "127.0.0.1:", "[::1"} {
		start := time.Now()
		_, err := Dial(context.Background(), ClientConfig{Addrs: []string{a}, ConnectTimeout: 30 * time.Second})
		if err == nil || !strings.Contains(err.Error(), "not HOST:PORT") {
			t.Errorf("%q: %v", a, err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("%q refused after %v", a, d)
		}
	}
}

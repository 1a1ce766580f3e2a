package sarbench

import "testing"

func TestParseBandwidth(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want float64
		ok   bool
	}{{"25Gbit", 25e9, true}, {"100Gbit/s", 100e9, true}, {"400Mbit", 400e6, true}, {"10G", 10e9, true}, {"1e9", 1e9, true}, {"fast", 0, false}, {"-1Gbit", 0, false}, {"0", 0, false}} {
		got, err := parseBandwidth(tc.in)
		if (err == nil) != tc.ok || tc.ok && got != tc.want {
			t.Errorf("parseBandwidth(%q) = %v, %v; want %v (ok %v)", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

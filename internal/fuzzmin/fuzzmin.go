// Package fuzzmin bounds the fuzzer's minimisation in a package's TestMain.
package fuzzmin

import (
	"flag"
	"os"
	"testing"
)

// Main runs m with the minimisation of each new interesting fuzz input
// bounded to 1000 runs (Go's default is 60 seconds per input, with which
// the fuzz targets spent nearly all their time minimising: 0-18 runs/s
// instead of tens of thousands). An explicit -fuzzminimizetime still wins.
func Main(m *testing.M) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.fuzzminimizetime" })
	if !set {
		flag.Set("test.fuzzminimizetime", "1000x")
	}
	os.Exit(m.Run())
}

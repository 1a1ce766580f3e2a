package importer

import (
	"flag"
	"os"
	"testing"
)

// TestMain bounds the fuzzer's minimisation of each new interesting input
// to 1000 runs (Go's default is 60 seconds per input): with the default,
// the fuzz targets of this package spent nearly all their time minimising
// (0-18 runs/s instead of tens of thousands) and explored little. An
// explicit -fuzzminimizetime still wins.
func TestMain(m *testing.M) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.fuzzminimizetime" })
	if !set {
		flag.Set("test.fuzzminimizetime", "1000x")
	}
	os.Exit(m.Run())
}

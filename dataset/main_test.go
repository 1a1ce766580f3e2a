package dataset

import (
	"testing"

	"github.com/graphmill/graphmill/internal/fuzzmin"
)

// TestMain bounds fuzz minimisation so the fuzz targets explore (see fuzzmin).
func TestMain(m *testing.M) { fuzzmin.Main(m) }

package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/graphmill/graphmill/dist/launch"
)

// The test binary doubles as the CLI for the ranks graphmill launch starts.
func TestMain(m *testing.M) {
	if os.Getenv("GRAPHMILL_TEST_AS_CLI") == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestLaunchTrainsDataParallel(t *testing.T) {
	if testing.Short() {
		t.Skip("trains 2 ranks")
	}
	t.Setenv("GRAPHMILL_TEST_AS_CLI", "1")
	t.Setenv("GRAPHMILL_CACHE", t.TempDir())
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	err := launch.Local(ctx, 2, 0, time.Second, []string{os.Args[0], "train", "--model", "sage", "--epochs", "3", "--quiet"}, &out, &errb)
	if err != nil {
		t.Fatalf("%v\n%s\n%s", err, out.String(), errb.String())
	}
	if !strings.Contains(out.String(), "[rank 0] test accuracy") || strings.Contains(out.String(), "[rank 1] test accuracy") {
		t.Errorf("want the summary from rank 0 only:\n%s", out.String())
	}
}

func TestLaunchPassesOnAFailure(t *testing.T) {
	t.Setenv("GRAPHMILL_TEST_AS_CLI", "1")
	var out, errb bytes.Buffer
	t0 := time.Now()
	err := launch.Local(context.Background(), 2, 0, time.Second, []string{os.Args[0], "train", "--model", "gcn", "--mode", "full", "--epochs", "1"}, &out, &errb)
	var ec *launch.ExitError
	if !errors.As(err, &ec) || ec.Code != 1 {
		t.Fatalf("got %v, want exit status 1", err)
	}
	if !strings.Contains(errb.String(), "data-parallel training under 2 ranks runs in sampled mode") {
		t.Errorf("stderr lacks the cause:\n%s", errb.String())
	}
	if time.Since(t0) > 30*time.Second {
		t.Errorf("took %v", time.Since(t0))
	}
}

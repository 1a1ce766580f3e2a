package cli

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

func TestCountVar(t *testing.T) {
	for _, tc := range []struct {
		positive bool
		args     []string
		want     int
		err      string
	}{
		{false, nil, 3, ""},
		{false, []string{"--workers", "0"}, 0, ""},
		{false, []string{"--workers=12"}, 12, ""},
		{false, []string{"--workers", "-1"}, 0, "-1 is negative"},
		{false, []string{"--workers", "two"}, 0, `"two" is not a whole number`},
		{false, []string{"--workers", "1.5"}, 0, "not a whole number"},
		{true, nil, 3, ""},
		{true, []string{"--workers", "1"}, 1, ""},
		{true, []string{"--workers", "0"}, 0, `invalid argument "0" for "--workers" flag: want a count of 1 or more`},
		{true, []string{"--workers", "-4"}, 0, "want a count of 1 or more"},
	} {
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		fs.SetOutput(new(strings.Builder))
		var n int
		if tc.positive {
			PositiveVar(fs, &n, "workers", 3, "goroutines")
		} else {
			CountVar(fs, &n, "workers", 3, "goroutines (0 = all cores)")
		}
		err := fs.Parse(tc.args)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "--workers") {
				t.Errorf("%v: error %v, want one naming --workers and saying %q", tc.args, err, tc.err)
			}
			continue
		}
		if err != nil || n != tc.want {
			t.Errorf("%v: %d, %v; want %d", tc.args, n, err, tc.want)
		}
	}
	// The help shows a default other than 0, as for an int flag.
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	var a, b int
	CountVar(fs, &a, "a", 0, "all cores at 0")
	CountVar(fs, &b, "b", 2, "two by default")
	help := fs.FlagUsages()
	if strings.Contains(help, "(default 0)") || !strings.Contains(help, "(default 2)") || !strings.Contains(help, "--a int") {
		t.Errorf("help:\n%s", help)
	}
}

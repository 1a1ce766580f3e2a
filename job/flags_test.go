package job

import (
	"context"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// TestDistFlagsRefuseMeaninglessValues: a rank below -1 or a timeout that
// is not positive, given explicitly, is an error naming the flag, not
// "from the environment" or the default.
func TestDistFlagsRefuseMeaninglessValues(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--rank", "-2"}, "--rank -2: want a value >= 0"},
		{[]string{"--world-size", "-3"}, "--world-size -3"},
		{[]string{"--local-rank", "-2"}, "--local-rank -2"},
		{[]string{"--master-port", "-7"}, "--master-port -7"},
		{[]string{"--rendezvous-timeout", "0s"}, "--rendezvous-timeout 0s: want a positive duration"},
		{[]string{"--rendezvous-timeout", "-1s"}, "--rendezvous-timeout -1s: want a positive duration"},
		{[]string{"--op-timeout", "0s"}, "--op-timeout 0s"},
		{[]string{"--peer-timeout", "-2s"}, "--peer-timeout -2s"},
	} {
		var f DistFlags
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		f.Add(fs)
		if err := fs.Parse(c.args); err != nil {
			t.Fatal(err)
		}
		_, _, err := f.Join(context.Background())
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: got %v, want %q", c.args, err, c.want)
		}
	}
	// The defaults and -1 pass the check (a single process: no group).
	var f DistFlags
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	f.Add(fs)
	if err := fs.Parse([]string{"--rank", "-1"}); err != nil {
		t.Fatal(err)
	}
	if err := f.check(); err != nil {
		t.Errorf("defaults: %v", err)
	}
}

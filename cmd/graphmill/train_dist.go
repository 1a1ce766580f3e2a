package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/graphmill/graphmill/dist"
	"github.com/graphmill/graphmill/internal/units"
	"github.com/graphmill/graphmill/job"
)

// distSampleFlags are train's flags for distributed sampling and sampler
// services.
type distSampleFlags struct {
	remoteCache string
	sampler     string
	connectWait time.Duration
}

func (f *distSampleFlags) add(fl *pflag.FlagSet) {
	fl.StringVar(&f.remoteCache, "remote-cache", "", "partitioned dataset under a launcher: keep the feature rows of other ranks' nodes that sampling touches most (estimated by presampling one epoch) in memory, up to this size, e.g. 512MiB; the hit rate is reported (default: no cache)")
	fl.StringVar(&f.sampler, "sampler", "", "train from remote sampler services ('graphmill serve sampler') at these addresses, HOST:PORT[,HOST:PORT...], instead of sampling locally; --dataset must be the dataset they serve")
	fl.DurationVar(&f.connectWait, "connect-timeout", time.Minute, "with --sampler: how long to wait for the sampler services to answer before giving up")
}

// parse returns the sampler addresses, their connection timeout and
// security (from d's flags), and the remote-row cache's size.
func (f *distSampleFlags) parse(d *job.DistFlags) (addrs []string, wait time.Duration, sec *dist.Security, cache int64, err error) {
	if f.remoteCache != "" {
		if cache, err = units.ParseBytes(f.remoteCache); err != nil || cache < 0 {
			return nil, 0, nil, 0, fmt.Errorf("--remote-cache %q: want a size such as 512MiB", f.remoteCache)
		}
	}
	for _, a := range strings.Split(f.sampler, ",") {
		if a = strings.TrimSpace(a); a != "" {
			addrs = append(addrs, a)
		}
	}
	if len(addrs) == 0 {
		return nil, 0, nil, cache, nil
	}
	if wait = f.connectWait; wait <= 0 {
		return nil, 0, nil, 0, fmt.Errorf("--connect-timeout %v: want a duration > 0, such as 60s", wait)
	}
	sec, err = d.Security()
	return addrs, wait, sec, cache, err
}

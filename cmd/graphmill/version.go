package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/graphmill/graphmill/tensor"
)

// versionString describes this build: module version, commit, build tags,
// cgo, Go version and the tensor kernel in use.
func versionString() string {
	version, commit, tags, cgo := "(devel)", "unknown", "none", "off"
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" {
			version = bi.Main.Version
		}
		dirty := false
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				commit = s.Value
				if len(commit) > 12 {
					commit = commit[:12]
				}
			case "vcs.modified":
				dirty = s.Value == "true"
			case "-tags":
				if s.Value != "" {
					tags = s.Value
				}
			case "CGO_ENABLED":
				if s.Value == "1" {
					cgo = "on"
				}
			}
		}
		if dirty {
			commit += "-dirty"
		}
	}
	return fmt.Sprintf("graphmill %s (commit %s, build tags: %s, cgo %s, %s %s/%s, kernel %s of %s)",
		version, commit, tags, cgo, runtime.Version(), runtime.GOOS, runtime.GOARCH, tensor.Kernel(), strings.Join(tensor.Kernels(), ","))
}

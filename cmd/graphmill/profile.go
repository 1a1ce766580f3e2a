package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"sync"

	"github.com/spf13/cobra"
)

// Profiling flags: every command takes --cpuprofile, --memprofile and
// --trace (persistent flags of the root). The CPU profile and the
// execution trace run from the start of the command to its end (also when
// it fails or is interrupted); the heap profile is written when the
// command ends. The profiles are pprof files ("go tool pprof FILE"), the
// trace shows where goroutines waited and cores sat idle ("go tool trace
// FILE").
var (
	cpuProfile, memProfile string
	traceOut               string
	profileFile, traceFile *os.File
	memProfilePath         string // what stopProfiles writes (set when the command starts)
	profileMu              sync.Mutex
)

func init() {
	rootCmd.PersistentFlags().StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile (pprof format) of the command to `FILE`")
	rootCmd.PersistentFlags().StringVar(&memProfile, "memprofile", "", "write a heap profile (pprof format) to `FILE` when the command ends")
	rootCmd.PersistentFlags().StringVar(&traceOut, "trace", "", "write a Go execution trace of the command to `FILE` (go tool trace FILE)")
	cobra.EnableTraverseRunHooks = true // sub-commands' own pre-run hooks do not replace this one
	rootCmd.PersistentPreRunE = func(*cobra.Command, []string) error { return startProfiles() }
}

// startProfiles opens the profile files (so a bad path fails before any
// work) and starts the CPU profile and the execution trace.
func startProfiles() error {
	profileMu.Lock()
	defer profileMu.Unlock()
	if memProfile != "" {
		f, err := os.Create(memProfile)
		if err != nil {
			return fmt.Errorf("--memprofile: %w", err)
		}
		f.Close()
		memProfilePath = memProfile
	}
	var err error
	if traceOut != "" {
		if traceFile, err = startTo(traceOut, "trace", trace.Start); err != nil {
			return err
		}
	}
	if cpuProfile != "" {
		if profileFile, err = startTo(cpuProfile, "cpuprofile", pprof.StartCPUProfile); err != nil {
			return err
		}
	}
	return nil
}

// startTo creates path and starts a recorder writing to it (the CPU
// profile, the execution trace); errors name the flag.
func startTo(path, flag string, start func(io.Writer) error) (*os.File, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--%s: %w", flag, err)
	}
	if err := start(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("--%s: %w", flag, err)
	}
	return f, nil
}

// stopProfiles ends the CPU profile and writes the heap profile; main
// calls it once the command has returned, whatever its outcome.
func stopProfiles() {
	profileMu.Lock()
	defer profileMu.Unlock()
	if traceFile != nil {
		trace.Stop()
		if err := traceFile.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "graphmill: --trace:", err)
		}
		traceFile = nil
	}
	if profileFile != nil {
		pprof.StopCPUProfile()
		if err := profileFile.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "graphmill: --cpuprofile:", err)
		}
		profileFile = nil
	}
	if memProfilePath == "" {
		return
	}
	path := memProfilePath
	memProfilePath = "" // written once
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "graphmill: --memprofile:", err)
		return
	}
	runtime.GC() // up-to-date statistics of what is live
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		fmt.Fprintln(os.Stderr, "graphmill: --memprofile:", err)
	}
	if err := f.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "graphmill: --memprofile:", err)
	}
}

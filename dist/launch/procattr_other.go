//go:build !linux

package launch

import (
	"os"
	"syscall"
)

// childAttr is empty where the kernel has no parent-death signal; launch
// still stops its ranks on its own exit and on signals.
func childAttr() *syscall.SysProcAttr { return nil }

// signalRank sends sig to a running rank.
func signalRank(p *os.Process, sig syscall.Signal) { p.Signal(sig) }

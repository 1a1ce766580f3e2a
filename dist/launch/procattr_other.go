//go:build !linux

package launch

import "syscall"

// childAttr is empty where the kernel has no parent-death signal; launch
// still stops its ranks on its own exit and on signals.
func childAttr() *syscall.SysProcAttr { return nil }

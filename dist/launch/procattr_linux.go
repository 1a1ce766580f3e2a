package launch

import "syscall"

// childAttr asks the kernel to kill a launched rank when launch itself dies,
// so a killed launcher leaves no orphans.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

package launch

import (
	"os"
	"syscall"
)

// childAttr asks the kernel to kill a launched rank when launch itself dies,
// so a killed launcher leaves no orphans, and puts the rank in a process
// group of its own, so that a Ctrl-C at the terminal (sent to the
// foreground group) reaches it once, passed on by launch, not twice.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
}

// signalRank sends sig to a running rank's process group: the rank and
// whatever it started (a shell's children, a loader's workers), as a
// terminal's Ctrl-C would reach them.
func signalRank(p *os.Process, sig syscall.Signal) {
	if syscall.Kill(-p.Pid, sig) != nil {
		p.Signal(sig)
	}
}

//go:build unix

package gittools

import (
	"os"
	"syscall"
)

func sessionAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setsid: true} }

// terminateGroup asks git and everything it started to stop (SIGTERM, as
// the spec has it); WaitDelay and killGroup finish the job.
func terminateGroup(p *os.Process) error {
	if p == nil {
		return nil
	}
	return syscall.Kill(-p.Pid, syscall.SIGTERM)
}

// killGroup ends whatever is left of git's session once git is gone: a
// hook or helper that ignored SIGTERM, or outlived a git that exited.
func killGroup(p *os.Process) { _ = syscall.Kill(-p.Pid, syscall.SIGKILL) }

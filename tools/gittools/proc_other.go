//go:build !unix

package gittools

import (
	"os"
	"syscall"
)

func sessionAttr() *syscall.SysProcAttr { return nil }

func terminateGroup(p *os.Process) error {
	if p == nil {
		return nil
	}
	return p.Kill()
}

func killGroup(*os.Process) {}

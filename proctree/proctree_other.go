//go:build unix && !linux

package proctree

import (
	"errors"
	"syscall"
)

// BecomeSubreaper is Linux-only; elsewhere it fails and Sweep finds
// only the caller's direct children.
func BecomeSubreaper() error { return errors.New("child subreapers are Linux-only") }

func kill(pid int) error { return syscall.Kill(pid, syscall.SIGKILL) }

func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

func reapAll() bool {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.ECHILD):
			return true
		case err != nil, pid <= 0:
			return false
		}
	}
}

//go:build windows

package proctree

import (
	"errors"
	"os"
)

// BecomeSubreaper is Linux-only; elsewhere it fails and Sweep finds
// only the caller's direct children.
func BecomeSubreaper() error { return errors.New("child subreapers are Linux-only") }

func kill(pid int) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	return p.Kill()
}

// processAlive: on Windows FindProcess opens the process, and fails when
// there is none.
func processAlive(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	_ = p.Release()
	return true
}

// reapAll has nothing to do: Windows keeps no zombies to reap.
func reapAll() bool { return true }

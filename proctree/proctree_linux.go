package proctree

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// BecomeSubreaper makes the calling process the reaper of its orphaned
// descendants (PR_SET_CHILD_SUBREAPER): a process whose parent dies is
// reparented to it rather than to init, so Sweep can still find it.
func BecomeSubreaper() error {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("become a child subreaper: %w", err)
	}
	return nil
}

func kill(pid int) error { return unix.Kill(pid, unix.SIGKILL) }

// processAlive: signal 0 reaches pid (EPERM means it exists too).
func processAlive(pid int) bool {
	err := unix.Kill(pid, 0)
	return err == nil || errors.Is(err, unix.EPERM)
}

// reapAll reaps every child that has exited and reports whether the
// caller has no children left at all.
func reapAll() bool {
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.ECHILD):
			return true
		case err != nil:
			return false
		case pid <= 0:
			return false // children left, none exited yet
		}
	}
}

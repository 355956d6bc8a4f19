//go:build !linux

package isolate

import (
	"errors"
	"syscall"
)

// candidates: mount namespaces are Linux-only.
func candidates() []Mode { return nil }

// Attr changes nothing where there are no namespaces.
func Attr(a *syscall.SysProcAttr, _ Mode) *syscall.SysProcAttr {
	if a == nil {
		a = &syscall.SysProcAttr{}
	}
	return a
}

// Enter can build no view here; None needs none.
func Enter(m Mode, _ []string) error {
	if m == None {
		return nil
	}
	return errors.New("isolate: mount namespaces are Linux-only")
}

func watchParent() error { return nil }

func initProgram(string, []string) (int, error) {
	return 0, errors.New("isolate: PID namespaces are Linux-only")
}

//go:build unix && !linux

package childproc

import (
	"errors"
	"os"
	"syscall"

	"github.com/jazz-run/jazz/proctree"
)

func procAttr(*proctree.Cgroup) *syscall.SysProcAttr { return &syscall.SysProcAttr{Setsid: true} }

func newCgroup() (*proctree.Cgroup, error) { return nil, errors.New("cgroups are Linux-only") }

// prepareReaper: without subreapers the reaper sweeps only its direct
// children; the process-group kill does the rest.
func prepareReaper() error { return nil }

func releaseStdio() {
	_ = os.Stdin.Close()
	_ = os.Stdout.Close()
	_ = os.Stderr.Close()
}

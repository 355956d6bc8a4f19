//go:build unix && !linux

package shellrun

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"github.com/jazz-run/jazz/proctree"
)

// ProtectSelf is Linux-only (PR_SET_DUMPABLE); elsewhere it does nothing.
func ProtectSelf() error { return nil }

func dropPtrace() error { return nil }

func residentBytes() (int64, bool) { return 0, false }

func runnerAttr(*proctree.Cgroup) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setsid: true}
}

func newCgroup() (*proctree.Cgroup, error) { return nil, errors.New("cgroups are Linux-only") }

func dirIdentity(p string) (string, error) {
	fi, err := os.Lstat(p)
	if err != nil {
		return "", fmt.Errorf("stat %s: %w", p, err)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("%s is no longer a directory", p)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return "", fmt.Errorf("stat %s: no device and inode", p)
	}
	return fmt.Sprintf("%d:%d", st.Dev, st.Ino), nil
}

func restoreIgnoredSignals() error { return nil }

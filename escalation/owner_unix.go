//go:build unix

package escalation

import (
	"io/fs"
	"syscall"
)

// owner is fi's user and group, when the system says.
func owner(fi fs.FileInfo) (uid, gid uint32, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, false
	}
	return st.Uid, st.Gid, true
}

//go:build unix

package config

import (
	"io/fs"
	"syscall"
)

// dirIdentity is what makes a directory the same one over time: its owner
// and its device and inode. A path names a directory only until it is
// removed; one made again at that path (by someone else, or from another
// clone with the same config bytes) has another inode.
func dirIdentity(fi fs.FileInfo) *DirIdentity {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	return &DirIdentity{UID: st.Uid, Dev: uint64(st.Dev), Ino: uint64(st.Ino)} //nolint:unconvert // Dev is not uint64 on every unix
}

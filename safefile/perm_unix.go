//go:build unix

package safefile

import (
	"fmt"
	"io/fs"
	"os"
	"strings"
	"syscall"
)

// openFlags keep an open of a FIFO or a device from waiting.
const openFlags = syscall.O_NONBLOCK

// judge says what is wrong with a file or directory another user could
// have written, and how to fix it; "" when nothing is.
func judge(path string, fi fs.FileInfo) (reason, fix string) {
	if r := foreignOwner(fi); r != "" {
		return r, ""
	}
	perm := fi.Mode().Perm()
	if perm&0o022 == 0 {
		return "", ""
	}
	if fi.IsDir() && fi.Mode()&fs.ModeSticky != 0 {
		return "", "" // like /tmp: others cannot replace what they do not own
	}
	var who []string
	if perm&0o020 != 0 {
		who = append(who, "group")
	}
	if perm&0o002 != 0 {
		who = append(who, "others")
	}
	return fmt.Sprintf("writable by %s (mode %04o)", strings.Join(who, " and "), perm), "chmod go-w " + path
}

// foreignOwner says whose a file is when it is neither the user's nor
// root's; "" when it is.
func foreignOwner(fi fs.FileInfo) string {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return ""
	}
	me := uint32(os.Geteuid())
	if st.Uid == me || st.Uid == 0 {
		return ""
	}
	return fmt.Sprintf("owned by uid %d, not by you (uid %d) or root", st.Uid, me)
}

// restrict sets an opened private file that group or others may read to
// 0600. It changes the descriptor's file, and only when the path names that
// very file directly: a file reached through a symlink may belong to
// someone else's arrangement and keeps its mode.
func restrict(f *os.File, path string, fi fs.FileInfo, what string) string {
	perm := fi.Mode().Perm()
	if perm&0o077 == 0 {
		return ""
	}
	li, err := os.Lstat(path)
	if err != nil {
		return ""
	}
	if li.Mode()&fs.ModeSymlink != 0 {
		return fmt.Sprintf("%s %s is reached through a symlink and has mode %04o; it may hold secrets, but jazz does not change a mode through a symlink: run chmod 600 on its target", what, path, perm)
	}
	if !os.SameFile(li, fi) {
		return "" // replaced since it was opened; the next load sees the new one
	}
	if err := f.Chmod(0o600); err != nil {
		return fmt.Sprintf("%s %s has mode %04o and may hold secrets; could not restrict it to 0600: %v", what, path, perm, err)
	}
	return ""
}

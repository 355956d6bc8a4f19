package secrets

import (
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/jazz-run/jazz/safefile"
)

// openedPath is the kernel's path for f's descriptor: the file actually
// opened, whatever chain of links or mounts led to it.
func openedPath(f *safefile.File) string {
	p := filepath.Clean(f.Name())
	raw, err := f.SyscallConn()
	if err != nil {
		return p
	}
	_ = raw.Control(func(fd uintptr) {
		if t, err := os.Readlink("/proc/self/fd/" + strconv.FormatUint(uint64(fd), 10)); err == nil && filepath.IsAbs(t) {
			p = t
		}
	})
	return p
}

// fdOnProcFS says whether f lives on a procfs.
func fdOnProcFS(f *safefile.File) bool {
	raw, err := f.SyscallConn()
	if err != nil {
		return false
	}
	var st unix.Statfs_t
	var serr error
	if err := raw.Control(func(fd uintptr) { serr = unix.Fstatfs(int(fd), &st) }); err != nil || serr != nil {
		return false
	}
	return st.Type == unix.PROC_SUPER_MAGIC
}

// onProcFS says whether path lives on a procfs.
func onProcFS(path string) bool {
	var st unix.Statfs_t
	return unix.Statfs(path, &st) == nil && st.Type == unix.PROC_SUPER_MAGIC
}

// hardLinked says whether the file has more than one name.
func hardLinked(info fs.FileInfo) bool {
	st, ok := info.Sys().(*syscall.Stat_t)
	return ok && st.Nlink > 1
}

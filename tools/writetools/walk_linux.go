package writetools

import "golang.org/x/sys/unix"

// oPathDir opens a directory for walking only: O_PATH needs no read
// permission (a 0711 directory can still be passed through), and the
// descriptor serves every *at call.
const oPathDir = unix.O_PATH

// renameNoReplace renames old to new, failing with EEXIST when new exists,
// in one step (renameat2). A filesystem without RENAME_NOREPLACE gets a
// check and a plain rename: a narrow window, documented in the package.
func renameNoReplace(olddir int, old string, newdir int, new string) error {
	err := unix.Renameat2(olddir, old, newdir, new, unix.RENAME_NOREPLACE)
	if err == unix.EINVAL || err == unix.ENOSYS {
		return renameChecked(olddir, old, newdir, new)
	}
	return err
}

//go:build unix && !linux

package writetools

import "golang.org/x/sys/unix"

// oPathDir: without O_PATH, a directory is opened for reading.
const oPathDir = unix.O_RDONLY

// renameNoReplace renames old to new unless new exists: a check, then a
// plain rename (this platform has no renameat2).
func renameNoReplace(olddir int, old string, newdir int, new string) error {
	return renameChecked(olddir, old, newdir, new)
}

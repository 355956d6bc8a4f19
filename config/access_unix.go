//go:build unix

package config

import (
	"io/fs"

	"golang.org/x/sys/unix"
)

// writeAccess asks whether dir accepts new files: access(2) refuses a
// read-only mount (EROFS) and a directory the user may not write
// (EACCES, EPERM for an immutable one), as creating a file there would.
func writeAccess(dir string) error {
	if err := unix.Access(dir, unix.W_OK); err != nil {
		return &fs.PathError{Op: "access", Path: dir, Err: err}
	}
	return nil
}

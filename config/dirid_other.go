//go:build !unix

package config

import "io/fs"

// dirIdentity is nil where there is no owner or inode to read: trust is
// then keyed on the path and the bytes only.
func dirIdentity(fs.FileInfo) *DirIdentity { return nil }

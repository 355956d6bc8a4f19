package escalation

import (
	"io/fs"
	"os"
	"slices"
)

// WriteProtected says whether a file of permission bits perm, owned by
// uid and gid, is one its owner made read-only: nobody may write it (no
// write bit at all, what chmod a-w makes, which counts for root too), or
// the class this process falls in may not (owner, group, others, as the
// kernel judges without privilege). Replacing such a file by a rename,
// or removing it, needs no write permission on the file itself, only on
// its directory, so a tool that does either asks a person first.
func WriteProtected(perm, uid, gid uint32) bool {
	return protectedFor(perm, uid, gid, os.Geteuid(), inGroup)
}

// protectedFor is WriteProtected for a process of user euid (-1: none
// known) in the groups member says.
func protectedFor(perm, uid, gid uint32, euid int, member func(uint32) bool) bool {
	if perm&0o222 == 0 {
		return true
	}
	switch {
	case euid == 0:
		return false
	case euid >= 0 && uid == uint32(euid):
		return perm&0o200 == 0
	case member(gid):
		return perm&0o020 == 0
	}
	return perm&0o002 == 0
}

// ReadOnly is WriteProtected of what fi describes, for a regular file or
// a directory (a link's own bits mean nothing; other kinds are not
// written as files).
func ReadOnly(fi fs.FileInfo) bool {
	if !fi.Mode().IsRegular() && !fi.IsDir() {
		return false
	}
	uid, gid, ok := owner(fi)
	if !ok {
		return fi.Mode().Perm()&0o222 == 0
	}
	return WriteProtected(uint32(fi.Mode().Perm()), uid, gid)
}

// inGroup says whether this process is in group gid.
func inGroup(gid uint32) bool {
	if egid := os.Getegid(); egid >= 0 && uint32(egid) == gid {
		return true
	}
	groups, err := os.Getgroups()
	return err == nil && slices.Contains(groups, int(gid))
}

//go:build unix

package shellrun

// DropPtrace removes CAP_SYS_PTRACE from a root process's capability
// sets (bounding included), so nothing it starts can read a non-dumpable
// jazz's memory; without root it does nothing. For other launchers of
// untrusted programs (childproc's reaper).
func DropPtrace() error { return dropPtrace() }

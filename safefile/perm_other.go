//go:build !unix

package safefile

import (
	"io/fs"
	"os"
)

// openFlags: there are no FIFOs to wait on among plain paths here.
const openFlags = 0

// judge accepts everything: without POSIX owners and modes there is
// nothing to compare (Windows guards files with ACLs).
func judge(string, fs.FileInfo) (reason, fix string) { return "", "" }

func foreignOwner(fs.FileInfo) string { return "" }

func restrict(*os.File, string, fs.FileInfo, string) string { return "" }

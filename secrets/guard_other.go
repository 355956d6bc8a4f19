//go:build !linux

package secrets

import (
	"io/fs"
	"path/filepath"

	"github.com/jazz-run/jazz/safefile"
)

// openedPath is the opened file's name, resolved (no /proc here to ask).
func openedPath(f *safefile.File) string {
	if real, err := filepath.EvalSymlinks(f.Name()); err == nil {
		return real
	}
	return filepath.Clean(f.Name())
}

func fdOnProcFS(*safefile.File) bool { return false }

func onProcFS(string) bool { return false }

// hardLinked is unknown here, so every file counts: the JAZZ_HOME scan
// decides.
func hardLinked(fs.FileInfo) bool { return true }

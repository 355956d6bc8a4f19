// Package modsrc finds a file in the source of a module in the module
// cache, for webtools' table generators, which read their data from the
// packages the tables replace.
package modsrc

import (
	"bytes"
	"fmt"
	"os/exec"
	"path/filepath"
)

// File is the path of rel inside module's source, found with go list -m
// (so the version is the one go.mod requires).
func File(module, rel string) (string, error) {
	dir, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", module).Output()
	if err != nil || len(bytes.TrimSpace(dir)) == 0 {
		return "", fmt.Errorf("cannot find %s's source (go list -m): %v", module, err)
	}
	return filepath.Join(string(bytes.TrimSpace(dir)), rel), nil
}

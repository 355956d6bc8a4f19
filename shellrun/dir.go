//go:build unix

package shellrun

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ErrDirChanged is wrapped when a pinned working directory is no longer
// the directory that was approved.
var ErrDirChanged = errors.New("changed since the command was approved")

// PinDir resolves dir (absolute) to its real path, every symbolic link
// followed, and fingerprints it: the identity (device, inode and, where
// the file system records it, birth time) of the directory and of every
// ancestor. CheckDir later refuses when any of them is another one, or a
// link now, so swapping the directory or any parent for another directory
// or a symlink after approval is caught.
func PinDir(dir string) (real, state string, err error) {
	if !filepath.IsAbs(dir) {
		return "", "", fmt.Errorf("working directory %q is not absolute", dir)
	}
	real, err = filepath.EvalSymlinks(dir)
	if err != nil {
		return "", "", fmt.Errorf("resolve working directory: %w", err)
	}
	st, err := os.Stat(real)
	if err != nil {
		return "", "", fmt.Errorf("resolve working directory: %w", err)
	}
	if !st.IsDir() {
		return "", "", fmt.Errorf("not a directory: %s", real)
	}
	state, err = dirState(real)
	if err != nil {
		return "", "", err
	}
	return real, state, nil
}

// CheckDir verifies that real is still the directory PinDir fingerprinted
// as state.
func CheckDir(real, state string) error {
	if state == "" {
		return fmt.Errorf("%s: no fingerprint of the approved working directory; propose the command again", real)
	}
	got, err := dirState(real)
	if err != nil {
		return fmt.Errorf("%s %w (%v); propose the command again", real, ErrDirChanged, err)
	}
	if got != state {
		return fmt.Errorf("%s %w (the directory or one of its parents was replaced); propose the command again", real, ErrDirChanged)
	}
	return nil
}

// dirState hashes the identity of every component of real, which must
// be absolute and free of symbolic links.
func dirState(real string) (string, error) {
	h := sha256.New()
	p := "/"
	comps := strings.Split(strings.Trim(filepath.Clean(real), "/"), "/")
	if comps[0] == "" {
		comps = nil
	}
	for i := -1; i < len(comps); i++ {
		if i >= 0 {
			p = filepath.Join(p, comps[i])
		}
		id, err := dirIdentity(p)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s\x00%s\n", p, id)
	}
	return "dir:" + hex.EncodeToString(h.Sum(nil)), nil
}

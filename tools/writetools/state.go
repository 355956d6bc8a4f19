package writetools

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// maxLinkHops bounds symlink chains, as the kernel does.
const maxLinkHops = 40

// writeTarget follows symlinks at abs to the path a write lands on; for a
// missing or dangling path it is where the file would be created.
func writeTarget(abs string) (string, error) {
	p := abs
	for range maxLinkHops {
		fi, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			return p, nil
		}
		if err != nil {
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			return p, nil
		}
		t, err := os.Readlink(p)
		if err != nil {
			return "", err
		}
		if !filepath.IsAbs(t) {
			t = filepath.Join(filepath.Dir(p), t)
		}
		p = t
	}
	return "", fmt.Errorf("%s: too many levels of symbolic links", abs)
}

// fileState reads a file as a write or edit will see it: its fingerprint,
// its content and whether it exists. A directory is an error.
func fileState(abs string) (state string, content []byte, exists bool, err error) {
	if _, err := os.Stat(abs); errors.Is(err, fs.ErrNotExist) {
		target, terr := writeTarget(abs)
		if terr != nil {
			return "", nil, false, terr
		}
		return absentFingerprint(target), nil, false, nil
	}
	content, err = os.ReadFile(abs)
	if err != nil {
		return "", nil, true, err
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", nil, true, err
	}
	return fileFingerprint(real, content), content, true, nil
}

// absentFingerprint names where a missing path would be created, with its
// directory resolved, so swapping a parent for a link shows as a change.
func absentFingerprint(target string) string {
	dir := filepath.Dir(target)
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	return "absent:" + filepath.Join(dir, filepath.Base(target))
}

func fileFingerprint(real string, content []byte) string {
	sum := sha256.Sum256(content)
	return "file:" + real + ":" + hex.EncodeToString(sum[:])
}

// pathState fingerprints whatever is at abs: absent, a file (content
// hash), a directory (digest of its listing), or another kind. A symlink
// is described by what it points to, under its resolved path.
func pathState(abs string) (string, error) {
	if _, err := os.Stat(abs); errors.Is(err, fs.ErrNotExist) {
		target, terr := writeTarget(abs)
		if terr != nil {
			return "", terr
		}
		return absentFingerprint(target), nil
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", err
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", err
	}
	link := ""
	if lfi, err := os.Lstat(abs); err == nil && lfi.Mode()&fs.ModeSymlink != 0 {
		link = "link:" // rm removes the link, a plain file there is not the same thing
	}
	switch {
	case fi.Mode().IsRegular():
		content, err := os.ReadFile(real)
		if err != nil {
			return "", err
		}
		return link + fileFingerprint(real, content), nil
	case fi.IsDir():
		d, err := treeDigest(real)
		if err != nil {
			return "", err
		}
		return link + "dir:" + real + ":" + d, nil
	}
	return link + "other:" + real + ":" + fi.Mode().String(), nil
}

// treeDigest hashes a directory's listing: every entry's relative path,
// type, mode, size and modification time, links not followed. Contents
// are not read, so removing a large tree does not cost a read of it; a
// changed file shows through its size or mtime.
func treeDigest(root string) (string, error) {
	h := sha256.New()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		fmt.Fprintf(h, "%q %s %d %d\n", rel, fi.Mode(), fi.Size(), fi.ModTime().UnixNano())
		return nil
	})
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

package writetools

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// newFileMode is the mode of a created file. os.WriteFile would apply the
// umask to 0666; reading the umask is not possible without changing it, so
// created files get the common result, 0644.
const newFileMode fs.FileMode = 0o644

// writeAtomic replaces target with data: a temporary file in the same
// directory, synced, then renamed over target. Readers and a crash see the
// old content or the new, never a mix. mode 0 keeps an existing target's
// permission bits (newFileMode for a new file).
func writeAtomic(target string, data []byte, mode fs.FileMode) (err error) {
	if mode == 0 {
		mode = newFileMode
		if fi, statErr := os.Stat(target); statErr == nil {
			mode = fi.Mode().Perm()
		} else if !errors.Is(statErr, fs.ErrNotExist) {
			return statErr
		}
	}
	tmp, err := os.CreateTemp(filepath.Dir(target), "."+filepath.Base(target)+".jazz-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err = tmp.Write(data); err != nil {
		return err
	}
	if err = tmp.Chmod(mode); err != nil {
		return err
	}
	if err = tmp.Sync(); err != nil {
		return err
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	if err = os.Rename(tmp.Name(), target); err != nil {
		return err
	}
	syncDir(filepath.Dir(target))
	return nil
}

// syncDir makes a rename durable; failure only weakens durability, so it
// is ignored (some filesystems refuse to sync a directory).
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}

// copyTree copies src (following a top-level link) to dst, which must not
// exist: files with their modes, directories recursively, links inside as
// links. It builds the copy under a temporary name beside dst and renames
// it into place, so dst appears whole or not at all.
func copyTree(src, dst string) (err error) {
	fi, err := os.Stat(src)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return copyFileAtomic(src, dst, fi.Mode().Perm())
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dst), "."+filepath.Base(dst)+".jazz-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			os.RemoveAll(tmp)
		}
	}()
	if err = copyDirInto(src, tmp); err != nil {
		return err
	}
	if err = os.Chmod(tmp, fi.Mode().Perm()); err != nil {
		return err
	}
	return os.Rename(tmp, dst)
}

func copyDirInto(src, dst string) error {
	entries, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	for _, e := range entries {
		s, d := filepath.Join(src, e.Name()), filepath.Join(dst, e.Name())
		fi, err := e.Info()
		if err != nil {
			return err
		}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			t, err := os.Readlink(s)
			if err != nil {
				return err
			}
			if err := os.Symlink(t, d); err != nil {
				return err
			}
		case fi.IsDir():
			if err := os.Mkdir(d, fi.Mode().Perm()|0o700); err != nil {
				return err
			}
			if err := copyDirInto(s, d); err != nil {
				return err
			}
			if err := os.Chmod(d, fi.Mode().Perm()); err != nil {
				return err
			}
		case fi.Mode().IsRegular():
			if err := copyFile(s, d, fi.Mode().Perm()); err != nil {
				return err
			}
		default:
			return fmt.Errorf("cannot copy %s: not a regular file, directory or link", s)
		}
	}
	return nil
}

func copyFile(src, dst string, mode fs.FileMode) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	if err := os.WriteFile(dst, data, mode); err != nil {
		return err
	}
	return os.Chmod(dst, mode)
}

func copyFileAtomic(src, dst string, mode fs.FileMode) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return writeAtomic(dst, data, mode)
}

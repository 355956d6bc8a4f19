package gittools

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/jazz-run/jazz/safefile"
	"github.com/jazz-run/jazz/tools"
)

// git rm deletes a file after checking it, but the check is not the
// deletion: a file rewritten in between (with force, whatever it holds)
// or renamed into place would be deleted under an approval given for
// other bytes. So the twin first renames each file out of its name, to
// a private one beside it, and then checks what it moved: whatever is
// put at the name afterwards is not touched, and what was moved is
// deleted only if it is, by its own bytes and mode, what the preview
// showed. What is left is a writer that already holds the file open and
// writes to it after that check: those bytes, never shown, go with it.

// aside is a work-tree file the twin moved out of its name.
type aside struct {
	orig, tmp string
}

// takeAllAside moves aside each of paths (relative to top) whose
// previewed state is not "missing", checking that what it moved is in
// that state; on any failure the ones moved are put back.
func takeAllAside(ctx context.Context, top string, paths, states []string) ([]*aside, *tools.Result) {
	if len(states) != len(paths) {
		return nil, fail("the preview's file states do not match its paths; propose the change again.")
	}
	var taken []*aside
	for i, p := range paths {
		if states[i] == "missing" {
			if _, err := os.Lstat(filepath.Join(top, p)); !errors.Is(err, fs.ErrNotExist) {
				return nil, fail(putBackAll(taken, fmt.Sprintf("The repository at %s changed since the preview was approved (%s is there again); propose the change again.", disp(top), disp(p))))
			}
			continue
		}
		a, f := takeAside(ctx, top, p, states[i])
		if f != nil {
			return nil, fail(putBackAll(taken, f.Error))
		}
		taken = append(taken, a)
	}
	return taken, nil
}

// takeAside moves the file at path out of its name and checks it.
func takeAside(ctx context.Context, top, path, want string) (*aside, *tools.Result) {
	abs := filepath.Join(top, path)
	// Every directory on the way must be one, not a link: a link put in
	// place of one would have the rename and the delete act outside the
	// work tree.
	if err := dirsOnTheWay(top, abs); err != nil {
		return nil, fail(err.Error() + "; nothing was removed.")
	}
	hold, err := os.CreateTemp(filepath.Dir(abs), ".jazz-rm-*")
	if err != nil {
		return nil, fail(fmt.Sprintf("remove %s: %v; nothing was removed.", disp(abs), err))
	}
	hold.Close()
	a := &aside{orig: abs, tmp: hold.Name()}
	if err := os.Rename(abs, a.tmp); err != nil {
		os.Remove(a.tmp)
		return nil, fail(fmt.Sprintf("remove %s: %v; nothing was removed.", disp(abs), err))
	}
	got, err := stateOfAside(ctx, a.tmp)
	if err != nil || got != want {
		why := "its content differs from the preview"
		if err != nil {
			why = err.Error()
		}
		return nil, fail(putBackAll([]*aside{a}, fmt.Sprintf("The repository at %s changed since the preview was approved (%s: %s); propose the change again.", disp(top), disp(path), why)))
	}
	return a, nil
}

// dirsOnTheWay checks that every directory between top and abs is one,
// not a link to one elsewhere.
func dirsOnTheWay(top, abs string) error {
	for d := filepath.Dir(abs); d != top && strings.HasPrefix(d, top+string(filepath.Separator)); d = filepath.Dir(d) {
		if fi, err := os.Lstat(d); err != nil || !fi.IsDir() {
			return fmt.Errorf("%s is not a directory of the work tree any more", disp(d))
		}
	}
	return nil
}

// stateOfAside is a moved file's state as contentState words it, read
// without following a link.
func stateOfAside(ctx context.Context, p string) (string, error) {
	fi, err := os.Lstat(p)
	if err != nil {
		return "", err
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		target, err := os.Readlink(p)
		if err != nil {
			return "", err
		}
		return linkState(target), nil
	case fi.Mode().IsRegular():
		f, err := safefile.OpenStated(p, fi)
		if err != nil {
			return "", err
		}
		defer f.Close()
		h := sha256.New()
		if err := f.Stream(ctx, func(b []byte) error { h.Write(b); return nil }); err != nil {
			return "", err
		}
		return fileState(f.Info.Mode(), h.Sum(nil)), nil
	}
	return fi.Mode().Type().String(), nil
}

// putBackAll returns each moved file to its name, never over a file put
// there meanwhile (a hard link to the name fails if it exists), and is
// msg with what could not be put back.
func putBackAll(taken []*aside, msg string) string {
	var stuck []string
	for _, a := range taken {
		if err := os.Link(a.tmp, a.orig); err != nil {
			stuck = append(stuck, fmt.Sprintf("%s is at %s (%v)", disp(a.orig), disp(a.tmp), err))
			continue
		}
		os.Remove(a.tmp)
	}
	if len(stuck) > 0 {
		msg += " Not put back, as something took their place: " + strings.Join(stuck, "; ") + "."
	}
	return msg
}

// deleteTaken deletes the files moved aside, and then each directory it
// left empty up to top, as git rm does.
func deleteTaken(top string, taken []*aside) error {
	var errs []string
	for _, a := range taken {
		err := dirsOnTheWay(top, a.tmp)
		if err == nil {
			err = os.Remove(a.tmp)
		}
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s (moved to %s) could not be deleted: %v", disp(a.orig), disp(a.tmp), err))
			continue
		}
		for d := filepath.Dir(a.orig); d != top && strings.HasPrefix(d, top+string(filepath.Separator)); d = filepath.Dir(d) {
			if os.Remove(d) != nil {
				break
			}
		}
	}
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}

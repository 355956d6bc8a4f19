//go:build unix

package writetools

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/jazz-run/jazz/tools"
)

// The twins' acts, after the fingerprint matched. Each works relative to
// the verified descriptors of a target and checks again, as close to the
// act as the system allows, that the entry it replaces or removes is the
// one the preview saw.

// errChanged is a leaf that differs from the preview at the last check.
var errChanged = errors.New("changed since the preview")

// stopReason words why a context ended, for the model.
func stopReason(err error) string {
	if errors.Is(err, context.DeadlineExceeded) {
		return "the tool's time limit was reached"
	}
	return "the call was cancelled"
}

// stopped is a twin's report when its context ended: what it did.
func stopped(name string, err error, what string) tools.Result {
	return tools.Fail(fmt.Sprintf("%s stopped because %s. %s", name, stopReason(err), what))
}

// unlessStopped is a twin's refusal before it acted, unless its context
// ended: then the failure is most likely the stop's, and the model is
// told that, and that nothing was changed.
func unlessStopped(ctx context.Context, name string, r tools.Result) tools.Result {
	if err := ctx.Err(); err != nil && !r.Success {
		return stopped(name, err, "Nothing was changed.")
	}
	return r
}

// isStop says whether err is the context ending.
func isStop(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// madeDirs are directories a twin created, undone if it stops.
type madeDirs struct {
	parents []int    // the directory each was made in
	names   []string // its name there
	opened  []int    // descriptors of the made directories, to close
}

// makeMissing creates the directories t's parent lacks (createDirs) and
// returns the descriptor to create the leaf in: t.parent when none were
// missing. A name that appeared meanwhile is a change.
func makeMissing(ctx context.Context, t *target) (int, *madeDirs, error) {
	m := &madeDirs{}
	fd := t.parent
	for _, name := range t.missing {
		if err := ctx.Err(); err != nil {
			m.undo()
			return -1, nil, err
		}
		if err := unix.Mkdirat(fd, name, 0o755); err != nil {
			m.undo()
			if errors.Is(err, unix.EEXIST) {
				return -1, nil, errChanged
			}
			return -1, nil, pathErr("mkdir", name, err)
		}
		m.parents, m.names = append(m.parents, fd), append(m.names, name)
		nfd, _, err := openDirAt(fd, name)
		if err != nil {
			m.undo()
			return -1, nil, errChanged
		}
		m.opened = append(m.opened, nfd)
		fd = nfd
	}
	return fd, m, nil
}

// undo removes the directories made, deepest first (only while empty).
func (m *madeDirs) undo() {
	for i := len(m.names) - 1; i >= 0; i-- {
		unix.Unlinkat(m.parents[i], m.names[i], unix.AT_REMOVEDIR)
	}
	m.done()
}

// done closes the descriptors makeMissing opened (not t.parent).
func (m *madeDirs) done() {
	for _, fd := range m.opened {
		unix.Close(fd)
	}
	*m = madeDirs{}
}

// sameState says whether an entry is unchanged since want was taken:
// identity, type, mode, size and both times.
func sameState(st, want *unix.Stat_t) bool {
	return sameFile(st, want) && st.Mode == want.Mode && st.Size == want.Size &&
		st.Mtim == want.Mtim && st.Ctim == want.Ctim
}

// replaceFile writes data as t's leaf: a temporary file beside it, then a
// rename over it, so readers and a crash see the old content or the new.
// Right before the rename, the leaf is checked to be the file the preview
// read (or still absent); an absent leaf is created without replacing
// anything that appeared (renameat2 RENAME_NOREPLACE). The remaining
// window, a rewrite in place between that check and the rename, is the
// one no POSIX call closes.
func replaceFile(ctx context.Context, t *target, data []byte) error {
	dirfd, made, err := makeMissing(ctx, t)
	if err != nil {
		return err
	}
	dir := filepath.Dir(t.real)
	tmp, err := writeTempAt(ctx, dirfd, dir, t.leaf, data, t.mode(), t.st)
	if err != nil {
		made.undo()
		return err
	}
	fail := func(err error) error {
		unix.Unlinkat(dirfd, tmp, 0)
		made.undo()
		return err
	}
	if err := ctx.Err(); err != nil {
		return fail(err)
	}
	if t.st == nil {
		err = renameNoReplace(dirfd, tmp, dirfd, t.leaf)
		if errors.Is(err, unix.EEXIST) {
			return fail(errChanged)
		}
	} else {
		st, serr := lstatAt(dirfd, t.leaf)
		if serr != nil || !sameState(st, t.st) {
			return fail(errChanged)
		}
		err = unix.Renameat(dirfd, tmp, dirfd, t.leaf)
	}
	if err != nil {
		return fail(pathErr("rename", t.real, err))
	}
	syncDirAt(dirfd)
	made.done()
	return nil
}

// takeAside renames t's leaf to a fresh hidden name in the same directory
// and checks that what it moved is what the preview described: only then
// is it destroyed, so a swap at the last moment is never what goes. The
// check after the move is what makes it exact: the name can change until
// the rename, the moved entry cannot change identity after it.
func takeAside(ctx context.Context, t *target) (string, error) {
	aside := tempName(t.leaf)
	if err := renameNoReplace(t.parent, t.leaf, t.parent, aside); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return "", errChanged
		}
		return "", pathErr("rename", t.real, err)
	}
	if err := verifyAside(ctx, t, aside); err != nil {
		if perr := putBack(t, aside); perr != nil {
			return "", perr
		}
		return "", err
	}
	return aside, nil
}

func verifyAside(ctx context.Context, t *target, aside string) error {
	st, err := lstatAt(t.parent, aside)
	if err != nil || !sameFile(st, t.st) || st.Mode != t.st.Mode {
		return errChanged
	}
	link := ""
	if t.kind == "link" {
		if link, err = readlinkAt(t.parent, aside); err != nil || link != t.link {
			return errChanged
		}
	}
	if entryLine(".", st, link, false) != entryLine(".", t.st, t.link, false) {
		return errChanged
	}
	if t.kind == "dir" {
		info, err := inspectTreeAt(ctx, t.guard, t.parent, aside, filepath.Join(t.parentPath, aside), st)
		if isStop(err) {
			return err
		}
		if err != nil || info.digest != t.tree.digest {
			return errChanged
		}
	}
	return nil
}

// putBack returns an entry taken aside to its name; if something took the
// name meanwhile, the entry stays aside and the error says where.
func putBack(t *target, aside string) error {
	if err := renameNoReplace(t.parent, aside, t.parent, t.leaf); err != nil {
		return fmt.Errorf("%s could not be put back (%v); it is at %s", t.real, err, filepath.Join(t.parentPath, aside))
	}
	return nil
}

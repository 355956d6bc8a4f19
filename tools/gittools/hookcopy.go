package gittools

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/jazz-run/jazz/secrets"
	"github.com/jazz-run/jazz/tools"
)

// maxHookBytes bounds one hook as a twin holds it in memory to copy: a
// script is a few kilobytes, a compiled hook some megabytes.
const maxHookBytes = 64 << 20

// hookFile is one hook as hookSet read it: the bytes whose hash the
// approval covers are the bytes git runs.
type hookFile struct {
	name string
	body []byte
}

// readHook reads the hook at p (through links), in-process so a FIFO or
// device cannot stall it, once: what is hashed is what is copied. It is
// read through the run's secrets guard: jazz reads it outside git's
// sandbox and puts the bytes where the sandboxed hooks can read them, so
// a hook that is a link to (or a hard link of) a file of JAZZ_HOME, a
// secret file or /proc would carry that file out of the sandbox.
func readHook(ctx context.Context, g secrets.Guard, p string) ([]byte, error) {
	f, err := g.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.ReadAll(ctx, maxHookBytes)
}

// pinHooks makes the approved hooks the only ones a twin's git runs:
// their bytes as hookSet read them (the read whose hash matched the
// approval) go into a directory of the twin's own, made for this call,
// which git is then given as core.hooksPath (repo.cmd, repo.network;
// for a push to a repository on this machine, its receive-pack too).
// A hook added, rewritten or replaced by a link in the repository's
// hooks directory after that read is not in the copy, so it does not
// run; a hook that was not approved is simply absent. Only the hooks are
// copied: a file beside them that one reads or sources (husky's
// `_/husky.sh`) was neither shown nor hashed, so it is not there, and
// such a hook fails rather than run code nobody approved.
//
// The copy is <tmp>/jazz-hooks-*/hooks, 0700 throughout, so what a hook
// finds beside or above itself ("$(dirname "$0")/..") is the twin's empty
// directory, not a shared one such as /tmp. done removes it; the caller
// defers it, so it goes however the call ends, cancelled too.
func (r *repo) pinHooks(files []hookFile) (dir string, done func(), f *tools.Result) {
	if len(files) == 0 {
		return "", func() {}, nil
	}
	base, err := os.MkdirTemp("", "jazz-hooks-")
	if err != nil {
		return "", nil, fail(fmt.Sprintf("Refused: cannot make a private copy of the approved hooks: %v", err))
	}
	remove := func() { os.RemoveAll(base) }
	refuse := func(msg string) (string, func(), *tools.Result) {
		remove()
		return "", nil, fail("Refused: " + msg)
	}
	if base, err = filepath.Abs(base); err != nil {
		return refuse(fmt.Sprintf("cannot make a private copy of the approved hooks: %v", err))
	}
	d := filepath.Join(base, "hooks")
	// git and the hooks run in the sandbox, where the run's secrets are
	// covered: a copy under one of them would be an empty directory to
	// git, which would then run no hook without a word.
	real := evalOr(base)
	for _, h := range r.box.hiddenPaths() {
		if secrets.Within(base, h) || secrets.Within(real, evalOr(h)) {
			return refuse(fmt.Sprintf("the temporary directory %s lies inside %s, which git's sandbox hides, so the approved hooks could not run from there; set TMPDIR elsewhere.", disp(base), disp(h)))
		}
	}
	for _, p := range []string{r.top, r.gitDir, r.commonDir} {
		if p != "" && secrets.Within(real, evalOr(p)) {
			return refuse(fmt.Sprintf("the temporary directory %s lies inside the repository (%s), where the copy of the approved hooks would be part of what git works on; set TMPDIR elsewhere.", disp(base), disp(p)))
		}
	}
	if err := os.Mkdir(d, 0o700); err != nil {
		return refuse(fmt.Sprintf("cannot make a private copy of the approved hooks: %v", err))
	}
	for _, h := range files {
		if err := writeNew(filepath.Join(d, h.name), h.body); err != nil {
			return refuse(fmt.Sprintf("cannot copy the approved hook %s: %v", disp(h.name), err))
		}
	}
	return d, remove, nil
}

// writeNew writes body to a file that must not exist yet, executable by
// its owner alone.
func writeNew(p string, body []byte) error {
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o700)
	if err != nil {
		return err
	}
	if _, err := f.Write(body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

//go:build unix

package writetools

import (
	"errors"
	"os"
	"path/filepath"

	"github.com/jazz-run/jazz/safefile"
	"github.com/jazz-run/jazz/secrets"
	"github.com/jazz-run/jazz/tools"
)

// The file tools read (a preview's old content, a copy's source) and
// write, move and remove: each of those, propose half and twin alike,
// is refused where the read tools refuse to read (secrets.Guard):
// JAZZ_HOME, process information under /proc, and the run's other secret
// files. Reading there would hand the model jazz's keys through a diff, a
// copy or the yes/no of a pattern not found, without anyone approving
// anything; writing there would let one approved (or allowlisted) write
// rewrite the policy, agents and approvers the next call or run obeys.

// guardOf is the run's secrets guard: JAZZ_HOME (else the default
// ~/.jazz, so a bare Env still protects it), /proc and the secret files.
func guardOf(env *tools.Env) secrets.Guard {
	home := env.JazzHome
	if home == "" && env.Home != "" {
		home = filepath.Join(env.Home, ".jazz")
	}
	return env.Secrets.Guard(home)
}

// judgeLocated refuses a located path whose directory, or whose own name,
// is in a protected place. The directory is judged with every link
// resolved (its path is physical already, so this only re-checks it, by
// identity too), the leaf by its name. A leaf the tool follows (and so
// reads or writes through: write_file, edit_file, cp's source) is judged
// as a whole file too, a hard link of one of jazz's files included; a
// leaf acted on as a name only (rm, mv, a replaced destination) is not:
// removing or renaming a link or hard link in the workspace leaves what
// it shares alone. Whatever is read is judged again on the opened
// descriptor (judgeOpened).
func judgeLocated(g secrets.Guard, l *located, followLeaf bool) error {
	if err := g.Check(l.parentPath); err != nil {
		return refusal(l.lexical, err)
	}
	if g.Excluded(l.real) {
		return refusal(l.lexical, ownFile(l.real))
	}
	if followLeaf && l.st != nil {
		if err := g.Check(l.real); err != nil {
			return refusal(l.lexical, err)
		}
	}
	return nil
}

// ownFile is the refusal of a path Guard.Excluded names.
func ownFile(p string) *secrets.RefusedError {
	return &secrets.RefusedError{Path: p, Reason: "is one of jazz's own files (in JAZZ_HOME, a secret file, or process information); jazz's tools do not read it."}
}

// judgeOpened refuses a file the tool has open for reading by what it is:
// the kernel's name for the descriptor, its file system, its identity (a
// hard link in the workspace of a file in JAZZ_HOME).
func judgeOpened(g secrets.Guard, f *os.File, display string) error {
	fi, err := f.Stat()
	if err != nil {
		return pathErr("stat", display, err)
	}
	if err := g.CheckOpened(&safefile.File{File: f, Info: fi}, display); err != nil {
		return refusal(display, err)
	}
	return nil
}

// refusedError is a file tool's refusal of a protected place; a failure
// to judge one (a loop, a permission) refuses too.
type refusedError struct {
	path string
	err  error
}

func (e *refusedError) Error() string {
	var r *secrets.RefusedError
	if errors.As(e.err, &r) {
		return "Refused: " + disp(e.path) + " " + r.Reason + " The file tools do not write, move or remove it either."
	}
	return "Refused: " + disp(e.path) + ": could not check that it is none of jazz's own files (" + e.err.Error() + ")."
}

func (e *refusedError) Unwrap() error { return e.err }

func refusal(path string, err error) error {
	var r *refusedError
	if errors.As(err, &r) {
		return err
	}
	return &refusedError{path: path, err: err}
}

package childproc

import (
	"errors"
	"io"

	"github.com/jazz-run/jazz/isolate"
)

// Spec is one program to start.
type Spec struct {
	// Argv is the program and its arguments; Argv[0] without a slash is
	// looked up in the PATH of Env.
	Argv []string
	// Env is the program's complete environment (KEY=VALUE).
	Env []string
	// Dir is the working directory; "" means jazz's own.
	Dir string
	// Stderr receives the program's stderr; nil discards it. It is
	// written from a goroutine of this package until the Proc is stopped.
	Stderr io.Writer
	// NoCgroup skips the cgroup and relies on the reaper alone (as on a
	// system without a writable cgroup v2 hierarchy; for tests).
	NoCgroup bool
	// Hide are the paths the program must not see (JAZZ_HOME, the run's
	// key files): the reaper and the program start in the namespaces of
	// package isolate, where they are empty. When Isolator finds that
	// the machine allows no isolation, Start refuses rather than let the
	// program read them. Isolator nil probes for this Start alone.
	Hide     []string
	Isolator *isolate.Isolator
}

// ErrUnhidden is wrapped when a program with paths to hide cannot be
// started where it would not see them.
var ErrUnhidden = errors.New("not started: the program could read jazz's own secrets")

// ErrNotFound matches a program that is not on the PATH it was looked up in.
var ErrNotFound = errors.New("program not found")

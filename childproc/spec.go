package childproc

import (
	"errors"
	"io"
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
}

// ErrNotFound matches a program that is not on the PATH it was looked up in.
var ErrNotFound = errors.New("program not found")

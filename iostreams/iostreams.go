// Package iostreams is the one place jazz touches stdin, stdout and
// stderr: real streams for a process, buffers for tests, and the terminal
// checks the headless contract depends on.
package iostreams

import (
	"bytes"
	"io"
	"os"

	"golang.org/x/term"
)

// IOStreams are the three standard streams and what they are attached to.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer

	stdinTTY  bool
	stdoutTTY bool
	stdinPipe bool
}

// System wraps the process's streams.
func System() *IOStreams {
	return &IOStreams{
		In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr,
		stdinTTY:  isTerminal(os.Stdin),
		stdoutTTY: isTerminal(os.Stdout),
		stdinPipe: isPipe(os.Stdin),
	}
}

// Test returns streams backed by buffers: in, out, errOut.
func Test() (*IOStreams, *bytes.Buffer, *bytes.Buffer, *bytes.Buffer) {
	in, out, errOut := &bytes.Buffer{}, &bytes.Buffer{}, &bytes.Buffer{}
	return &IOStreams{In: in, Out: out, ErrOut: errOut}, in, out, errOut
}

// IsStdinTTY reports whether stdin is a terminal.
func (s *IOStreams) IsStdinTTY() bool { return s.stdinTTY }

// IsStdoutTTY reports whether stdout is a terminal.
func (s *IOStreams) IsStdoutTTY() bool { return s.stdoutTTY }

// IsStdinPipe reports whether stdin is a pipe or a socket: a program at
// the other end that may keep writing (a bridge), unlike a file, a
// terminal or /dev/null.
func (s *IOStreams) IsStdinPipe() bool { return s.stdinPipe }

// SetStdinPipe overrides pipe detection (tests).
func (s *IOStreams) SetStdinPipe(v bool) { s.stdinPipe = v }

// SetStdinTTY overrides terminal detection (tests).
func (s *IOStreams) SetStdinTTY(v bool) { s.stdinTTY = v }

// SetStdoutTTY overrides terminal detection (tests).
func (s *IOStreams) SetStdoutTTY(v bool) { s.stdoutTTY = v }

// isTerminal asks the system for terminal attributes (termios on Unix,
// the console mode on Windows): a pipe, a file and /dev/null (a
// character device, but no terminal) all say no.
func isTerminal(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }

// isPipe says whether f is a FIFO or a socket.
func isPipe(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&(os.ModeNamedPipe|os.ModeSocket) != 0
}

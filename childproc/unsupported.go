//go:build !unix

package childproc

import (
	"context"
	"errors"
	"io"
	"time"
)

// ErrUnsupported is what Start returns where there is no Unix: a program
// is started in a session of its own under a subreaper, so that nothing
// it starts outlives Stop, and no weaker start is offered instead.
var ErrUnsupported = errors.New("starting programs needs a Unix system (sessions, a subreaper); not available here")

// Proc is one started program; none exists here.
type Proc struct{ done chan struct{} }

// Start fails with ErrUnsupported.
func Start(Spec) (*Proc, error) { return nil, ErrUnsupported }

// Stdin is the program's standard input.
func (p *Proc) Stdin() io.WriteCloser { return nil }

// Stdout is the program's standard output.
func (p *Proc) Stdout() io.ReadCloser { return nil }

// Done is closed when the program has ended.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Exit says how the program ended.
func (p *Proc) Exit() string { return "" }

// ExitCode is the program's exit status.
func (p *Proc) ExitCode() int { return -1 }

// Stop ends the program.
func (p *Proc) Stop(context.Context, time.Duration) error { return ErrUnsupported }

// Kill ends the program now.
func (p *Proc) Kill(context.Context) error { return ErrUnsupported }

// LookPath fails with ErrUnsupported: nothing found could be started.
func LookPath(name, path, dir string) (string, error) { return "", ErrUnsupported }

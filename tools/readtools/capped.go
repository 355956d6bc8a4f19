package readtools

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"time"

	"github.com/jazz-run/jazz/shellguard"
)

// capBuffer keeps the first limit bytes written and drains the rest, so a
// chatty child never blocks on a full pipe and memory stays bounded.
type capBuffer struct {
	buf       bytes.Buffer
	limit     int
	truncated bool
}

func (c *capBuffer) Write(p []byte) (int, error) {
	n := len(p) // report all of it taken, or the copier stops with a short write
	if room := c.limit - c.buf.Len(); room < len(p) {
		c.truncated = true
		p = p[:max(room, 0)]
	}
	c.buf.Write(p)
	return n, nil
}

// text is what was kept; a capped stream loses its partial last line.
func (c *capBuffer) text() string {
	b := c.buf.Bytes()
	if c.truncated {
		if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
			b = b[:i+1]
		} else {
			b = nil
		}
	}
	return string(b)
}

// childOutput is a finished child's capped output.
type childOutput struct {
	stdout, stderr     string
	stdoutTruncated    bool
	stderrTruncated    bool
	exitCode           int
	timedOut, notFound bool
	err                error // spawn failure
}

// runCapped runs name with args in dir: no stdin (the null device), each
// stream capped at StreamCap, killed after ChildTimeout.
func runCapped(ctx context.Context, dir, name string, args ...string) childOutput {
	ctx, cancel := context.WithTimeout(ctx, ChildTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	// None of jazz's credentials: the child could be pointed at its own
	// /proc/self/environ, and needs only PATH and the locale.
	cmd.Env = shellguard.WithoutSecrets(os.Environ())
	// Grandchildren holding the pipes must not hang Wait past the kill.
	cmd.WaitDelay = time.Second
	out := &capBuffer{limit: StreamCap}
	errb := &capBuffer{limit: StreamCap}
	cmd.Stdout, cmd.Stderr = out, errb
	err := cmd.Run()
	res := childOutput{stdout: out.text(), stderr: errb.text(), stdoutTruncated: out.truncated, stderrTruncated: errb.truncated}
	var exit *exec.ExitError
	switch {
	case ctx.Err() == context.DeadlineExceeded:
		res.timedOut = true
	case errors.As(err, &exit):
		res.exitCode = exit.ExitCode()
	case err != nil:
		res.err = err
	}
	return res
}

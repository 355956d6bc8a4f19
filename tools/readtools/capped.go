package readtools

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"time"

	"github.com/jazz-run/jazz/secrets"
	"github.com/jazz-run/jazz/shellguard"
	"github.com/jazz-run/jazz/tools/capbuf"
)

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
func runCapped(ctx context.Context, known *secrets.Redactor, dir, name string, args ...string) childOutput {
	ctx, cancel := context.WithTimeout(ctx, ChildTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	// None of jazz's credentials: the child could be pointed at its own
	// /proc/self/environ, and needs only PATH and the locale.
	cmd.Env = shellguard.WithoutSecrets(os.Environ(), known)
	// Grandchildren holding the pipes must not hang Wait past the kill.
	cmd.WaitDelay = time.Second
	out := &capbuf.Buffer{Limit: StreamCap}
	errb := &capbuf.Buffer{Limit: StreamCap}
	cmd.Stdout, cmd.Stderr = out, errb
	err := cmd.Run()
	res := childOutput{stdout: out.Text(), stderr: errb.Text(), stdoutTruncated: out.Truncated(), stderrTruncated: errb.Truncated()}
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

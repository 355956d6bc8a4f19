//go:build unix

package childproc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/jazz-run/jazz/proctree"
	"github.com/jazz-run/jazz/shellrun"
)

// reaperArg is the hidden argument that makes a jazz binary (or any
// binary linking this package, test binaries included) serve as a reaper:
// jazz __jazz-child-reaper <path> <argv0> <args...>.
const reaperArg = "__jazz-child-reaper"

// killSignal asks the reaper to kill everything at once.
const killSignal = syscall.SIGUSR1

// sweepBound limits the reaper's final sweep.
const sweepBound = 5 * time.Second

// The hand-off runs before main, so a binary started as a reaper never
// reaches its own main (the CLI, or a test binary's tests). It leaves by
// syscall.Exit, as isolate's hand-offs do: nothing of it is buffered, and
// os.Exit(0) in a race-enabled binary first sleeps a second (GORACE
// atexit_sleep_ms) after every program it ran.
func init() {
	if len(os.Args) >= 4 && os.Args[1] == reaperArg {
		syscall.Exit(reap(os.Args[2], os.Args[3:]))
	}
}

// reap is the reaper's whole life: become the subreaper, start the
// program on the reaper's stdin, stdout and stderr, wait for it (or for a
// signal to stop it), kill and reap whatever it left, and exit with its
// status.
func reap(path string, argv []string) int {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, killSignal)
	if err := prepareReaper(); err != nil {
		fmt.Fprintf(os.Stderr, "jazz: cannot start %s: %v\n", path, err)
		return 126
	}
	if err := shellrun.DropPtrace(); err != nil {
		fmt.Fprintf(os.Stderr, "jazz: cannot start %s: drop CAP_SYS_PTRACE: %v\n", path, err)
		return 126
	}
	cmd := &exec.Cmd{Path: path, Args: argv, Env: os.Environ(), Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "jazz: cannot start %s: %v\n", path, err)
		return 127
	}
	// The program holds the pipes now; jazz must see their end when the
	// program (and whatever it started) is gone, not when the reaper is.
	releaseStdio()
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	select {
	case <-exited:
	case s := <-sigs:
		if s != killSignal {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			t := time.NewTimer(termGrace)
			select {
			case <-exited:
			case <-t.C:
			case <-sigs: // asked again: stop waiting
			}
			t.Stop()
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), sweepBound)
	_, _ = proctree.Sweep(ctx)
	cancel()
	select {
	case <-exited:
	case <-time.After(killBound):
	}
	return statusOf(cmd)
}

// statusOf is the program's exit code, 128+n after signal n (and 128+9
// when the sweep had to kill it before it was waited for).
func statusOf(cmd *exec.Cmd) int {
	if cmd.ProcessState == nil {
		return 128 + int(syscall.SIGKILL)
	}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return cmd.ProcessState.ExitCode()
}

// errOrphan is a reaper whose jazz died before it could arm its death
// signal.
var errOrphan = errors.New("jazz exited before the program could start")

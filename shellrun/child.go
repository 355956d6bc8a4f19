//go:build unix

package shellrun

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/interp"
	"mvdan.cc/sh/v3/syntax"

	"github.com/jazz-run/jazz/proctree"
	"github.com/jazz-run/jazz/shellguard"
)

// childArg is the hidden argument that makes a jazz binary (or any binary
// linking this package, test binaries included) serve as a runner.
const childArg = "__jazz-shell-runner"

// The runner's file descriptors, set up by the parent.
const (
	fdControl  = 0 // the request frame; then EOF (or a byte) means stop
	fdStdout   = 1 // the command's stdout
	fdDiag     = 2 // the runner's own diagnostics (a Go crash report)
	fdStderr   = 3 // the command's stderr
	fdResponse = 4 // the response frame
)

// The hand-off runs before main: a binary started as a runner never
// reaches its own main (the jazz CLI, or a test binary's tests), so every
// binary that can run execute_command can also serve as its runner.
func init() {
	if len(os.Args) == 2 && os.Args[1] == childArg {
		os.Exit(serve())
	}
}

// sweepBound limits the final sweep of leftovers.
const sweepBound = 5 * time.Second

// serve is the runner's whole life: read the request, limit itself, run
// the command, end every process it left, answer, exit.
func serve() int {
	// A write to a closed stdout pipe (the parent died) must fail with
	// EPIPE, not kill the runner before it sweeps. A caught signal is reset
	// to the default in the programs it starts; an ignored one would not be.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	restoreErr := restoreIgnoredSignals()
	ctrl := os.NewFile(fdControl, "control")
	stdout := os.NewFile(fdStdout, "stdout")
	stderr := os.NewFile(fdStderr, "stderr")
	respW := os.NewFile(fdResponse, "response")
	if ctrl == nil || stdout == nil || stderr == nil || respW == nil {
		fmt.Fprintln(os.Stderr, "jazz shell runner: started without its pipes; it is started by jazz itself, not by hand")
		return 3
	}
	f := &finisher{resp: respW}
	warmUp()
	var req Request
	if err := readFrame(ctrl, &req, MaxRequestBytes); err != nil {
		if errors.Is(err, io.EOF) {
			// Started ahead, and jazz is gone (or closed the pool): take
			// the cgroup made for this runner with it.
			_ = proctree.LeaveOwnCgroup()
		}
		f.finish(response{Error: "the shell runner could not read its request: " + err.Error()})
		return 0
	}
	if restoreErr != nil {
		f.finish(response{Error: "the shell runner could not reset its signals: " + restoreErr.Error()})
		return 0
	}
	if err := prepare(req); err != nil {
		f.finish(response{Error: err.Error()})
		return 0
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Anything more on the control pipe, or its end, means stop: the
	// parent cancelled, or died (its end closes with it).
	go func() {
		var b [1]byte
		_, _ = ctrl.Read(b[:])
		cancel()
	}()
	go watchMemory(ctx, req.ShellMemoryLimit, f)

	out := interpret(ctx, req, stdout, stderr)
	f.finish(out)
	return 0
}

// warmUp compiles the denylist and interprets a fixed script that runs
// nothing (no program, no file, no output) while the runner waits for its
// request: their first use in a fresh process costs about a millisecond
// (regular expressions, page faults, first allocations), which a runner
// started ahead then spends before its command arrives, not after.
func warmUp() {
	_, _ = shellguard.Builtin().CheckArgv([]string{"true"}, "")
	file, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(`x=1; y="${x}2"; [ "$y" = 12 ] && : $((x+1))`), "")
	if err != nil {
		return
	}
	refuse := func(context.Context, []string) error { return errors.New("warm-up runs no program") }
	runner, err := interp.New(
		interp.Dir("/"),
		interp.Env(expand.ListEnviron()),
		interp.StdIO(nil, io.Discard, io.Discard),
		interp.ExecHandlers(func(interp.ExecHandlerFunc) interp.ExecHandlerFunc { return refuse }),
		interp.OpenHandler(func(context.Context, string, int, os.FileMode) (io.ReadWriteCloser, error) {
			return nil, errors.New("warm-up opens no file")
		}),
	)
	if err == nil {
		_ = runner.Run(context.Background(), file)
	}
}

// prepare limits the runner (and, by inheritance, every program it
// starts), makes it the reaper of its orphans, and enters the pinned
// directory after checking it is still the one that was approved.
func prepare(req Request) error {
	if err := proctree.BecomeSubreaper(); err != nil {
		return fmt.Errorf("the shell runner cannot track the command's processes: %w", err)
	}
	if err := setLimits(req); err != nil {
		return err
	}
	if err := dropPtrace(); err != nil {
		return fmt.Errorf("the shell runner cannot drop its ptrace capability: %w", err)
	}
	if err := CheckDir(req.Dir, req.DirState); err != nil {
		return err
	}
	if err := os.Chdir(req.Dir); err != nil {
		return fmt.Errorf("enter the working directory: %w", err)
	}
	return nil
}

// setLimits applies the per-process limits: data segment (RLIMIT_DATA:
// heap and private writable mappings, so runtimes that merely reserve
// address space still start), CPU seconds (a little above the timeout: the
// timeout normally ends the command first), and no core files.
func setLimits(req Request) error {
	cpu := uint64(req.Timeout/time.Second) + 2
	for _, l := range []struct {
		name     string
		res      int
		cur, max uint64
	}{
		{"memory (RLIMIT_DATA)", unix.RLIMIT_DATA, uint64(req.MemoryLimit), uint64(req.MemoryLimit)},
		{"CPU time (RLIMIT_CPU)", unix.RLIMIT_CPU, cpu, cpu + 2},
		{"core size (RLIMIT_CORE)", unix.RLIMIT_CORE, 0, 0},
	} {
		lim := unix.Rlimit{Cur: l.cur, Max: l.max}
		var old unix.Rlimit
		if err := unix.Getrlimit(l.res, &old); err == nil && old.Max < lim.Max {
			// Never ask for more than the hard limit jazz itself has.
			lim.Max = old.Max
			lim.Cur = min(lim.Cur, old.Max)
		}
		if err := unix.Setrlimit(l.res, &lim); err != nil {
			return fmt.Errorf("the shell runner cannot set its %s limit: %w", l.name, err)
		}
	}
	return nil
}

// memoryPoll is how often the runner reads its own resident size.
const memoryPoll = 10 * time.Millisecond

// watchMemory ends the run when the interpreter itself (variables,
// expansions: `x=$x$x` in a loop) outgrows limit. RLIMIT_DATA stays the
// hard stop; this one answers first, with a clear result.
func watchMemory(ctx context.Context, limit int64, f *finisher) {
	t := time.NewTicker(memoryPoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if rss, ok := residentBytes(); ok && rss > limit {
			f.finish(response{MemoryExceeded: true})
		}
	}
}

// finisher answers exactly once and exits: the script's end and the
// memory watch may both try.
type finisher struct {
	once sync.Once
	resp io.Writer
}

// finish ends every process the command left, sends the response and
// exits the runner. It does not return.
func (f *finisher) finish(r response) {
	f.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), sweepBound)
		n, err := proctree.Sweep(ctx)
		cancel()
		r.Killed += n
		if err != nil && r.Error == "" {
			r.SweepError = err.Error()
		}
		if err := writeFrame(f.resp, r, maxResponseBytes); err != nil {
			fmt.Fprintln(os.Stderr, "jazz shell runner:", err)
			os.Exit(3)
		}
		os.Exit(0)
	})
	select {} // the other caller exits the process
}

package shelltool

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/interp"
	"mvdan.cc/sh/v3/syntax"

	"github.com/jazz-run/jazz/shellguard"
)

// RunRequest is one command to interpret.
type RunRequest struct {
	Command string
	Dir     string
	// Env is the complete child environment (KEY=VALUE).
	Env []string
	// Timeout bounds the whole run; 0 means none beyond ctx.
	Timeout time.Duration
	// Deny checks every command before it runs; nil means the built-in
	// denylist.
	Deny *shellguard.Denylist
}

// RunOutput is what a run produced. Stdout and Stderr are decoded,
// trimmed and, when capped, end with the truncation line.
type RunOutput struct {
	ExitCode  int
	Stdout    string
	Stderr    string
	Truncated bool
	// TimedOut is set when Timeout elapsed and the run was killed.
	TimedOut bool
	// Blocked is the denylist reason when a command was refused at run
	// time (after expansion); the run stopped there.
	Blocked string
}

// errBlocked halts the interpreter when the run-time check refuses a call.
var errBlocked = errors.New("blocked by the safety denylist")

// Run interprets req.Command with mvdan.cc/sh (bash dialect) instead of
// spawning `sh -c`, so that every simple command is checked after
// expansion. Stdin is empty. Every external program starts in its own
// process group; the group is SIGKILLed when the program exits (taking
// stragglers with it), on timeout and on cancellation, and Run returns only
// after every program it started has been reaped.
func Run(ctx context.Context, req RunRequest) (RunOutput, error) {
	deny := req.Deny
	if deny == nil {
		deny = shellguard.Builtin()
	}
	file, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(req.Command), "")
	if err != nil {
		return RunOutput{}, fmt.Errorf("parse command: %w", err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	if req.Timeout > 0 {
		var cancelT context.CancelFunc
		runCtx, cancelT = context.WithTimeout(runCtx, req.Timeout)
		defer cancelT()
	}
	tempDir, _ := shellguard.LookupEnv(req.Env, "TMPDIR")
	r := &run{deny: deny, tempDir: tempDir}
	stdout := &capped{limit: OutputCap}
	stderr := &capped{limit: OutputCap}
	runner, err := interp.New(
		interp.Dir(req.Dir),
		interp.Env(expand.ListEnviron(req.Env...)),
		interp.StdIO(nil, stdout, stderr),
		interp.CallHandler(r.checkCall),
		interp.ExecHandlers(r.checkExec, func(interp.ExecHandlerFunc) interp.ExecHandlerFunc { return r.exec }),
	)
	if err != nil {
		return RunOutput{}, fmt.Errorf("start shell interpreter: %w", err)
	}
	runErr := runner.Run(runCtx, file)
	timedOut := req.Timeout > 0 && errors.Is(runCtx.Err(), context.DeadlineExceeded) && ctx.Err() == nil
	// Background jobs (`cmd &`) may still run: stop them all and wait.
	cancel()
	r.procs.closeAndWait()

	out := RunOutput{Blocked: r.blockedReason()}
	out.Stdout, out.Truncated = stdout.text("stdout")
	var errTrunc bool
	out.Stderr, errTrunc = stderr.text("stderr")
	out.Truncated = out.Truncated || errTrunc
	if out.Blocked != "" {
		return out, nil
	}
	if timedOut {
		out.TimedOut = true
		return out, nil
	}
	if err := ctx.Err(); err != nil {
		return out, fmt.Errorf("command cancelled: %w", err)
	}
	var status interp.ExitStatus
	switch {
	case runErr == nil:
	case errors.As(runErr, &status):
		out.ExitCode = int(status)
	default:
		return out, fmt.Errorf("run command: %w", runErr)
	}
	return out, nil
}

// run is the state of one Run, shared by the handlers of its interpreter
// (background jobs and pipeline stages call them concurrently).
type run struct {
	deny    *shellguard.Denylist
	tempDir string
	procs   tracker

	mu      sync.Mutex
	blocked string
}

func (r *run) block(reason string) {
	r.mu.Lock()
	if r.blocked == "" {
		r.blocked = reason
	}
	r.mu.Unlock()
}

func (r *run) blockedReason() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.blocked
}

// checkCall sees every simple command after expansion (builtins such as
// eval, source and exec, function calls, and programs).
func (r *run) checkCall(_ context.Context, args []string) ([]string, error) {
	if blocked, reason := r.deny.CheckArgv(args, r.tempDir); blocked {
		r.block(reason)
		return nil, errBlocked
	}
	return args, nil
}

// checkExec checks the argv of every program about to be executed; it
// repeats checkCall for programs reached through builtins like `command`.
func (r *run) checkExec(next interp.ExecHandlerFunc) interp.ExecHandlerFunc {
	return func(ctx context.Context, args []string) error {
		if blocked, reason := r.deny.CheckArgv(args, r.tempDir); blocked {
			r.block(reason)
			return errBlocked
		}
		return next(ctx, args)
	}
}

// exec runs one program in its own process group.
func (r *run) exec(ctx context.Context, args []string) error {
	hc := interp.HandlerCtx(ctx)
	path, err := interp.LookPathDir(hc.Dir, hc.Env, args[0])
	if err != nil {
		fmt.Fprintln(hc.Stderr, err)
		return interp.ExitStatus(127)
	}
	if !r.procs.add() {
		return ctx.Err()
	}
	defer r.procs.done()
	if ctx.Err() != nil {
		return ctx.Err()
	}

	cmd := exec.Command(path)
	cmd.Args = args
	cmd.Dir = hc.Dir
	cmd.Env = exportedEnv(hc.Env)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if f, ok := hc.Stdin.(*os.File); ok && f != nil {
		cmd.Stdin = f
	}
	// Our own pipes (not exec's copying goroutines), so that Wait returns
	// when the program exits even if a straggler holds the write end.
	outR, outW, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("create pipe: %w", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return fmt.Errorf("create pipe: %w", err)
	}
	cmd.Stdout, cmd.Stderr = outW, errW
	err = cmd.Start()
	outW.Close()
	errW.Close()
	if err != nil {
		outR.Close()
		errR.Close()
		fmt.Fprintln(hc.Stderr, err)
		if errors.Is(err, syscall.ENOEXEC) {
			return interp.ExitStatus(126)
		}
		return interp.ExitStatus(127)
	}
	pgid := cmd.Process.Pid
	var copies sync.WaitGroup
	copies.Add(2)
	go func() { defer copies.Done(); io.Copy(hc.Stdout, outR) }()
	go func() { defer copies.Done(); io.Copy(hc.Stderr, errR) }()

	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	var werr error
	select {
	case werr = <-waited:
	case <-ctx.Done():
		killGroup(pgid)
		werr = <-waited
	}
	// Whatever the program left behind in its group goes with it.
	killGroup(pgid)
	copyDone := make(chan struct{})
	go func() { copies.Wait(); close(copyDone) }()
	select {
	case <-copyDone:
	case <-time.After(2 * time.Second):
		// Something outside the group (setsid) holds the pipe open.
	}
	outR.Close()
	errR.Close()
	<-copyDone

	if ctx.Err() != nil {
		return ctx.Err()
	}
	var exitErr *exec.ExitError
	if errors.As(werr, &exitErr) {
		if ws, ok := exitErr.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return interp.ExitStatus(128 + int(ws.Signal()))
		}
		return interp.ExitStatus(exitErr.ExitCode())
	}
	return werr
}

func killGroup(pgid int) {
	// ESRCH (group already gone) is the normal case.
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
}

// exportedEnv is the environment a program inherits from the interpreter.
func exportedEnv(env expand.Environ) []string {
	var list []string
	env.Each(func(name string, vr expand.Variable) bool {
		if vr.Exported && vr.Kind == expand.String && vr.IsSet() {
			list = append(list, name+"="+vr.String())
		}
		return true
	})
	return list
}

// tracker counts running programs so Run can wait for them after the
// interpreter returns; once closed it admits no new ones.
type tracker struct {
	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup
}

func (t *tracker) add() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return false
	}
	t.wg.Add(1)
	return true
}

func (t *tracker) done() { t.wg.Done() }

func (t *tracker) closeAndWait() {
	t.mu.Lock()
	t.closed = true
	t.mu.Unlock()
	t.wg.Wait()
}

// capped collects up to limit bytes and counts the rest, so memory stays
// bounded whatever a command prints. Pipeline stages and background jobs
// write concurrently, hence the lock.
type capped struct {
	mu    sync.Mutex
	limit int
	buf   []byte
	total int64
}

func (c *capped) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.total += int64(len(p))
	if room := c.limit - len(c.buf); room > 0 {
		c.buf = append(c.buf, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

// text decodes the buffer once (a cut at the cap may leave one U+FFFD),
// trims it, and appends the truncation line when bytes were dropped.
func (c *capped) text(stream string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := strings.TrimSpace(string(bytes.ToValidUTF8(c.buf, []byte("\uFFFD"))))
	if c.total <= int64(c.limit) {
		return s, false
	}
	return s + fmt.Sprintf("\n[truncated: %s exceeded %d bytes; showing the first %d bytes. Narrow the command (path, range, head/tail/grep) if you need a different slice.]", stream, c.limit, c.limit), true
}

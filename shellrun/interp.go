package shellrun

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/interp"
	"mvdan.cc/sh/v3/syntax"

	"github.com/jazz-run/jazz/proctree"
	"github.com/jazz-run/jazz/shellguard"
)

// errBlocked halts the interpreter when the run-time check refuses a call.
var errBlocked = errors.New("blocked by the safety denylist")

// interpret runs req.Command with mvdan.cc/sh (bash dialect) in this
// process, the runner, so that every simple command is checked after
// expansion. Stdin is empty. Every external program starts in its own
// process group; the group is SIGKILLed when the program exits (taking
// stragglers with it), on timeout and on cancellation, and interpret
// returns only after every program it started has been reaped.
func interpret(ctx context.Context, req Request, stdout, stderr io.Writer) response {
	file, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(req.Command), "")
	if err != nil {
		return response{Error: fmt.Sprintf("parse command: %v", err)}
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	if req.Timeout > 0 {
		var cancelT context.CancelFunc
		runCtx, cancelT = context.WithTimeout(runCtx, req.Timeout)
		defer cancelT()
	}
	tempDir, _ := shellguard.LookupEnv(req.Env, "TMPDIR")
	r := &run{deny: shellguard.Builtin(), tempDir: tempDir, stdout: stdout, stderr: stderr}
	runner, err := interp.New(
		interp.Dir(req.Dir),
		interp.Env(expand.ListEnviron(req.Env...)),
		interp.StdIO(nil, stdout, stderr),
		interp.CallHandler(r.checkCall),
		interp.ExecHandlers(r.checkExec, func(interp.ExecHandlerFunc) interp.ExecHandlerFunc { return r.exec }),
	)
	if err != nil {
		return response{Error: fmt.Sprintf("start shell interpreter: %v", err)}
	}
	runErr := runner.Run(runCtx, file)
	timedOut := req.Timeout > 0 && errors.Is(runCtx.Err(), context.DeadlineExceeded) && ctx.Err() == nil
	// Background jobs (`cmd &`) may still run: stop them all and wait.
	r.ending.Store(true)
	cancel()
	r.procs.closeAndWait()

	out := response{Blocked: r.blockedReason(), Killed: r.killedCount()}
	switch {
	case out.Blocked != "":
		return out
	case timedOut:
		out.TimedOut = true
		return out
	case ctx.Err() != nil:
		out.Cancelled = true
		return out
	}
	var status interp.ExitStatus
	switch {
	case runErr == nil:
	case errors.As(runErr, &status):
		out.ExitCode = int(status)
	default:
		out.Error = fmt.Sprintf("run command: %v", runErr)
		return out
	}
	out.Signal = r.signalFor(out.ExitCode)
	return out
}

// run is the state of one interpret, shared by the handlers of its
// interpreter (background jobs and pipeline stages call them
// concurrently).
type run struct {
	deny    *shellguard.Denylist
	tempDir string
	procs   tracker
	// stdout and stderr are the runner's own streams: a program writing
	// straight to one of them gets the file itself.
	stdout, stderr io.Writer
	// ending is set once the script is done: programs still running are
	// then leftovers, killed and counted.
	ending atomic.Bool

	mu      sync.Mutex
	blocked string
	killed  int
	// lastSig is the signal that ended the most recent program, if one
	// did; it names the signal when the command's status is 128+sig.
	lastSig syscall.Signal
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

func (r *run) addKilled(n int) {
	r.mu.Lock()
	r.killed += n
	r.mu.Unlock()
}

func (r *run) killedCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.killed
}

func (r *run) setSignal(sig syscall.Signal) {
	r.mu.Lock()
	r.lastSig = sig
	r.mu.Unlock()
}

// signalFor names the signal behind an exit status of 128+n when the
// program that ended last was killed by exactly that signal; an `exit 137`
// of the script's own stays a plain status.
func (r *run) signalFor(status int) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.lastSig != 0 && status == 128+int(r.lastSig) {
		return signalName(r.lastSig)
	}
	return ""
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
	var o outputs
	if cmd.Stdout, err = o.attach(hc.Stdout, r.stdout); err == nil {
		cmd.Stderr, err = o.attach(hc.Stderr, r.stderr)
	}
	if err == nil {
		err = cmd.Start()
	}
	o.started()
	if err != nil {
		o.finish(false)
		fmt.Fprintln(hc.Stderr, err)
		if errors.Is(err, syscall.ENOEXEC) {
			return interp.ExitStatus(126)
		}
		return interp.ExitStatus(127)
	}
	pgid := cmd.Process.Pid

	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	var werr error
	select {
	case werr = <-waited:
	case <-ctx.Done():
		if r.ending.Load() {
			// Still running when the script ended: a leftover.
			r.addKilled(proctree.GroupMembers(pgid))
		}
		killGroup(pgid)
		werr = <-waited
	}
	// Whatever the program left behind in its group goes with it.
	if groupAlive(pgid) {
		r.addKilled(proctree.GroupMembers(pgid))
		killGroup(pgid)
	}
	o.finish(true)

	if ctx.Err() != nil {
		return ctx.Err()
	}
	var exitErr *exec.ExitError
	if errors.As(werr, &exitErr) {
		if ws, ok := exitErr.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			r.setSignal(ws.Signal())
			return interp.ExitStatus(128 + int(ws.Signal()))
		}
		r.setSignal(0)
		return interp.ExitStatus(exitErr.ExitCode())
	}
	if werr == nil {
		r.setSignal(0)
	}
	return werr
}

// stragglerWait bounds how long a finished program's output pipe is read
// while something outside its group (setsid) still holds it open.
const stragglerWait = 2 * time.Second

// outputs are the stdout and stderr of one program. A program writing to
// the runner's own stream gets that file itself: its leftovers then hold
// the parent's pipe, which the sweep at the end closes. Elsewhere (a
// pipeline stage, a command substitution) it gets a pipe of ours, copied
// on, so that a straggler holding it cannot keep the next stage waiting
// for EOF, and Wait returns when the program exits.
type outputs struct {
	copies    sync.WaitGroup
	readEnds  []*os.File
	writeEnds []*os.File
}

func (o *outputs) attach(dst, own io.Writer) (io.Writer, error) {
	if f, ok := dst.(*os.File); ok && dst == own {
		return f, nil
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("create pipe: %w", err)
	}
	o.readEnds = append(o.readEnds, pr)
	o.writeEnds = append(o.writeEnds, pw)
	o.copies.Add(1)
	go func() { defer o.copies.Done(); _, _ = io.Copy(dst, pr) }()
	return pw, nil
}

// started closes our copies of the write ends: the program has its own.
func (o *outputs) started() {
	for _, f := range o.writeEnds {
		f.Close()
	}
}

// finish waits (bounded, when wait is set) for the copies, then closes the
// read ends so a copy blocked by a straggler returns.
func (o *outputs) finish(wait bool) {
	done := make(chan struct{})
	go func() { o.copies.Wait(); close(done) }()
	if wait && len(o.readEnds) > 0 {
		t := time.NewTimer(stragglerWait)
		select {
		case <-done:
		case <-t.C:
		}
		t.Stop()
	}
	for _, f := range o.readEnds {
		f.Close()
	}
	<-done
}

func killGroup(pgid int) {
	// ESRCH (group already gone) is the normal case.
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
}

// groupAlive probes a process group with signal 0: one system call, so
// the /proc scan that counts members runs only when there are some.
func groupAlive(pgid int) bool { return syscall.Kill(-pgid, 0) == nil }

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

// tracker counts running programs so interpret can wait for them after
// the interpreter returns; once closed it admits no new ones.
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

//go:build unix

package shellrun

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/interp"
	"mvdan.cc/sh/v3/syntax"

	"github.com/jazz-run/jazz/escalation"
	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/proctree"
	"github.com/jazz-run/jazz/shellguard"
)

// errBlocked and errNotJudged halt the interpreter when a run-time check
// refuses a call.
var (
	errBlocked   = errors.New("blocked by the safety denylist")
	errNotJudged = errors.New("not what the gate approved")
)

// interpret runs req.Command with mvdan.cc/sh (bash dialect) in this
// process, the runner, so that every simple command is checked after
// expansion, against the denylist and against the gate's judgement of
// what it approved. Stdin is empty. Every external program starts in its own
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
	home, _ := shellguard.LookupEnv(req.Env, "HOME")
	r := &run{deny: shellguard.Builtin(), judge: req.Judgement, tempDir: tempDir, homes: escalation.Homes(home), startEnv: req.Env,
		stdout: stdout, stderr: stderr, stop: cancel}
	runner, err := interp.New(
		interp.Dir(req.Dir),
		interp.Env(expand.ListEnviron(req.Env...)),
		interp.StdIO(nil, stdout, stderr),
		interp.CallHandler(r.checkCall),
		interp.OpenHandler(r.open),
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

	out := response{Killed: r.killedCount()}
	out.Blocked, out.NotJudged = r.refusal()
	switch {
	case out.Blocked != "", out.NotJudged != "":
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
	judge   shellguard.Judgement
	tempDir string
	// homes is the child's $HOME as the command started (as written and
	// resolved), whose dotfiles only a person may approve changing.
	homes []string
	// startEnv is the environment the command started with: a git init
	// or clone under an environment the command changed may make its
	// repository where, or from what, the command chose.
	startEnv []string
	procs    tracker
	// stdout and stderr are the runner's own streams: a program writing
	// straight to one of them gets the file itself.
	stdout, stderr io.Writer
	// stop ends the run at the first refusal: a refused redirection is
	// not fatal to the interpreter by itself.
	stop context.CancelFunc
	// ending is set once the script is done: programs still running are
	// then leftovers, killed and counted.
	ending atomic.Bool

	mu sync.Mutex
	// blocked is the denylist's reason, notJudged the judgement's: the
	// first refusal of either stops the run.
	blocked, notJudged string
	killed             int
	// lastSig is the signal that ended the most recent program, if one
	// did; it names the signal when the command's status is 128+sig.
	lastSig syscall.Signal
}

func (r *run) refuse(blocked, notJudged string) {
	r.mu.Lock()
	if r.blocked == "" && r.notJudged == "" {
		r.blocked, r.notJudged = blocked, notJudged
	}
	r.mu.Unlock()
	r.stop()
}

func (r *run) refusal() (blocked, notJudged string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.blocked, r.notJudged
}

// check is the run-time check of one simple command after expansion:
// the denylist, then the gate's judgement.
func (r *run) check(args []string) error {
	if blocked, reason := r.deny.CheckArgv(args, r.tempDir); blocked {
		r.refuse(reason, "")
		return errBlocked
	}
	if err := r.judge.CheckExec(args); err != nil {
		r.refuse("", err.Error())
		return errNotJudged
	}
	return nil
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
	if err := r.check(args); err != nil {
		return nil, err
	}
	return args, nil
}

// writeFlags are the open flags of a redirection that writes.
const writeFlags = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREATE | os.O_TRUNC

// open is every file the interpreter itself opens (redirections, source).
// A command approved automatically as inspect-only (static, allowlist,
// a classifier's read-only rating, or no judgement at all) writes nothing
// through a redirection but /dev/null: CheckExec sees argv, not the files
// `>` opens, and expansion can name any of them.
func (r *run) open(ctx context.Context, path string, flag int, perm os.FileMode) (io.ReadWriteCloser, error) {
	// The denylist's redirection targets (~/.ssh/authorized_keys and the
	// like), seen here once expansion has named them; no approval
	// overrides it.
	if blocked, reason := shellguard.CheckRedirect(path, flag&writeFlags != 0); blocked {
		r.refuse(reason, "")
		return nil, errBlocked
	}
	// What runs later outside the gate (a git hook or config, an
	// AGENTS.md, jazz's or the agents' config, a home dotfile) only a
	// person may plant; expansion may have named it here.
	if flag&writeFlags != 0 && r.judge.By != shellguard.ByHuman {
		if why := shellguard.ProtectedWrite(path, interp.HandlerCtx(ctx).Dir, r.homes); why != "" {
			err := fmt.Errorf("%w: the command writes to %s through a redirection, and only a person may approve that (%s), not its approval (%s)",
				shellguard.ErrNotJudged, path, why, approvalName(r.judge))
			r.refuse("", err.Error())
			return nil, err
		}
	}
	if flag&writeFlags != 0 && path != os.DevNull && !mayRedirectWrite(r.judge) {
		err := fmt.Errorf("%w: the command writes to %s through a redirection, which its automatic approval (%s) does not allow",
			shellguard.ErrNotJudged, path, approvalName(r.judge))
		r.refuse("", err.Error())
		return nil, err
	}
	return interp.DefaultOpenHandler()(ctx, path, flag, perm)
}

// mayRedirectWrite: a person, the high-risk policy, the tool allowlist, or
// a classifier that rated the command (redirections and all) low-risk.
func mayRedirectWrite(j shellguard.Judgement) bool {
	switch j.By {
	case shellguard.ByHuman, shellguard.ByPolicy, shellguard.ByTool:
		return true
	case shellguard.ByClassifier:
		return j.Level == messages.LevelLowRisk
	}
	return false
}

func approvalName(j shellguard.Judgement) string {
	if j.By == "" {
		return "none reached the command"
	}
	return string(j.By)
}

// checkExec checks the argv of every program about to be executed; it
// repeats checkCall for programs reached through builtins like `command`.
func (r *run) checkExec(next interp.ExecHandlerFunc) interp.ExecHandlerFunc {
	return func(ctx context.Context, args []string) error {
		if err := r.check(args); err != nil {
			return err
		}
		if r.judge.By != shellguard.ByHuman {
			hc := interp.HandlerCtx(ctx)
			env := exportedEnv(hc.Env)
			if err := r.judge.CheckEnv(env, r.startEnv); err != nil {
				r.refuse("", err.Error())
				return errNotJudged
			}
			// As written, and with a known program under another name (a
			// link or copy of git, rm, cp, xargs …, found by path or on
			// PATH) read as that program.
			judged := [][]string{args}
			if g := shellguard.ProgramsByIdentity(args, hc.Dir, env); !slices.Equal(g, args) {
				judged = append(judged, g)
				// A classifier's approval holds for what the programs
				// are: `./r -rf x` with r a link to rm is rm.
				if r.judge.By == shellguard.ByClassifier {
					if err := r.judge.CheckExec(g); err != nil {
						r.refuse("", err.Error())
						return errNotJudged
					}
				}
			}
			// And as the file it is, when that is not the program its name
			// says.
			if bin, err := interp.LookPathDir(hc.Dir, hc.Env, args[0]); err == nil {
				if e := shellguard.AsExecuted(bin, args); !slices.Equal(e, args) {
					judged = append(judged, e)
				}
			}
			for _, argv := range judged {
				why := shellguard.ProtectedArgv(argv, hc.Dir, r.homes)
				if why == "" {
					why = shellguard.ProtectedGitEnv(argv, env, r.startEnv)
				}
				if why == "" {
					if w := shellguard.ProtectedEnv(argv, env, r.startEnv, hc.Dir, r.homes); w != "" {
						why = "`" + strings.Join(argv, " ") + "`, and " + w
					}
				}
				if why != "" {
					err := fmt.Errorf("%w: after expansion the command runs %s, and only a person may approve that, not its approval (%s)",
						shellguard.ErrNotJudged, why, approvalName(r.judge))
					r.refuse("", err.Error())
					return errNotJudged
				}
			}
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
	env := exportedEnv(hc.Env)
	// An automatic approval that rests on a program's option grammar holds
	// only for that program, not for another file under its name.
	if err := r.judge.CheckProgram(path, args); err != nil {
		r.refuse("", err.Error())
		return errNotJudged
	}
	// An automatically approved git runs only in a repository whose own
	// configuration runs nothing: checked here, where the directory (after
	// any cd) and the environment are the ones git gets.
	if err := r.judge.CheckRepo(ctx, path, hc.Dir, env, args); err != nil {
		r.refuse("", err.Error())
		return errNotJudged
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
	cmd.Env = env
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

//go:build unix

// Package shellrun runs one approved shell command in a child process of
// its own: jazz re-executes itself (/proc/self/exe) with a hidden argument
// that this package's init hands to the runner before main runs. The
// runner interprets the command with mvdan.cc/sh, checking every expanded
// command before it runs, in a session and process group of its own, with
// limits on memory (its own resident size, and RLIMIT_DATA for it and every
// program) and CPU time, a scrubbed environment, no controlling terminal,
// and no way to read jazz's secrets: not from jazz's /proc entries
// (ProtectSelf, dropPtrace), and not from files, since the runner starts
// in the mount and PID namespaces of package isolate, where JAZZ_HOME and
// every key file the run read are empty read-only mounts (Request.Hide),
// /proc shows only the command's processes and /dev holds no disk. So
// `$$`, memory, signals and files of the command are the runner's view,
// never jazz's.
//
// Nothing the command starts outlives it: the runner is a child subreaper
// that sweeps its descendants before it answers, and where the cgroup v2
// hierarchy allows, the parent also puts the runner in a cgroup of its own
// and kills whatever is left in it (proctree).
//
// The parent and the runner talk over pipes: one bounded request frame in,
// the command's stdout and stderr streamed back on pipes of their own
// (capped while collecting, so memory stays bounded), and one bounded
// response frame. A runner that dies, mid-message or not, is reported from
// its wait status: a signal death says which signal, never a normal exit.
//
// # What it does not stop
//
// It is not a sandbox: the command runs with jazz's user and file access,
// less the hidden paths (and, without isolation, which a person must then
// approve, not even that).
// Memory limits are per process (RLIMIT_DATA); nothing bounds the sum of a
// tree's memory or its number of processes (no cgroup controllers are
// set), so a fork bomb the denylist misses runs until its timeout. Without
// a writable cgroup v2 hierarchy, processes that left the group survive a
// shell that dies before it sweeps (SIGKILL, the CPU limit). A root
// command is not bound by RLIMITs it may raise, and can still read jazz's
// memory by other means (kernel modules, /dev/mem) and, on some kernels,
// /proc/<pid>/environ (blanked by ProtectSelf for that reason). The shell
// is a Go program: signals Go ignores by default (SIGUSR1, SIGUSR2,
// SIGWINCH) do not end it as they would end bash. Whoever holds jazz's
// keys in their own environment (the shell that started jazz) still does.
package shellrun

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/jazz-run/jazz/isolate"
	"github.com/jazz-run/jazz/proctree"
	"github.com/jazz-run/jazz/shellguard"
)

// OutputCap is the per-stream byte cap of stdout and stderr.
const OutputCap = 262_144

// Default limits (Request fields left zero).
const (
	// DefaultMemoryLimit is each process's RLIMIT_DATA: a build or a test
	// suite fits, a runaway allocation stops.
	DefaultMemoryLimit = 4 << 30
	// DefaultShellMemoryLimit bounds the interpreter's own resident
	// memory: shell variables and expansions need little.
	DefaultShellMemoryLimit = 1 << 30
)

// killGrace is how long the runner is given to stop by itself (sweep,
// answer) after a cancel, or beyond its own timeout, before the parent
// SIGKILLs it, its group and its cgroup.
const killGrace = 3 * time.Second

// drainBound is how long the parent waits for the output pipes to close
// once the runner is gone (a process that escaped every kill may hold
// them).
const drainBound = 2 * time.Second

// Request is one command for the runner; it is also the request frame.
type Request struct {
	Command string `json:"command"`
	// Dir is the real (symlink-free) absolute directory to run in, and
	// DirState its fingerprint from PinDir; the runner refuses to start
	// when the directory is no longer the one fingerprinted.
	Dir      string `json:"dir"`
	DirState string `json:"dirState"`
	// Env is the complete environment of the command (KEY=VALUE),
	// already scrubbed; the runner process itself gets none of jazz's.
	Env []string `json:"env"`
	// Timeout bounds the command; it must be positive.
	Timeout time.Duration `json:"timeout"`
	// MemoryLimit is RLIMIT_DATA in bytes for the runner and every
	// program; 0 means DefaultMemoryLimit.
	MemoryLimit int64 `json:"memoryLimit"`
	// ShellMemoryLimit bounds the interpreter's resident size in bytes;
	// 0 means DefaultShellMemoryLimit.
	ShellMemoryLimit int64 `json:"shellMemoryLimit"`
	// Judgement is the gate's verdict on Command: every simple command,
	// after expansion, must pass its CheckExec before it runs. A zero
	// Judgement refuses everything.
	Judgement shellguard.Judgement `json:"judgement"`
	// Isolation is how the command is kept from Hide: the mode the
	// caller's isolate.Isolator found. The runner starts in its
	// namespaces (isolate.Wrap) after the view is built; if it cannot be
	// built, nothing runs. It stays in the parent, like Hide.
	Isolation isolate.Mode `json:"-"`
	// Hide are the paths the command must not see: JAZZ_HOME and every
	// file the run read a key from.
	Hide []string `json:"-"`
	// Unhidden: a person approved running the command although Isolation
	// is None, so it can see Hide (the approval said so). Without it Run
	// refuses such a request.
	Unhidden bool `json:"-"`
	// NoCgroup makes the parent skip the cgroup and rely on the runner's
	// sweep alone, as on a system without a writable cgroup v2 hierarchy
	// (tests of that fallback). It stays in the parent.
	NoCgroup bool `json:"-"`
}

// response is the runner's answer frame.
type response struct {
	ExitCode int    `json:"exitCode"`
	Blocked  string `json:"blocked,omitempty"`
	// NotJudged is the judgement's refusal ("not auto-approved: …").
	NotJudged string `json:"notJudged,omitempty"`
	TimedOut  bool   `json:"timedOut,omitempty"`
	// Cancelled: the parent asked the runner to stop.
	Cancelled bool `json:"cancelled,omitempty"`
	// MemoryExceeded: the interpreter outgrew ShellMemoryLimit.
	MemoryExceeded bool `json:"memoryExceeded,omitempty"`
	// Signal names the signal that killed the program whose status
	// ended the command.
	Signal string `json:"signal,omitempty"`
	// Killed counts processes still running when the command ended.
	Killed     int    `json:"killed,omitempty"`
	SweepError string `json:"sweepError,omitempty"`
	// Error is a failure before or instead of running (a parse error, a
	// changed directory): a message for the model.
	Error string `json:"error,omitempty"`
}

// Output is what a run produced. Stdout and Stderr are decoded, trimmed
// and, when capped, end with the truncation line.
type Output struct {
	ExitCode  int
	Stdout    string
	Stderr    string
	Truncated bool
	// TimedOut: Timeout elapsed and every process was killed.
	TimedOut bool
	// Blocked is the denylist reason when a command was refused at run
	// time (after expansion); the run stopped there. NotJudged is the
	// refusal when a command was not what the gate approved.
	Blocked   string
	NotJudged string
	// Signal names the signal (SIGTERM, SIGKILL, ...) that ended the
	// command: the shell's own death when ShellKilled, else the death of
	// the program whose status ExitCode (128+n) is.
	Signal      string
	ShellKilled bool
	// MemoryExceeded: the shell outgrew its memory limit (given in
	// MemoryLimit) and was stopped.
	MemoryExceeded bool
	MemoryLimit    int64
	// Killed counts the processes that were still running when the
	// command ended (background jobs, daemons) and had to be killed.
	Killed int
	// Tracking says how descendants were tracked: "cgroup" or
	// "subreaper".
	Tracking string
}

// ErrUnhidden is wrapped when a request would let the command see the
// paths it must not, and no person approved that.
var ErrUnhidden = errors.New("not run: the command could read jazz's own secrets")

// ErrRunner is wrapped when the runner failed in a way that is not the
// command's doing (it could not start, or broke the protocol).
var ErrRunner = errors.New("the shell runner failed")

// Run runs req in a new runner process and returns once the runner and
// every process of the command are gone (or, for processes that escaped
// every kill, at most drainBound later). Cancelling ctx stops the command
// the same way; Run then returns an error wrapping ctx.Err().
func Run(ctx context.Context, req Request) (Output, error) { return runOn(ctx, req, nil) }

// Pool runs commands like Run, on runners it starts one command ahead:
// once a command is done, the next runner starts (the exec and Go start-up
// of the jazz binary are most of a short command's cost) while the model
// takes its turn, so the next command finds one waiting. An idle runner
// only waits on its control pipe: it holds no goroutine of the parent, and
// it exits when jazz does (the pipe closes). A Pool is safe for concurrent
// use; its zero value is ready.
type Pool struct {
	mu    sync.Mutex
	spare *runner
	// view is the isolation the last request asked for: the next runner
	// is started in it.
	view view
	// starting counts refills in flight, so Close can wait for them.
	starting sync.WaitGroup
}

// Run is the package's Run on the pool's runners.
func (p *Pool) Run(ctx context.Context, req Request) (Output, error) { return runOn(ctx, req, p) }

// Close stops the waiting runner, if any.
func (p *Pool) Close() {
	p.starting.Wait()
	p.mu.Lock()
	r := p.spare
	p.spare = nil
	p.mu.Unlock()
	if r != nil {
		r.discard()
	}
}

// take hands out the waiting runner when it was started in view v, or nil;
// a runner that died while it waited, or of another mode, is dropped.
func (p *Pool) take(v view) *runner {
	p.mu.Lock()
	r := p.spare
	p.spare = nil
	p.view = v
	p.mu.Unlock()
	if r != nil && (!r.view.equal(v) || !proctree.Running(r.cmd.Process.Pid)) {
		r.discard()
		return nil
	}
	return r
}

// refill starts the next runner, on a goroutine of its own (a start takes
// milliseconds), unless one waits already.
func (p *Pool) refill() {
	p.starting.Add(1)
	go func() {
		defer p.starting.Done()
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.spare != nil {
			return
		}
		if r, err := startRunner(true, p.view); err == nil {
			p.spare = r
		}
	}()
}

func runOn(ctx context.Context, req Request, pool *Pool) (Output, error) {
	if req.Timeout <= 0 {
		return Output{}, errors.New("shellrun: a positive timeout is required")
	}
	if req.MemoryLimit <= 0 {
		req.MemoryLimit = DefaultMemoryLimit
	}
	if req.ShellMemoryLimit <= 0 {
		req.ShellMemoryLimit = DefaultShellMemoryLimit
	}
	if req.Isolation == isolate.None && len(req.Hide) > 0 && !req.Unhidden {
		return Output{}, fmt.Errorf("%w: %s", ErrUnhidden, isolate.Unhidden(""))
	}
	// Commands must not read jazz's /proc entries, whoever set jazz up.
	_ = ProtectSelf()
	var frame bytes.Buffer
	if err := writeFrame(&frame, req, MaxRequestBytes); err != nil {
		return Output{}, fmt.Errorf("the command is too large to run (%w)", err)
	}
	var r *runner
	if pool != nil && !req.NoCgroup {
		r = pool.take(viewOf(req))
	}
	if r == nil {
		var err error
		if r, err = startRunner(!req.NoCgroup, viewOf(req)); err != nil {
			return Output{}, err
		}
	}
	r.begin()
	r.send(frame.Bytes())
	if pool != nil {
		defer pool.refill()
	}
	return r.finish(ctx, req)
}

// view is the isolation a runner is started in.
type view struct {
	mode isolate.Mode
	hide []string
}

func viewOf(req Request) view { return view{mode: req.Isolation, hide: req.Hide} }

func (v view) equal(o view) bool { return v.mode == o.mode && slices.Equal(v.hide, o.hide) }

// runner is one started runner process, seen from the parent.
type runner struct {
	cmd  *exec.Cmd
	view view
	cg   *proctree.Cgroup // nil: the runner's sweep alone
	ctrl *os.File         // write end of the control pipe
	// out holds the parent's read ends: stdout, diag, stderr, response.
	out [4]*os.File

	stdout, stderr *capped
	diag           *capped
	resp           []byte
	readers        sync.WaitGroup
}

// pipePair is one pipe: the runner's end and the parent's.
type pipePair struct{ child, parent *os.File }

// startRunner starts a runner process, which then waits for its request:
// in a cgroup of its own when useCgroup is set and the hierarchy allows.
// Without one (no v2 hierarchy, or not ours to write) the runner's sweep
// alone ends the command's processes; Output.Tracking says which was used.
// The runner is born in the cgroup (clone3): moving a running process in
// costs the kernel an RCU grace period, milliseconds each; and in mode's
// namespaces, the view built, or it is not started at all.
func startRunner(useCgroup bool, v view) (*runner, error) {
	var pipes [5]pipePair // control, stdout, diag, stderr, response
	closeAll := func() {
		for _, p := range pipes {
			if p.child != nil {
				p.child.Close()
				p.parent.Close()
			}
		}
	}
	for i := range pipes {
		r, w, err := os.Pipe()
		if err != nil {
			closeAll()
			return nil, fmt.Errorf("%w: create pipe: %v", ErrRunner, err)
		}
		if i == fdControl {
			pipes[i] = pipePair{child: r, parent: w}
		} else {
			pipes[i] = pipePair{child: w, parent: r}
		}
	}
	var cg *proctree.Cgroup
	if useCgroup {
		cg, _ = newCgroup()
	}
	cmd, err := spawn(pipes, cg, v)
	if err != nil && cg != nil {
		// clone3 into a cgroup can fail where mkdir worked: sweep only.
		rctx, cancel := context.WithTimeout(context.Background(), drainBound)
		_ = cg.Remove(rctx)
		cancel()
		cg = nil
		cmd, err = spawn(pipes, nil, v)
	}
	for _, p := range pipes {
		p.child.Close()
	}
	if err != nil {
		for _, p := range pipes {
			p.parent.Close()
		}
		return nil, fmt.Errorf("%w: start: %v", ErrRunner, err)
	}
	return &runner{
		cmd:    cmd,
		view:   v,
		cg:     cg,
		ctrl:   pipes[fdControl].parent,
		out:    [4]*os.File{pipes[fdStdout].parent, pipes[fdDiag].parent, pipes[fdStderr].parent, pipes[fdResponse].parent},
		stdout: &capped{limit: OutputCap},
		stderr: &capped{limit: OutputCap},
		diag:   &capped{limit: 64 << 10},
	}, nil
}

func spawn(pipes [5]pipePair, cg *proctree.Cgroup, v view) (*exec.Cmd, error) {
	cmd := &exec.Cmd{
		Path:   "/proc/self/exe",
		Args:   []string{"jazz", childArg},
		Env:    runnerEnv(),
		Dir:    "/",
		Stdin:  pipes[fdControl].child,
		Stdout: pipes[fdStdout].child,
		Stderr: pipes[fdDiag].child,
		// fd 3 and fd 4 in the runner.
		ExtraFiles:  []*os.File{pipes[fdStderr].child, pipes[fdResponse].child},
		SysProcAttr: runnerAttr(cg),
	}
	if err := isolate.Wrap(cmd, v.mode, v.hide); err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return cmd, nil
}

// begin starts collecting the runner's output and its response.
func (r *runner) begin() {
	r.collect(r.out[0], r.stdout)
	r.collect(r.out[1], r.diag)
	r.collect(r.out[2], r.stderr)
	respR := r.out[3]
	r.readers.Add(1)
	go func() {
		defer r.readers.Done()
		// One frame at most: anything beyond the limit is malformed.
		r.resp, _ = io.ReadAll(io.LimitReader(respR, 4+maxResponseBytes+1))
	}()
}

// discard ends a runner that never got a request: its control pipe
// closes, so it exits; it is reaped here, and its cgroup removed.
func (r *runner) discard() {
	r.ctrl.Close()
	for _, f := range r.out {
		f.Close()
	}
	done := make(chan struct{})
	go func() { _ = r.cmd.Wait(); close(done) }()
	t := time.NewTimer(killGrace)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		r.hardKill()
		<-done
	}
	if r.cg != nil {
		ctx, cancel := context.WithTimeout(context.Background(), drainBound)
		_, _ = r.cg.Kill(ctx)
		_ = r.cg.Remove(ctx)
		cancel()
	}
}

// collect copies one output pipe into c until it closes.
func (r *runner) collect(f *os.File, c *capped) {
	r.readers.Add(1)
	go func() {
		defer r.readers.Done()
		_, _ = io.Copy(c, f)
	}()
}

// finish waits for the runner under ctx and its timeout, ends every
// process left, and reads the outcome.
// send writes the request frame. The pipe holds 64 KiB; a larger request
// is written while the runner reads it. A runner that died gets EPIPE,
// told by its status.
func (r *runner) send(frame []byte) {
	go func() { _, _ = r.ctrl.Write(frame) }()
}

func (r *runner) finish(ctx context.Context, req Request) (Output, error) {
	waited := make(chan struct{})
	go func() { _ = r.cmd.Wait(); close(waited) }()
	backstop := time.NewTimer(req.Timeout + killGrace)
	defer backstop.Stop()
	var cancelled, backstopped bool
	select {
	case <-waited:
	case <-ctx.Done():
		cancelled = true
		r.ctrl.Close() // the runner stops, sweeps and exits
		grace := time.NewTimer(killGrace)
		select {
		case <-waited:
		case <-grace.C:
			r.hardKill()
			<-waited
		}
		grace.Stop()
	case <-backstop.C:
		backstopped = true
		r.hardKill()
		<-waited
	}
	r.ctrl.Close()

	out := Output{MemoryLimit: req.ShellMemoryLimit, Tracking: "subreaper"}
	if r.cg != nil {
		out.Tracking = "cgroup"
		kctx, cancel := context.WithTimeout(context.Background(), drainBound)
		left, _ := r.cg.Kill(kctx)
		_ = r.cg.Remove(kctx)
		cancel()
		out.Killed += left
	}
	r.drain()
	out.Stdout, out.Truncated = r.stdout.text("stdout")
	var errTrunc bool
	out.Stderr, errTrunc = r.stderr.text("stderr")
	out.Truncated = out.Truncated || errTrunc

	if cancelled {
		return out, fmt.Errorf("command cancelled: %w", ctx.Err())
	}
	if backstopped {
		out.TimedOut = true
		return out, nil
	}
	resp, respErr := r.response()
	ws, _ := r.cmd.ProcessState.Sys().(syscall.WaitStatus)
	switch {
	case respErr == nil:
		out.Killed += resp.Killed
		if resp.Error != "" {
			return out, errors.New(resp.Error)
		}
		out.ExitCode, out.Blocked, out.NotJudged, out.TimedOut = resp.ExitCode, resp.Blocked, resp.NotJudged, resp.TimedOut
		out.MemoryExceeded, out.Signal = resp.MemoryExceeded, resp.Signal
		if resp.Cancelled {
			return out, fmt.Errorf("%w: it stopped as if cancelled, but nothing cancelled it", ErrRunner)
		}
		return out, nil
	case ws.Signaled():
		// The shell itself was killed: by the command (`kill $$`), by
		// the CPU limit, or from outside. Its status is not an exit code.
		out.ShellKilled = true
		out.Signal = signalName(ws.Signal())
		out.ExitCode = 128 + int(ws.Signal())
		return out, nil
	case r.view.mode != isolate.None && ws.Exited() && ws.ExitStatus() > 128 && ws.ExitStatus() <= 128+64:
		// The same, told by the namespace's first process (isolate.Wrap),
		// which cannot die of a signal itself; the runner's own exits
		// are 0 or small.
		sig := syscall.Signal(ws.ExitStatus() - 128)
		out.ShellKilled, out.Signal, out.ExitCode = true, signalName(sig), ws.ExitStatus()
		return out, nil
	}
	diag, _ := r.diag.text("runner diagnostics")
	if outOfMemory(diag) || runtimeFault(diag) {
		out.MemoryExceeded = true
		out.MemoryLimit = req.MemoryLimit
		return out, nil
	}
	msg := fmt.Sprintf("%v: it exited with status %d without an answer (%v)", ErrRunner, ws.ExitStatus(), respErr)
	if line, _, _ := strings.Cut(diag, "\n"); line != "" {
		msg += ": " + line
	}
	return out, errors.New(msg)
}

// outOfMemory recognises the Go runtime's fatal errors when RLIMIT_DATA
// refuses it memory: for its heap, or for a new thread's stack.
func outOfMemory(diag string) bool {
	for _, s := range []string{"out of memory", "cannot allocate memory", "pthread_create failed", "failed to create new OS thread"} {
		if strings.Contains(diag, s) {
			return true
		}
	}
	return false
}

// runtimeFault recognises the other way the Go runtime dies when
// RLIMIT_DATA refuses it memory: a fault inside the runtime itself (the
// collector's work queues, which Go 1.26's collector allocates without
// checking, seen under load), not its "out of memory". A fatal signal
// whose first frame is the runtime's own code: the runner's code never
// runs there.
func runtimeFault(diag string) bool {
	first, rest, _ := strings.Cut(diag, "\n")
	if !strings.HasPrefix(first, "SIGSEGV") && !strings.HasPrefix(first, "SIGBUS") && !strings.HasPrefix(first, "unexpected fault address") {
		return false
	}
	for _, line := range strings.Split(rest, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "", strings.HasPrefix(line, "PC="), strings.HasPrefix(line, "signal "), strings.HasPrefix(line, "fatal error:"),
			strings.HasPrefix(line, "goroutine "):
			continue
		}
		return strings.HasPrefix(line, "runtime.")
	}
	return false
}

// hardKill SIGKILLs the runner's process group (it is its session's
// leader) and, when there is one, its cgroup. Used only when the runner
// did not stop by itself.
func (r *runner) hardKill() {
	_ = syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL)
	if r.cg != nil {
		ctx, cancel := context.WithTimeout(context.Background(), drainBound)
		_, _ = r.cg.Kill(ctx)
		cancel()
	}
}

// drain waits (bounded) for the output readers, then closes the read
// ends so readers blocked by a process that escaped every kill return.
func (r *runner) drain() {
	done := make(chan struct{})
	go func() { r.readers.Wait(); close(done) }()
	t := time.NewTimer(drainBound)
	select {
	case <-done:
	case <-t.C:
	}
	t.Stop()
	for _, f := range r.out {
		f.Close()
	}
	<-done
}

// response decodes the runner's frame; after drain.
func (r *runner) response() (response, error) {
	var resp response
	if len(r.resp) > 4+maxResponseBytes {
		return resp, fmt.Errorf("%w: the response is longer than %d bytes", ErrRunner, maxResponseBytes)
	}
	rd := bytes.NewReader(r.resp)
	if err := readFrame(rd, &resp, maxResponseBytes); err != nil {
		return resp, err
	}
	if rd.Len() != 0 {
		return resp, errors.New("malformed response: data after the frame")
	}
	return resp, nil
}

func signalName(sig syscall.Signal) string {
	if n := unix.SignalName(sig); n != "" {
		return n
	}
	return fmt.Sprintf("signal %d", int(sig))
}

// capped collects up to limit bytes and counts the rest, so memory stays
// bounded whatever a command prints.
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

//go:build unix

// Package childproc starts a program that nothing of outlives its end:
// MCP stdio servers and custom command tools. The program runs under a
// small reaper, jazz itself re-executed (/proc/self/exe) with a hidden
// argument this package's init recognises, in a session of its own and,
// where the cgroup v2 hierarchy allows, a cgroup of its own. The reaper is
// a child subreaper: whatever the program forks, daemonised or not, stays
// its descendant, and it kills and reaps them all before it exits. When
// jazz itself dies, the reaper is told (PR_SET_PDEATHSIG) and does the same.
//
// No shell is involved: the program is an argv, its path resolved against
// the PATH of the environment it is given (which the caller has scrubbed).
package childproc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jazz-run/jazz/isolate"
	"github.com/jazz-run/jazz/proctree"
)

// Proc is one started program, seen from jazz.
type Proc struct {
	cmd    *exec.Cmd
	cg     *proctree.Cgroup
	stdin  io.WriteCloser
	stdout io.ReadCloser
	errR   *os.File
	errWG  sync.WaitGroup

	done     chan struct{}
	waitErr  error
	stopOnce sync.Once
}

// Start starts s.Argv under a reaper. The caller must Stop or Kill the
// Proc, whatever happens, to release it.
func Start(s Spec) (*Proc, error) {
	if len(s.Argv) == 0 || s.Argv[0] == "" {
		return nil, errors.New("start program: no program given")
	}
	path, err := LookPath(s.Argv[0], pathOf(s.Env), s.Dir)
	if err != nil {
		return nil, err
	}
	mode := isolate.None
	if len(s.Hide) > 0 {
		iso := s.Isolator
		if iso == nil {
			iso = &isolate.Isolator{}
		}
		if mode = iso.Mode(context.Background()); mode == isolate.None {
			return nil, fmt.Errorf("start %s: %w: %s", s.Argv[0], ErrUnhidden, isolate.Unhidden(iso.Why(context.Background())))
		}
	}
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("start %s: find jazz's own binary for the reaper: %w", s.Argv[0], err)
	}
	if _, err := os.Stat("/proc/self/exe"); err == nil {
		self = "/proc/self/exe"
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", s.Argv[0], err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		closeAll(inR, inW)
		return nil, fmt.Errorf("start %s: %w", s.Argv[0], err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		closeAll(inR, inW, outR, outW)
		return nil, fmt.Errorf("start %s: %w", s.Argv[0], err)
	}
	args := append([]string{"jazz", reaperArg, path}, s.Argv...)
	mk := func(cg *proctree.Cgroup) *exec.Cmd {
		cmd := &exec.Cmd{
			Path:        self,
			Args:        args,
			Env:         append([]string{}, s.Env...),
			Dir:         s.Dir,
			Stdin:       inR,
			Stdout:      outW,
			Stderr:      errW,
			SysProcAttr: procAttr(cg),
		}
		// Cannot fail: Path is absolute and set.
		_ = isolate.Wrap(cmd, mode, s.Hide)
		return cmd
	}
	var cg *proctree.Cgroup
	if !s.NoCgroup {
		cg, _ = newCgroup()
	}
	cmd := mk(cg)
	err = cmd.Start()
	if err != nil && cg != nil {
		// clone3 into a cgroup can fail where mkdir worked: reaper only.
		rctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_ = cg.Remove(rctx)
		cancel()
		cg = nil
		cmd = mk(nil)
		err = cmd.Start()
	}
	closeAll(inR, outW, errW)
	if err != nil {
		closeAll(inW, outR, errR)
		return nil, fmt.Errorf("start %s: %w", s.Argv[0], err)
	}
	p := &Proc{cmd: cmd, cg: cg, stdin: inW, stdout: outR, errR: errR, done: make(chan struct{})}
	sink := s.Stderr
	if sink == nil {
		sink = io.Discard
	}
	p.errWG.Add(1)
	go func() {
		defer p.errWG.Done()
		_, _ = io.Copy(sink, errR)
	}()
	go func() {
		p.waitErr = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

func closeAll(fs ...*os.File) {
	for _, f := range fs {
		_ = f.Close()
	}
}

// Stdin is the write end of the program's stdin; closing it is the
// polite way to ask a stdio server to stop.
func (p *Proc) Stdin() io.WriteCloser { return p.stdin }

// Stdout is the read end of the program's stdout.
func (p *Proc) Stdout() io.ReadCloser { return p.stdout }

// Pid is the reaper's process id, which is also the process group and
// session of the program.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Tracking says what keeps count of the program's processes besides the
// reaper: "cgroup" or "reaper" (no writable cgroup v2 hierarchy).
func (p *Proc) Tracking() string {
	if p.cg != nil {
		return "cgroup"
	}
	return "reaper"
}

// Done is closed when the reaper has exited, which it does only after the
// program and every process it started are gone.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Exit describes how the program ended, once Done is closed: "" for a
// clean exit, else "exit status 3" or "killed by SIGKILL".
func (p *Proc) Exit() string {
	select {
	case <-p.done:
	default:
		return "still running"
	}
	var ee *exec.ExitError
	if !errors.As(p.waitErr, &ee) {
		if p.waitErr != nil {
			return p.waitErr.Error()
		}
		return ""
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	switch {
	case ok && ws.Signaled():
		return "killed by " + signalName(ws.Signal())
	case ok && ws.ExitStatus() > 128 && ws.ExitStatus() < 128+65:
		// The reaper reports a program's signal death as 128+n.
		return "killed by " + signalName(syscall.Signal(ws.ExitStatus()-128))
	case ok:
		return fmt.Sprintf("exit status %d", ws.ExitStatus())
	}
	return ee.Error()
}

// ExitCode is the program's exit code once Done is closed (128+n after a
// signal n), or -1 before.
func (p *Proc) ExitCode() int {
	select {
	case <-p.done:
	default:
		return -1
	}
	if p.cmd.ProcessState == nil {
		return -1
	}
	if ws, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return p.cmd.ProcessState.ExitCode()
}

// Bounds of the stopping sequence.
const (
	// termGrace is how long the reaper gives the program after SIGTERM
	// before it kills everything (see reaper.go); Stop waits a little more.
	termGrace = time.Second
	// killBound is how long a SIGKILLed tree is waited for.
	killBound = 2 * time.Second
)

// Stop ends the program politely, then firmly: it closes stdin, waits up
// to grace for the program to exit by itself, then has the reaper send
// SIGTERM and, a second later, SIGKILL to everything; a reaper that does
// not answer is killed with its group and cgroup. It returns when every
// process is gone, or when ctx ends first (the error says so). Calling it
// again does nothing more.
func (p *Proc) Stop(ctx context.Context, grace time.Duration) error {
	var err error
	p.stopOnce.Do(func() { err = p.stop(ctx, grace, false) })
	return err
}

// Kill ends the program and every process it started at once (SIGKILL),
// as a timeout does, and returns when they are gone or ctx ends.
func (p *Proc) Kill(ctx context.Context) error {
	var err error
	p.stopOnce.Do(func() { err = p.stop(ctx, 0, true) })
	return err
}

func (p *Proc) stop(ctx context.Context, grace time.Duration, now bool) error {
	if !now {
		_ = p.stdin.Close()
		exited := grace > 0 && p.waitFor(ctx, grace)
		if !exited && ctx.Err() == nil {
			_ = p.cmd.Process.Signal(syscall.SIGTERM)
			p.waitFor(ctx, termGrace+killBound)
		}
	}
	if now {
		// The reaper kills everything it can find at once.
		// stdin stays open until the tree is gone: a program that ends
		// on its close would otherwise report a clean exit.
		_ = p.cmd.Process.Signal(killSignal)
		p.waitFor(ctx, killBound)
	}
	select {
	case <-p.done:
	default:
		// The reaper did not answer: kill it with its group.
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		p.waitFor(ctx, killBound)
	}
	var errs []error
	if p.cg != nil {
		kctx, cancel := context.WithTimeout(ctx, killBound)
		if _, err := p.cg.Kill(kctx); err != nil {
			errs = append(errs, err)
		}
		if err := p.cg.Remove(kctx); err != nil {
			errs = append(errs, err)
		}
		cancel()
	}
	_ = p.stdin.Close()
	_ = p.stdout.Close()
	// A process that escaped every kill may hold stderr open: bounded.
	drained := make(chan struct{})
	go func() { p.errWG.Wait(); close(drained) }()
	t := time.NewTimer(killBound)
	select {
	case <-drained:
	case <-t.C:
		_ = p.errR.Close()
		<-drained
	}
	t.Stop()
	_ = p.errR.Close()
	select {
	case <-p.done:
	default:
		errs = append(errs, fmt.Errorf("process %d did not exit: %w", p.cmd.Process.Pid, ctx.Err()))
	}
	return errors.Join(errs...)
}

// waitFor waits up to d for the reaper to exit and says whether it did.
func (p *Proc) waitFor(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.done:
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// pathOf is the PATH of env, or the default of a scrubbed environment.
func pathOf(env []string) string {
	path := "/usr/local/bin:/usr/bin:/bin"
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	return path
}

// LookPath finds name as exec would in a process whose PATH is path and
// whose working directory is dir: a name with a slash is taken as it is
// (relative to dir), anything else is searched in path's directories.
// Empty entries of path (the current directory) are skipped, as a model
// may control what the working directory holds.
func LookPath(name, path, dir string) (string, error) {
	if strings.Contains(name, "/") {
		p := name
		if !filepath.IsAbs(p) && dir != "" {
			p = filepath.Join(dir, p)
		}
		if err := executable(p); err != nil {
			return "", fmt.Errorf("program %s: %w", name, err)
		}
		return p, nil
	}
	for _, d := range filepath.SplitList(path) {
		if d == "" || !filepath.IsAbs(d) {
			continue
		}
		p := filepath.Join(d, name)
		if executable(p) == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("program %q is not on the PATH (%s): %w", name, path, ErrNotFound)
}

func executable(p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		return err
	}
	if fi.IsDir() || fi.Mode()&0o111 == 0 {
		return errors.New("not an executable file")
	}
	return nil
}

// signalName is SIGKILL for 9, and so on.
func signalName(s syscall.Signal) string {
	switch s {
	case syscall.SIGKILL:
		return "SIGKILL"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGSEGV:
		return "SIGSEGV"
	case syscall.SIGABRT:
		return "SIGABRT"
	case syscall.SIGPIPE:
		return "SIGPIPE"
	case syscall.SIGHUP:
		return "SIGHUP"
	}
	return fmt.Sprintf("signal %d", int(s))
}

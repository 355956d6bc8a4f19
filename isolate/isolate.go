// Package isolate starts the programs jazz runs for the model (the
// execute_command runner, custom command tools, MCP stdio servers, git) in
// a view of the machine where jazz's own secrets are not there: JAZZ_HOME
// and every other file jazz read a key from are covered by empty,
// read-only mounts, so no program, whatever it runs or however it spells a
// path (symlinks, /proc/<pid>/root, hard links it makes, a relative path
// after cd, a bind mount of the same file system elsewhere), can read
// them.
//
// The view is a mount namespace and a PID namespace of the child's own,
// with mount propagation private, a fresh /proc that shows only the
// child's processes, and a /dev of the character devices programs need (no
// block device to read the disk under the mounts). As root the namespaces
// are made directly and the child keeps only a container's usual
// capabilities (no CAP_SYS_ADMIN to unmount, no CAP_DAC_READ_SEARCH for
// open_by_handle_at, no CAP_SYS_PTRACE, CAP_SYS_RAWIO, CAP_MKNOD...);
// without root, an unprivileged user namespace maps the user to itself,
// and the child drops every capability it holds there. Which of the two a
// machine allows is found once by an Isolator, which starts a probe that
// builds the view for real; when neither works, Mode is None and the
// caller decides (execute_command runs only what a person approved, and
// says so in the approval; other programs are refused).
//
// What it does not stop: a program that asks something outside the
// namespaces to read for it (ssh to localhost, a daemon's socket, sudo
// where the user has it) reads what that other process can read. It hides
// files, not the network.
package isolate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Mode is how a child is isolated.
type Mode string

// The modes, best first.
const (
	// Namespaces: new mount and PID namespaces, made as root; the child
	// keeps a container's default capabilities minus CAP_MKNOD.
	Namespaces Mode = "namespaces"
	// UserNamespace: the same, inside an unprivileged user namespace
	// that maps the user's uid and gid to themselves; files of other
	// users show as nobody, and set-user-ID programs do not gain root.
	UserNamespace Mode = "user-namespace"
	// None: the machine allows neither; a child sees what jazz sees.
	None Mode = ""
)

// String names the mode for people.
func (m Mode) String() string {
	if m == None {
		return "none"
	}
	return string(m)
}

// probeArg makes a jazz binary (or any binary linking this package) serve
// as the probe: it builds the view and exits 0, or says why not.
const probeArg = "__jazz-isolate-probe"

// execArg makes a binary serve as the trampoline of Wrap: build the view,
// then execute the program in it.
const execArg = "__jazz-isolated-exec"

// The hand-offs run before main, as shellrun's runner does. They leave
// by syscall.Exit: nothing of theirs is buffered, and os.Exit in a
// race-enabled binary sleeps a second first (GORACE atexit_sleep_ms),
// which the program's environment must not be changed to avoid.
func init() {
	switch {
	case len(os.Args) == 3 && os.Args[1] == probeArg:
		syscall.Exit(probe(Mode(os.Args[2])))
	case len(os.Args) >= 6 && os.Args[1] == execArg:
		syscall.Exit(trampoline(Mode(os.Args[2]), os.Args[3], os.Args[4], os.Args[5:]))
	}
}

// TestHandoffsEnv names, in a test binary only, a build of
// internal/handoffs to start in place of the test binary itself.
const TestHandoffsEnv = "JAZZ_TEST_HANDOFFS"

// HandoffBinary is the binary the probe and the trampoline start: this
// process's own (/proc/self/exe), whose init serves them. A test binary
// may name another in TestHandoffsEnv, a build of the same hand-offs
// without -race (`make test` does): the race runtime's setup makes each
// start of a race-built binary cost tens of milliseconds of CPU. What
// the trampoline then starts as "/proc/self/exe" (the shell runner, the
// child reaper) is that binary too. Only a test binary reads the
// variable: a jazz binary always starts itself.
func HandoffBinary() string {
	if testing.Testing() {
		if p := os.Getenv(TestHandoffsEnv); p != "" {
			return p
		}
	}
	return "/proc/self/exe"
}

// Isolator finds, once, the best mode this machine allows. The zero value
// is ready; it is safe for concurrent use.
type Isolator struct {
	once sync.Once
	mode Mode
	why  string
}

// Fixed is an Isolator that answers m (and why, for None) without a
// probe: for callers that found the mode elsewhere, and for tests of what
// each mode makes a caller do.
func Fixed(m Mode, why string) *Isolator {
	i := &Isolator{mode: m, why: why}
	i.once.Do(func() {})
	return i
}

// Mode is the best mode a probe child could build, or None; the probe
// runs on the first call (a child start, milliseconds).
func (i *Isolator) Mode(ctx context.Context) Mode {
	i.once.Do(func() {
		// The answer is kept: a caller's cancel must not make it None.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), probeBound)
		defer cancel()
		i.mode, i.why = Probe(ctx)
	})
	return i.mode
}

// probeBound bounds the probe: a child start and a few mounts.
const probeBound = 30 * time.Second

// Why says, when Mode is None, why each mode failed.
func (i *Isolator) Why(ctx context.Context) string {
	i.Mode(ctx)
	return i.why
}

// Probe starts a child in each mode this process could use, best first,
// and returns the first whose child built the view; None and the reasons
// when none did.
func Probe(ctx context.Context) (Mode, string) {
	var why []string
	for _, m := range candidates() {
		cmd := exec.CommandContext(ctx, HandoffBinary(), probeArg, string(m))
		cmd.Args[0] = "jazz"
		cmd.SysProcAttr = Attr(nil, m)
		cmd.Dir = "/"
		cmd.Env = []string{}
		out, err := cmd.CombinedOutput()
		if err == nil {
			return m, ""
		}
		msg := strings.TrimSpace(string(out))
		if msg == "" {
			msg = err.Error()
		}
		why = append(why, m.String()+": "+msg)
	}
	if len(why) == 0 {
		why = append(why, "this system has no mount namespaces")
	}
	return None, strings.Join(why, "; ")
}

func probe(m Mode) int {
	if err := Enter(m, nil); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// Wrap makes cmd (not yet started, its Path resolved) run its program in
// mode m's view with hide covered. cmd then starts jazz's own binary as
// the first process of the new PID namespace: it builds the view, starts
// the program with the descriptors cmd gives it (Stdin, Stdout, Stderr,
// ExtraFiles), passes on the signals it is sent, and exits with the
// program's status: its exit code, or 128+n when signal n killed it.
// Whatever the program leaves behind ends with it (the kernel kills a PID
// namespace whose first process exits), and with jazz (which the first
// process watches). With None it changes nothing. Dir, Env and the rest
// of SysProcAttr stay as they are.
//
// A relative path in hide means one relative to this process's working
// directory, where jazz itself opens it; it is made absolute here, since
// the namespace's first process starts in cmd.Dir and would find another
// file (or none, and hide nothing). If that fails, so do Wrap and
// cmd.Start: nothing runs with a secret uncovered.
func Wrap(cmd *exec.Cmd, m Mode, hide []string) error {
	if m == None {
		return nil
	}
	if cmd.Err != nil {
		return cmd.Err
	}
	hide, err := absolute(hide)
	if err != nil {
		cmd.Err = fmt.Errorf("isolate %s: %w", cmd.Path, err)
		return cmd.Err
	}
	if cmd.Dir != "" {
		if c := Covering(cmd.Dir, hide); c != "" {
			cmd.Err = errors.New(InHidden(cmd.Dir, c))
			return cmd.Err
		}
	}
	path := cmd.Path
	if !filepath.IsAbs(path) {
		abs, err := filepath.Abs(path)
		if err != nil {
			cmd.Err = fmt.Errorf("isolate %s: %w", cmd.Path, err)
			return cmd.Err
		}
		path = abs
	}
	args := slices.Clone(cmd.Args)
	if len(args) == 0 {
		args = []string{path}
	}
	cmd.Path = HandoffBinary()
	cmd.Args = append([]string{"jazz", execArg, string(m), encodeHide(hide), path}, args...)
	cmd.SysProcAttr = Attr(cmd.SysProcAttr, m)
	return nil
}

// Covering is the path of hide that dir lies in (dir itself or a
// directory above it), symlinks resolved on both sides, or "". In Wrap's
// view that path is an empty mount: a program started in dir would find
// its directory gone or empty, and a directory pinned there would look
// changed.
func Covering(dir string, hide []string) string {
	d := resolved(dir)
	for _, h := range hide {
		if h == "" {
			continue
		}
		r := resolved(h)
		if r == "/" {
			continue // never hidden: Enter refuses it with its own reason
		}
		if rel, err := filepath.Rel(r, d); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			return h
		}
	}
	return ""
}

// resolved is p absolute with its symlinks followed as far as it exists.
func resolved(p string) string {
	if abs, err := filepath.Abs(p); err == nil {
		p = abs
	}
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return filepath.Clean(p)
}

// InHidden is the answer to a program asked to start in dir, which lies
// in covered, a path hidden from every program jazz starts.
func InHidden(dir, covered string) string {
	return fmt.Sprintf("the working directory %s is inside %s, which jazz hides from the programs it starts because it holds jazz's own secrets (JAZZ_HOME, its config or key files): there it is an empty directory. Work in a directory outside it", dir, covered)
}

// absolute is hide with each relative path joined to this process's
// working directory.
func absolute(hide []string) ([]string, error) {
	out := make([]string, 0, len(hide))
	for _, p := range hide {
		if p != "" && !filepath.IsAbs(p) {
			abs, err := filepath.Abs(p)
			if err != nil {
				return nil, fmt.Errorf("resolve the path to hide %q: %w", p, err)
			}
			p = abs
		}
		out = append(out, p)
	}
	return out, nil
}

// UnderInit says whether the caller's parent is the first process of
// Wrap's namespaces (a program started by Wrap asks, to tell that parent
// from the init a process is orphaned to).
func UnderInit() bool {
	if os.Getppid() != 1 {
		return false
	}
	b, err := os.ReadFile("/proc/1/cmdline")
	if err != nil {
		return false
	}
	args := strings.Split(string(b), "\x00")
	return len(args) > 1 && args[1] == execArg
}

// encodeHide is the paths as one argument (JSON: an argument holds no
// NUL, a path may hold anything else).
func encodeHide(hide []string) string {
	b, _ := json.Marshal(hide) // a []string always marshals
	return string(b)
}

func decodeHide(s string) ([]string, error) {
	var hide []string
	if err := json.Unmarshal([]byte(s), &hide); err != nil {
		return nil, fmt.Errorf("the paths to hide are unreadable: %w", err)
	}
	return hide, nil
}

// trampoline is the first process of Wrap's namespaces.
func trampoline(m Mode, hide, path string, argv []string) int {
	paths, err := decodeHide(hide)
	if err == nil {
		err = watchParent()
	}
	if err == nil {
		err = Enter(m, paths)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "jazz: cannot start %s: %v\n", path, err)
		return 126
	}
	code, err := initProgram(path, argv)
	if err != nil {
		fmt.Fprintf(os.Stderr, "jazz: cannot start %s: %v\n", path, err)
		return 127
	}
	return code
}

// Unhidden is the sentence an approval or a refusal carries when a
// program would see jazz's secrets: why, and what fixes it.
func Unhidden(why string) string {
	s := "this system lets jazz hide its own secrets (JAZZ_HOME, key files) from the programs it runs neither in a mount namespace (as root) nor in an unprivileged user namespace"
	if why != "" {
		s += " (" + why + ")"
	}
	return s + "; enable unprivileged user namespaces (sysctl user.max_user_namespaces, kernel.unprivileged_userns_clone, or the AppArmor restriction) or run jazz as root"
}

package shellguard

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/interp"
	"mvdan.cc/sh/v3/syntax"
)

// The differential oracle of issue 9: every command the allowlist or the
// static read-only pass approves is run by the real interpreter (mvdan's,
// bash dialect, as execute_command runs it) in a throwaway mount
// namespace, and must change no file, create none, and run no program
// outside what was approved.
//
// The namespace belongs to a child process (this test binary, re-run as
// TestOracleChild), which lives as long as the test. It mounts a tmpfs
// for its own files, puts a writable overlay over every directory a
// command could write to (/tmp, /var, /root, /home, /etc, /usr, ...),
// remounts / read-only, and builds a fixture tree there: a git repository
// with traps (a .gitconfig under evilhome/ that runs a program, an
// embedded bare repository whose config does, a bin/ of fake programs,
// files named like options). Each command gets a fresh overlay over the
// fixture; a change anywhere shows up as an entry in an overlay's upper
// directory. Programs are observed three ways: the interpreter's exec and
// call handlers, a PATH of recording shims in front of every program on
// the system, and GIT_TRACE (git's own record of the builtin it ran and of
// every program it started).

const oracleChildEnv = "JAZZ_ORACLE_CHILD"

// oracleRequest is one command for the child to run.
type oracleRequest struct {
	Command string `json:"command"`
	// Dir is the working directory, relative to the fixture root (the
	// tool's workingDirectory argument).
	Dir string `json:"dir,omitempty"`
	// Judgement, when set, is the gate's verdict, applied by the
	// interpreter's handlers to every expanded argv as execute_command's
	// runner applies it (the run stops at the first refusal).
	Judgement *Judgement `json:"judgement,omitempty"`
}

// oracleResult is what running it did.
type oracleResult struct {
	Changes []string   `json:"changes,omitempty"` // paths created, changed or removed
	Calls   [][]string `json:"calls,omitempty"`   // every simple command after expansion
	Execs   [][]string `json:"execs,omitempty"`   // programs the interpreter executed
	Refused []string   `json:"refused,omitempty"` // what the run-time check refused, which stopped the run
	// NotAutomatic is what the propose half's check (RepoProblem) found
	// where the command was to run: it was not approved, so not run.
	NotAutomatic string   `json:"notAutomatic,omitempty"`
	Shims        []string `json:"shims,omitempty"`    // programs started through PATH, by anyone
	GitTrace     []string `json:"gitTrace,omitempty"` // GIT_TRACE lines
	TimedOut     bool     `json:"timedOut,omitempty"`
	Stderr       string   `json:"stderr,omitempty"` // the first KB of it
	Err          string   `json:"err,omitempty"`    // the child could not run the command
}

// oracle is the parent's handle on the child.
type oracle struct {
	cmd  *exec.Cmd
	in   *json.Encoder
	out  *bufio.Scanner
	mu   sync.Mutex
	dead error
}

// startOracle starts the namespace child, or skips when this machine
// cannot make mount namespaces (not root); in CI (JAZZ_CI, set by
// .ci/run) that fails instead, so the oracle never passes by not running.
func startOracle(tb testing.TB) *oracle {
	tb.Helper()
	if os.Geteuid() != 0 {
		if os.Getenv("JAZZ_CI") != "" {
			tb.Fatal("the oracle needs root for its mount namespace, and CI (JAZZ_CI) must run it")
		}
		tb.Skip("the oracle needs root for its mount namespace (CI and the team machines run as root)")
	}
	reqR, reqW, err := os.Pipe()
	if err != nil {
		tb.Fatal(err)
	}
	respR, respW, err := os.Pipe()
	if err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestOracleChild$", "-test.count=1", "-test.timeout=0")
	cmd.Env = append(os.Environ(), oracleChildEnv+"=1")
	cmd.ExtraFiles = []*os.File{reqR, respW}
	cmd.Stderr = os.Stderr
	// Its own PID namespace too, whose init it is: when it dies (it
	// follows the test process through Pdeathsig), the kernel kills every
	// process in the namespace, also one a command detached into a
	// session of its own, which Pdeathsig alone leaves running.
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID, Unshareflags: syscall.CLONE_NEWNS, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		tb.Fatalf("start the oracle's namespace child: %v", err)
	}
	reqR.Close()
	respW.Close()
	o := &oracle{cmd: cmd, in: json.NewEncoder(reqW), out: bufio.NewScanner(respR)}
	o.out.Buffer(make([]byte, 1<<20), 16<<20)
	tb.Cleanup(func() {
		reqW.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		respR.Close()
	})
	// The child answers an empty command once its fixture is ready.
	if _, err := o.run(""); err != nil {
		tb.Fatalf("the oracle child did not start: %v", err)
	}
	return o
}

// run sends one command and waits for its result, at most 60 s (the
// child bounds each command to a few seconds itself).
func (o *oracle) run(command string) (oracleResult, error) { return o.runIn(command, "", nil) }

// runIn is run with a working directory below the fixture root and, when
// j is set, the run-time check of that judgement.
func (o *oracle) runIn(command, dir string, j *Judgement) (oracleResult, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.dead != nil {
		return oracleResult{}, o.dead
	}
	if err := o.in.Encode(oracleRequest{Command: command, Dir: dir, Judgement: j}); err != nil {
		o.dead = fmt.Errorf("send to the oracle child: %w", err)
		return oracleResult{}, o.dead
	}
	type line struct {
		res oracleResult
		err error
	}
	ch := make(chan line, 1)
	go func() {
		if !o.out.Scan() {
			ch <- line{err: fmt.Errorf("the oracle child stopped: %v", o.out.Err())}
			return
		}
		var r oracleResult
		err := json.Unmarshal(o.out.Bytes(), &r)
		ch <- line{res: r, err: err}
	}()
	select {
	case l := <-ch:
		if l.err != nil {
			o.dead = l.err
		}
		return l.res, l.err
	case <-time.After(60 * time.Second):
		o.dead = errors.New("the oracle child did not answer within 60 s")
		o.cmd.Process.Kill()
		return oracleResult{}, o.dead
	}
}

// verdict runs command through both automatic steps and, when either
// approves it, through the child; it returns what was wrong, or "".
func (o *oracle) verdict(command string) (approved bool, problem string) {
	byAllow := AllowlistApproves(command, oracleEntries)
	byStatic := ReadOnlyProblem(command) == ""
	if !byAllow && !byStatic {
		return false, ""
	}
	var problems []string
	// The fixture root, and for git an embedded bare repository as the
	// working directory (the tool's workingDirectory argument).
	dirs := []string{""}
	if strings.Contains(command, "git") {
		dirs = append(dirs, "evilbare", "evilnest", "evilnest/sub", "evilsuper")
	}
	for _, dir := range dirs {
		if p := o.check(command, dir, byAllow, byStatic); p != "" {
			where := ""
			if dir != "" {
				where = " (run in " + dir + ")"
			}
			problems = append(problems, p+where)
		}
	}
	return true, strings.Join(problems, "; ")
}

// check runs one approved command in dir, as execute_command runs it
// under the judgement the gate would give it (the allowlist's when both
// steps approve: the gate asks it first), and says what was wrong.
func (o *oracle) check(command, dir string, byAllow, byStatic bool) string {
	j := Judge(command, ByStatic, nil, "read-only")
	if byAllow {
		j = Judge(command, ByAllowlist, oracleEntries, "")
	}
	res, err := o.runIn(command, dir, &j)
	if err != nil {
		return "the oracle could not run it: " + err.Error()
	}
	if res.Err != "" {
		return "the oracle could not run it: " + res.Err
	}
	if res.NotAutomatic != "" {
		return "" // the propose half's check keeps it from the automatic steps here
	}
	var problems []string
	if len(res.Changes) > 0 {
		problems = append(problems, "it changed files: "+strings.Join(res.Changes, ", "))
	}
	// Programs: each automatic step that approved must account for every
	// program that ran.
	for _, by := range []Approver{ByAllowlist, ByStatic} {
		if by == ByAllowlist && !byAllow || by == ByStatic && !byStatic {
			continue
		}
		if p := programsProblem(by, res); p != "" {
			problems = append(problems, fmt.Sprintf("approved by %s, %s", by, p))
		}
		// The run-time re-check must let the approved command run as it
		// was judged: every call the text names exactly. (A call whose
		// words the shell expands may be refused: the allowlist judges
		// those at run time, on what expansion produced.)
		var entries []string
		if by == ByAllowlist {
			entries = oracleEntries
		}
		j := Judge(command, by, entries, "read-only")
		literal := literalCalls(command)
		for _, argv := range res.Calls {
			if err := j.CheckExec(argv); err != nil && (by == ByStatic || slices.ContainsFunc(literal, func(c []string) bool { return slices.Equal(c, argv) })) {
				problems = append(problems, fmt.Sprintf("approved by %s, but the run-time check refuses %q: %v", by, argv, err))
			}
		}
	}
	return strings.Join(problems, "; ")
}

// literalCalls are the simple commands of command whose words are all
// known from the text.
func literalCalls(command string) [][]string {
	calls, err := judgedCalls(command)
	if err != nil {
		return nil
	}
	var out [][]string
	for _, c := range calls {
		if c.literal {
			out = append(out, c.words)
		}
	}
	return out
}

var gitBuiltin = regexp.MustCompile(`trace: built-in: git (\S+)`)
var gitRuns = regexp.MustCompile(`trace: (?:run_command|exec|start_command): (.*)`)

// programsProblem checks the observed programs against what the step
// approved: for the allowlist, the programs its entries name (and for
// git, only the subcommands they name, as git itself reports); for the
// static pass, the read-only set and git's inspect-only subcommands.
// Git starting any program (pager, hook, fsmonitor, alias) is a failure.
func programsProblem(by Approver, res oracleResult) string {
	allowedProg := func(name string) bool {
		if by == ByStatic {
			_, ok := readOnlyPrograms()[name]
			return ok
		}
		for _, e := range oracleEntries {
			if strings.Fields(e)[0] == name {
				return true
			}
		}
		return false
	}
	var bad []string
	for _, argv := range res.Execs {
		if !allowedProg(path.Base(argv[0])) {
			bad = append(bad, "the interpreter ran "+strings.Join(argv, " "))
		}
	}
	for _, s := range res.Shims {
		name, _, _ := strings.Cut(s, " ")
		// egrep and fgrep are scripts that run grep.
		if !allowedProg(name) && !(by == ByStatic && name == "grep") {
			bad = append(bad, "a program started "+s)
		}
	}
	for _, l := range res.GitTrace {
		if m := gitBuiltin.FindStringSubmatch(l); m != nil {
			sub := m[1]
			ok := false
			if by == ByStatic {
				_, ok = gitSubcommands()[sub]
			} else {
				ok = slices.Contains(oracleEntries, "git") || slices.Contains(oracleEntries, "git "+sub)
			}
			if !ok {
				bad = append(bad, "git ran its builtin "+sub)
			}
		}
		if m := gitRuns.FindStringSubmatch(l); m != nil {
			bad = append(bad, "git started "+m[1])
		}
	}
	return strings.Join(bad, "; ")
}

// TestOracleChild is the namespace child; it does nothing in a normal
// test run.
func TestOracleChild(t *testing.T) {
	if os.Getenv(oracleChildEnv) != "1" {
		t.Skip("runs only as the oracle's namespace child")
	}
	if os.Getpid() == 1 {
		os.Exit(oracleInit())
	}
	syscall.CloseOnExec(3)
	syscall.CloseOnExec(4)
	in := os.NewFile(3, "requests")
	out := os.NewFile(4, "results")
	c, err := newOracleChild()
	if err != nil {
		json.NewEncoder(out).Encode(oracleResult{Err: err.Error()})
		t.Fatal(err)
	}
	dec := json.NewDecoder(in)
	enc := json.NewEncoder(out)
	for {
		var req oracleRequest
		if err := dec.Decode(&req); err != nil {
			return // the parent closed the pipe
		}
		res := c.run(req.Command, req.Dir, req.Judgement)
		if err := enc.Encode(res); err != nil {
			return
		}
	}
}

// oracleInit is the PID namespace's init: it starts the oracle's worker
// (this test binary again, as process 2, with the same request and
// result pipes) and reaps every process of the namespace, the orphans
// that commands leave included, until the worker ends; its own end then
// ends every process left in the namespace. It returns the worker's exit
// status.
func oracleInit() int {
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "oracle init:", err)
		return 1
	}
	worker, err := syscall.ForkExec(exe, os.Args, &syscall.ProcAttr{
		Env:   os.Environ(),
		Files: []uintptr{0, 1, 2, 3, 4},
		Sys:   &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "oracle init: start the worker:", err)
		return 1
	}
	// The pipes are the worker's: held here too, the parent would not
	// see the results pipe close if the worker died.
	syscall.Close(3)
	syscall.Close(4)
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, 0, nil)
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case err != nil:
			fmt.Fprintln(os.Stderr, "oracle init: wait:", err)
			return 1
		case pid == worker && ws.Exited():
			return ws.ExitStatus()
		case pid == worker && ws.Signaled():
			return 128 + int(ws.Signal())
		}
	}
}

// oracleChild is the state of the namespace child.
type oracleChild struct {
	base    string // tmpfs with everything of ours
	fixture string // the pristine fixture tree (lower layer)
	sys     []sysOverlay
	shims   string
	shimLog string
	n       int
}

// sysOverlay is the overlay over one system directory.
type sysOverlay struct{ dir, upper, work string }

func (o sysOverlay) mount() error {
	for _, d := range []string{o.upper, o.work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	if err := syscall.Mount("overlay", o.dir, "overlay", 0, "lowerdir="+o.dir+",upperdir="+o.upper+",workdir="+o.work); err != nil {
		return fmt.Errorf("overlay %s: %w", o.dir, err)
	}
	return nil
}

// reset drops what a command wrote into a system directory.
func (o sysOverlay) reset() error {
	if err := syscall.Unmount(o.dir, syscall.MNT_DETACH); err != nil {
		return fmt.Errorf("unmount %s: %w", o.dir, err)
	}
	os.RemoveAll(o.upper)
	os.RemoveAll(o.work)
	return o.mount()
}

// systemDirs are overlaid so that a write there is seen, not done.
var systemDirs = []string{"/tmp", "/var", "/root", "/home", "/etc", "/opt", "/srv", "/usr", "/mnt", "/media", "/run"}

func newOracleChild() (*oracleChild, error) {
	// Our own tmpfs, hiding the host's /dev/shm in this namespace only.
	base := "/dev/shm"
	if err := syscall.Mount("tmpfs", base, "tmpfs", 0, "size=512m,mode=0755"); err != nil {
		return nil, fmt.Errorf("mount tmpfs: %w", err)
	}
	c := &oracleChild{base: filepath.Join(base, "jo")}
	c.fixture = filepath.Join(c.base, "fixture")
	c.shims = filepath.Join(c.base, "shims")
	c.shimLog = filepath.Join(c.base, "log", "shims")
	for _, d := range []string{c.fixture, c.shims, filepath.Join(c.base, "log")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	if err := buildFixture(c.fixture); err != nil {
		return nil, fmt.Errorf("build the fixture: %w", err)
	}
	if err := writeShims(c.shims, c.shimLog); err != nil {
		return nil, fmt.Errorf("write shims: %w", err)
	}
	for i, d := range systemDirs {
		if st, err := os.Lstat(d); err != nil || !st.IsDir() {
			continue
		}
		o := sysOverlay{dir: d, upper: filepath.Join(c.base, "sys", fmt.Sprint(i), "u"), work: filepath.Join(c.base, "sys", fmt.Sprint(i), "w")}
		if err := o.mount(); err != nil {
			return nil, err
		}
		c.sys = append(c.sys, o)
	}
	// Anything else under / fails instead of landing on the host.
	if err := syscall.Mount("", "/", "", syscall.MS_REMOUNT|syscall.MS_BIND|syscall.MS_RDONLY, ""); err != nil {
		return nil, fmt.Errorf("remount / read-only: %w", err)
	}
	return c, nil
}

// writeShims puts a recording shim in front of every program on PATH.
func writeShims(dir, log string) error {
	seen := map[string]bool{}
	for _, bin := range []string{"/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"} {
		entries, err := os.ReadDir(bin)
		if err != nil {
			continue
		}
		for _, e := range entries {
			name := e.Name()
			if seen[name] || strings.ContainsAny(name, "'\"\\$` \n") {
				continue
			}
			real := filepath.Join(bin, name)
			if st, err := os.Stat(real); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
				continue
			}
			seen[name] = true
			// One record per start, ended by NUL: the one byte no
			// argument can hold.
			script := "#!/bin/sh\nprintf '%s\\000' \"" + name + " $*\" >> '" + log + "'\nexec '" + real + "' \"$@\"\n"
			if err := os.WriteFile(filepath.Join(dir, name), []byte(script), 0o755); err != nil {
				return err
			}
		}
	}
	return nil
}

// buildFixture makes the tree every command starts from.
func buildFixture(dir string) error {
	files := map[string]string{
		"f":                           "a\nb\na\n",
		"a.txt":                       "x 1\ny 2\n",
		"b.txt":                       "y 2\nz 3\n",
		"dir/x.go":                    "package x\n",
		"-o":                          "dash o\n",
		"--output=pwn-glob":           "dash output\n",
		"-delete":                     "dash delete\n",
		"script.sed":                  "w pwn-sedscript\n",
		"prog.awk":                    "BEGIN { system(\"touch pwn-awkfile\") }\n",
		"evilhome/.gitconfig":         "[core]\n\tfsmonitor = /usr/bin/touch pwn-home-fsmonitor\n\tpager = /usr/bin/touch pwn-home-pager\n[alias]\n\tst = !touch pwn-home-alias\n",
		"evilhome/.config/git/config": "[core]\n\tfsmonitor = /usr/bin/touch pwn-xdg-fsmonitor\n",
		"evilhome/rc":                 "/usr/bin/touch pwn-bashenv\n",
		"bin/ls":                      "#!/bin/sh\n/usr/bin/touch pwn-bin-ls\n",
		"bin/git":                     "#!/bin/sh\n/usr/bin/touch pwn-bin-git\n",
		"bin/cat":                     "#!/bin/sh\n/usr/bin/touch pwn-bin-cat\n",
		"bin/pager":                   "#!/bin/sh\n/usr/bin/touch pwn-bin-pager\n",
		"bin/git-status":              "#!/bin/sh\n/usr/bin/touch pwn-exec-path\n",
		"bin/extdiff":                 "#!/bin/sh\n/usr/bin/touch pwn-extdiff\n",
		"node_modules/.bin/ls":        "#!/bin/sh\n/usr/bin/touch pwn-npx-ls\n",
		"node_modules/.bin/cat":       "#!/bin/sh\n/usr/bin/touch pwn-npx-cat\n",
		// Programs in directories named like an allowlist key's words.
		"ls /.bin/x":                     "#!/bin/sh\n/usr/bin/touch pwn-space-ls\n",
		"git status /.bin/x":             "#!/bin/sh\n/usr/bin/touch pwn-space-git\n",
		"evilbare/HEAD":                  "ref: refs/heads/main\n",
		"evilbare/config":                "[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = .\n\tfsmonitor = /usr/bin/touch pwn-bare-fsmonitor\n\tpager = /usr/bin/touch pwn-bare-pager\n",
		"evilbare/description":           "x\n",
		"evilnest/a.txt":                 "one\n",
		"evilnest/.gitattributes":        "* diff=evil filter=evil\n",
		"evilnest/sub/.keep":             "",
		"evilsuper/a.txt":                "one\n",
		"evilsuper/.gitmodules":          "[submodule \"inner\"]\n\tpath = inner\n\turl = ./inner\n\tignore = none\n",
		"evilsuper/inner/s.txt":          "two\n",
		"evilsuper/inner/.gitattributes": "* filter=evil\n",
		"home/.keep":                     "",
		"status/.keep":                   "",
		"tmp/.keep":                      "",
		".gitattributes":                 "*.txt diff=evil\n",
	}
	// A fake of every program the grammar names, for PATH hijacks.
	for _, prog := range genPrograms {
		files["bin/"+prog] = "#!/bin/sh\n/usr/bin/touch pwn-bin-" + prog + "\n"
		// And one in a directory named like the program and a space,
		// which a word with a space in it names (gen.shape).
		files[prog+" /.bin/x"] = "#!/bin/sh\n/usr/bin/touch pwn-space-" + prog + "\n"
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		mode := os.FileMode(0o644)
		if strings.HasPrefix(name, "bin/") || strings.Contains(name, ".bin/") {
			mode = 0o755
		}
		if err := os.WriteFile(p, []byte(body), mode); err != nil {
			return err
		}
	}
	for _, d := range []string{"evilbare/objects/info", "evilbare/objects/pack", "evilbare/refs/heads", "evilbare/refs/tags"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return err
		}
	}
	// Old times on every file before git records them: no index entry is
	// racily clean, so reading the repository never rewrites its index.
	old := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	touchOld := func() error {
		return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.Name() == ".git" {
				return fs.SkipDir
			}
			return os.Chtimes(p, old, old)
		})
	}
	if err := touchOld(); err != nil {
		return err
	}
	env := append(os.Environ(), "GIT_AUTHOR_NAME=o", "GIT_AUTHOR_EMAIL=o@x", "GIT_COMMITTER_NAME=o",
		"GIT_COMMITTER_EMAIL=o@x", "GIT_CONFIG_NOSYSTEM=1", "HOME="+filepath.Join(dir, "home"),
		"GIT_AUTHOR_DATE=2020-01-01T00:00:00Z", "GIT_COMMITTER_DATE=2020-01-01T00:00:00Z")
	steps := [][]string{
		{"git", "init", "-q", "-b", "main"},
		// Stat data git can trust through an overlay.
		{"git", "config", "core.checkStat", "minimal"},
		{"git", "config", "core.trustctime", "false"},
		{"git", "add", "f", "a.txt", "dir", "script.sed", ".gitattributes"},
		{"git", "commit", "-qm", "one"},
		{"git", "tag", "v1"},
		{"git", "branch", "side"},
		{"git", "add", "b.txt"},
		{"git", "commit", "-qm", "two"},
	}
	// A nested repository with a real .git directory (an unpacked
	// archive can hold one), whose configuration runs programs each way
	// git lets a repository: entered by cd or workingDirectory, its git
	// commands must not be approved automatically.
	nest := [][]string{
		{"git", "init", "-q", "-b", "main"},
		{"git", "config", "core.checkStat", "minimal"},
		{"git", "config", "core.trustctime", "false"},
		{"git", "add", "a.txt", ".gitattributes", "sub"},
		{"git", "commit", "-qm", "one"},
		{"git", "config", "core.fsmonitor", "/usr/bin/touch pwn-nest-fsmonitor"},
		{"git", "config", "core.pager", "/usr/bin/touch pwn-nest-pager"},
		{"git", "config", "diff.external", "/usr/bin/touch pwn-nest-external"},
		{"git", "config", "diff.evil.textconv", "/usr/bin/touch pwn-nest-textconv"},
		{"git", "config", "filter.evil.clean", "/usr/bin/touch pwn-nest-clean"},
		{"git", "config", "alias.st", "!touch pwn-nest-alias"},
	}
	// A repository with a submodule whose own configuration defines a
	// clean filter its attributes select; .gitmodules asks git to look
	// into it (ignore = none outranks jazz's diff.ignoreSubmodules).
	inner := [][]string{
		{"git", "init", "-q", "-b", "main"},
		{"git", "config", "core.checkStat", "minimal"},
		{"git", "config", "core.trustctime", "false"},
		{"git", "add", "s.txt", ".gitattributes"},
		{"git", "commit", "-qm", "one"},
		{"git", "config", "filter.evil.clean", "/usr/bin/touch pwn-sub-clean"},
	}
	super := [][]string{
		{"git", "init", "-q", "-b", "main"},
		{"git", "config", "core.checkStat", "minimal"},
		{"git", "config", "core.trustctime", "false"},
		{"git", "add", "a.txt", ".gitmodules", "inner"},
		{"git", "commit", "-qm", "one"},
	}
	for _, group := range []struct {
		dir   string
		steps [][]string
	}{{dir, steps}, {filepath.Join(dir, "evilnest"), nest}, {filepath.Join(dir, "evilsuper", "inner"), inner}, {filepath.Join(dir, "evilsuper"), super}} {
		for _, s := range group.steps {
			cmd := exec.Command(s[0], s[1:]...)
			cmd.Dir, cmd.Env = group.dir, env
			if out, err := cmd.CombinedOutput(); err != nil {
				return fmt.Errorf("%s: %w: %s", strings.Join(s, " "), err, out)
			}
		}
	}
	// Worktree changes (their sizes differ, so they show as modified).
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("x 1\ny 2\nw 4\n"), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "evilnest", "a.txt"), []byte("one\ntwo\n"), 0o644); err != nil {
		return err
	}
	if err := touchOld(); err != nil {
		return err
	}
	// The submodule's file changed at its committed size, at another
	// time than the index recorded: git must filter it to compare.
	if err := os.WriteFile(filepath.Join(dir, "evilsuper", "inner", "s.txt"), []byte("owt\n"), 0o644); err != nil {
		return err
	}
	other := old.Add(time.Hour)
	return os.Chtimes(filepath.Join(dir, "evilsuper", "inner", "s.txt"), other, other)
}

// run executes one command on a fresh overlay of the fixture.
func (c *oracleChild) run(command, dir string, j *Judgement) (res oracleResult) {
	c.n++
	top := filepath.Join(c.base, "run", fmt.Sprint(c.n))
	up, work, root := filepath.Join(top, "u"), filepath.Join(top, "w"), filepath.Join(top, "m")
	for _, d := range []string{up, work, root} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return oracleResult{Err: err.Error()}
		}
	}
	if err := syscall.Mount("overlay", root, "overlay", 0, "lowerdir="+c.fixture+",upperdir="+up+",workdir="+work); err != nil {
		return oracleResult{Err: "overlay the fixture: " + err.Error()}
	}
	defer os.RemoveAll(top)
	trace := filepath.Join(top, "trace")
	os.WriteFile(c.shimLog, nil, 0o644)
	if command != "" {
		res = c.interpret(command, root, dir, trace, j)
	}
	if res.NotAutomatic != "" {
		// Nothing ran; the overlay is still checked below.
		res = oracleResult{NotAutomatic: res.NotAutomatic}
	}
	if err := syscall.Unmount(root, syscall.MNT_DETACH); err != nil {
		res.Err = "unmount: " + err.Error()
	}
	res.Changes = append(res.Changes, changedPaths(up, c.fixture, "")...)
	for _, o := range c.sys {
		if ch := changedPaths(o.upper, o.dir, o.dir+"/"); len(ch) > 0 {
			res.Changes = append(res.Changes, ch...)
			if err := o.reset(); err != nil {
				res.Err = err.Error()
			}
		}
	}
	if extra := strangers(c.base); len(extra) > 0 {
		res.Changes = append(res.Changes, extra...)
	}
	if b, err := os.ReadFile(c.shimLog); err == nil {
		for _, l := range strings.Split(string(b), "\x00") {
			if l != "" {
				res.Shims = append(res.Shims, l)
			}
		}
	}
	if b, err := os.ReadFile(trace); err == nil {
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			if l != "" {
				res.GitTrace = append(res.GitTrace, l)
			}
		}
	}
	return res
}

// strangers lists what appeared in our tmpfs besides our own directories.
func strangers(base string) []string {
	entries, _ := os.ReadDir(filepath.Dir(base))
	var out []string
	for _, e := range entries {
		if e.Name() != filepath.Base(base) {
			out = append(out, filepath.Join(filepath.Dir(base), e.Name()))
		}
	}
	return out
}

// sameDir reports whether two directories have the same mode and owner.
func sameDir(a, b string) bool {
	sa, err1 := os.Lstat(a)
	sb, err2 := os.Lstat(b)
	if err1 != nil || err2 != nil || !sb.IsDir() || sa.Mode() != sb.Mode() {
		return false
	}
	ua, ub := sa.Sys().(*syscall.Stat_t), sb.Sys().(*syscall.Stat_t)
	return ua.Uid == ub.Uid && ua.Gid == ub.Gid
}

// changedPaths lists every entry of an overlay's upper directory that
// is a change against lower.
func changedPaths(upper, lower, prefix string) []string {
	var out []string
	filepath.WalkDir(upper, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == upper {
			return nil
		}
		rel, _ := filepath.Rel(upper, p)
		if d.IsDir() {
			// A directory in the upper layer only matters if it is new
			// or holds a change (its children say which) or its mode or
			// owner changed. Git copies one up by making and removing a
			// lock file in it, which leaves nothing changed.
			if ents, _ := os.ReadDir(p); len(ents) > 0 || sameDir(p, filepath.Join(lower, rel)) {
				return nil
			}
		}
		out = append(out, prefix+rel)
		return nil
	})
	sort.Strings(out)
	return out
}

// interpret runs command the way execute_command does, recording every
// call and every executed program, and refusing (and stopping at) any
// argv the judgement j does not admit.
func (c *oracleChild) interpret(command, root, dir, trace string, j *Judgement) oracleResult {
	var res oracleResult
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(command), "")
	if err != nil {
		return oracleResult{Err: "parse: " + err.Error()}
	}
	var mu sync.Mutex
	var stderr capBuffer
	cwd := filepath.Join(root, dir)
	// What execute_command's child gets: a sanitized environment, then
	// HardenEnv.
	env := HardenEnv([]string{
		// A relative entry first: HardenEnv must drop it.
		"PATH=bin:" + c.shims + ":/usr/bin:/bin", "HOME=" + filepath.Join(root, "home"), "TMPDIR=" + filepath.Join(root, "tmp"),
		"USER=root", "LOGNAME=root", "SHELL=/bin/sh", "LANG=C.UTF-8", "LC_ALL=C", "TERM=dumb", "PWD=" + cwd,
		"GIT_PAGER=cat", "GIT_TERMINAL_PROMPT=0", "GIT_TRACE=" + trace, "EVIL=touch pwn-config-env",
	})
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
	defer cancel()
	// The propose half's check, where the command will run, before any
	// automatic approval. The command then runs with HardenEnv alone,
	// not AutoEnv's overrides: the refusal must hold by itself.
	if j != nil && j.Automatic() {
		// Its own git process is the propose half's, not the command's:
		// it stays out of the trace.
		checkEnv := slices.DeleteFunc(slices.Clone(env), func(kv string) bool { return strings.HasPrefix(kv, "GIT_TRACE=") })
		if why := RepoProblem(ctx, command, cwd, checkEnv); why != "" {
			return oracleResult{NotAutomatic: why}
		}
	}
	judge := func(args []string) error {
		if j == nil {
			return nil
		}
		err := j.CheckExec(args)
		if err != nil {
			mu.Lock()
			res.Refused = append(res.Refused, err.Error())
			mu.Unlock()
			cancel()
		}
		return err
	}
	runner, err := interp.New(
		interp.Dir(cwd),
		interp.Env(expand.ListEnviron(env...)),
		interp.StdIO(strings.NewReader(""), io.Discard, &stderr),
		interp.CallHandler(func(_ context.Context, args []string) ([]string, error) {
			mu.Lock()
			res.Calls = append(res.Calls, slices.Clone(args))
			mu.Unlock()
			if err := judge(args); err != nil {
				return nil, err
			}
			return args, nil
		}),
		interp.ExecHandlers(func(next interp.ExecHandlerFunc) interp.ExecHandlerFunc {
			return func(ctx context.Context, args []string) error {
				if err := judge(args); err != nil {
					return err
				}
				mu.Lock()
				res.Execs = append(res.Execs, slices.Clone(args))
				mu.Unlock()
				return next(ctx, args)
			}
		}),
	)
	if err != nil {
		return oracleResult{Err: err.Error()}
	}
	runner.Run(ctx, f)
	res.TimedOut = ctx.Err() != nil && len(res.Refused) == 0
	res.Stderr = stderr.String()
	return res
}

// capBuffer keeps the first KB written to it.
type capBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (c *capBuffer) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if room := 1024 - len(c.b); room > 0 {
		c.b = append(c.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func (c *capBuffer) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return string(c.b)
}

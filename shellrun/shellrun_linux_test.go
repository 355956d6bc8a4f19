package shellrun

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/jazz-run/jazz/isolate"
	"github.com/jazz-run/jazz/proctree"
	"github.com/jazz-run/jazz/shellguard"
)

// machine is this machine's isolation, probed once for the tests.
var machine = struct {
	once sync.Once
	mode isolate.Mode
}{}

// isolation is the mode production runs use here.
func isolation() isolate.Mode {
	machine.once.Do(func() { machine.mode, _ = isolate.Probe(context.Background()) })
	return machine.mode
}

// request is a Request for cmd in a fresh pinned directory, isolated as
// production runs are on this machine.
func request(t testing.TB, cmd string) Request {
	t.Helper()
	real, state, err := PinDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	// The home directory is not the working directory: a writing
	// program run in the home is a person's to approve
	// (shellguard.ProtectedArgv), and most cases here approve otherwise.
	home, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return Request{
		Command:   cmd,
		Dir:       real,
		DirState:  state,
		Env:       []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "TMPDIR=" + os.TempDir()},
		Timeout:   time.Minute,
		Isolation: isolation(),
		// A person approved it: the denylist alone narrows what runs.
		Judgement: shellguard.Judgement{By: shellguard.ByHuman},
	}
}

func mustRun(t *testing.T, req Request) Output {
	t.Helper()
	out, err := Run(context.Background(), req)
	if err != nil {
		t.Fatalf("Run(%q): %v (output %+v)", req.Command, err, out)
	}
	return out
}

// bothModes runs f with the cgroup (when this machine lets jazz make one)
// and with the runner's sweep alone.
func bothModes(t *testing.T, f func(t *testing.T, noCgroup bool)) {
	t.Run("cgroup", func(t *testing.T) {
		cg, err := newCgroup()
		if err != nil {
			t.Skipf("no cgroup here: %v", err)
		}
		_ = cg.Remove(context.Background())
		f(t, false)
	})
	t.Run("subreaper", func(t *testing.T) { f(t, true) })
}

func TestRunBasics(t *testing.T) {
	cases := []struct {
		name, cmd      string
		exit           int
		stdout, stderr string
	}{
		{"echo", "echo hi", 0, "hi", ""},
		{"exit status", "echo out; echo err >&2; exit 7", 7, "out", "err"},
		{"program", "printf '%s\\n' a b | tr a-z A-Z", 0, "A\nB", ""},
		{"pwd is the pinned directory", "pwd", 0, "", ""},
		// $$ is the runner, not the test process that stands for jazz.
		{"$$ is the runner", "echo $$", 0, "", ""},
		// The runner process itself holds none of the parent's environment.
		{"runner environment is empty", "wc -c < /proc/$$/environ", 0, "0", ""},
		{"plain exit 137 is no signal", "exit 137", 137, "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := request(t, tc.cmd)
			out := mustRun(t, req)
			if out.ExitCode != tc.exit || out.Signal != "" || out.ShellKilled {
				t.Fatalf("exit %d signal %q killed %v, want %d: %+v", out.ExitCode, out.Signal, out.ShellKilled, tc.exit, out)
			}
			want := tc.stdout
			switch tc.name {
			case "pwd is the pinned directory":
				want = req.Dir
			case "runner environment is empty":
				n := 0
				for _, kv := range runnerEnv() { // GORACE in race builds
					n += len(kv) + 1
				}
				want = strconv.Itoa(n)
			case "$$ is the runner":
				if pid, err := strconv.Atoi(out.Stdout); err != nil || pid == os.Getpid() || pid <= 1 {
					t.Fatalf("$$ = %q (this process is %d)", out.Stdout, os.Getpid())
				}
				return
			}
			if out.Stdout != want || out.Stderr != tc.stderr {
				t.Fatalf("stdout %q stderr %q, want %q %q", out.Stdout, out.Stderr, want, tc.stderr)
			}
		})
	}
}

// TestShellKilledBySignal: `kill -TERM $$` ends the runner, not the
// caller, and the result says which signal it was.
func TestShellKilledBySignal(t *testing.T) {
	// (Signals the Go runtime ignores by default, such as SIGUSR1, do not
	// end the runner: it is a Go program, not bash.)
	for _, sig := range []string{"TERM", "HUP", "INT"} {
		t.Run(sig, func(t *testing.T) {
			// kill is no builtin of the interpreter: env runs the program.
			// The signal lands when the kernel next schedules a runner
			// thread, so the script waits on a program after it rather
			// than race on (see TestCgroupOutlivesTheShell).
			out := mustRun(t, request(t, "echo before; env kill -"+sig+" $$; sleep 5; echo after"))
			if !out.ShellKilled || out.Signal != "SIG"+sig {
				t.Fatalf("want the shell killed by SIG%s: %+v", sig, out)
			}
			if out.Stdout != "before" {
				t.Fatalf("stdout %q", out.Stdout)
			}
			n := unix.SignalNum("SIG" + sig)
			if out.ExitCode != 128+int(n) {
				t.Fatalf("exit code %d", out.ExitCode)
			}
		})
	}
}

// TestSignalsIgnoredByWhoStartedJazz: jazz started under nohup (or by a
// runner that ignores SIGHUP and SIGINT) still gives its commands the
// default actions, in the runner and in the programs it starts.
func TestSignalsIgnoredByWhoStartedJazz(t *testing.T) {
	signal.Ignore(syscall.SIGHUP, syscall.SIGINT, syscall.SIGTERM)
	t.Cleanup(func() { signal.Reset(syscall.SIGHUP, syscall.SIGINT, syscall.SIGTERM) })
	for _, sig := range []string{"HUP", "INT", "TERM"} {
		t.Run(sig, func(t *testing.T) {
			out := mustRun(t, request(t, "env kill -"+sig+" $$; sleep 5; echo after"))
			if !out.ShellKilled || out.Signal != "SIG"+sig || out.Stdout != "" {
				t.Fatalf("want the shell killed by SIG%s: %+v", sig, out)
			}
			req := request(t, "sh ./die.sh")
			if err := os.WriteFile(filepath.Join(req.Dir, "die.sh"), []byte("kill -"+sig+" $$\necho survived\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			out = mustRun(t, req)
			if out.Signal != "SIG"+sig || out.ShellKilled || strings.Contains(out.Stdout, "survived") {
				t.Fatalf("want the program killed by SIG%s: %+v", sig, out)
			}
		})
	}
}

// TestProgramKilledBySignal names the signal behind a 128+n status when a
// program died of it, and only then.
func TestProgramKilledBySignal(t *testing.T) {
	req := request(t, "sh ./die.sh")
	if err := os.WriteFile(filepath.Join(req.Dir, "die.sh"), []byte("kill -ABRT $$\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := mustRun(t, req)
	if out.ExitCode != 134 || out.Signal != "SIGABRT" || out.ShellKilled {
		t.Fatalf("want exit 134 from SIGABRT of a program: %+v", out)
	}
	req.Command = "sh ./die.sh; exit 3"
	if out := mustRun(t, req); out.ExitCode != 3 || out.Signal != "" {
		t.Fatalf("a later normal exit still names a signal: %+v", out)
	}
}

// TestShellMemoryLimit stops `x=$x$x` in a loop at the interpreter's own
// limit, with a clear result and the caller's memory untouched.
func TestShellMemoryLimit(t *testing.T) {
	req := request(t, "x=0123456789abcdef; for i in $(seq 40); do x=$x$x; done; echo survived")
	req.ShellMemoryLimit = 64 << 20
	out := mustRun(t, req)
	if !out.MemoryExceeded || out.MemoryLimit != 64<<20 || strings.Contains(out.Stdout, "survived") {
		t.Fatalf("want the memory limit to stop the shell: %+v", out)
	}
}

// TestDataLimit: when the runtime itself hits RLIMIT_DATA before the
// interpreter's watch answers, the result still says memory, with the
// per-process limit; programs get the same limit.
func TestDataLimit(t *testing.T) {
	if raceEnabled {
		t.Skip("the race runtime does not fit in a small RLIMIT_DATA")
	}
	req := request(t, "grep 'Max data size' /proc/self/limits")
	req.MemoryLimit = 256 << 20
	out := mustRun(t, req)
	if f := strings.Fields(out.Stdout); len(f) < 5 || f[3] != "268435456" || f[4] != "268435456" {
		t.Fatalf("limits: %q", out.Stdout)
	}
	req.Command = "x=0123456789abcdef; for i in $(seq 40); do x=$x$x; done; echo survived"
	req.ShellMemoryLimit = 4 << 30 // the watch never answers first
	out = mustRun(t, req)
	if !out.MemoryExceeded || out.MemoryLimit != 256<<20 || strings.Contains(out.Stdout, "survived") {
		t.Fatalf("want RLIMIT_DATA to stop the shell: %+v", out)
	}
}

func TestCPULimit(t *testing.T) {
	req := request(t, "grep 'Max cpu time' /proc/self/limits")
	req.Timeout = 10 * time.Second
	out := mustRun(t, req)
	if f := strings.Fields(out.Stdout); len(f) < 5 || f[3] != "12" || f[4] != "14" {
		t.Fatalf("limits: %q", out.Stdout)
	}
}

// TestSecretsOfTheParent: after Run the caller is non-dumpable and its
// environment block is blank, so a command reads no secret from its
// /proc entries: not environ (even as root), not mem (root without
// CAP_SYS_PTRACE, which the runner drops).
func TestSecretsOfTheParent(t *testing.T) {
	if os.Getenv("PATH") == "" {
		t.Skip("needs a PATH in this process's environment")
	}
	pid := os.Getpid()
	req := request(t, fmt.Sprintf("tr -d '\\000' < /proc/%d/environ | wc -c; head -c 1 /proc/%d/mem; echo status $?; grep CapEff /proc/self/status", pid, pid))
	out := mustRun(t, req)
	if d, _ := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0); d != 0 {
		t.Fatalf("the caller is still dumpable (%d)", d)
	}
	lines := strings.Split(out.Stdout, "\n")
	if len(lines) != 3 || strings.TrimSpace(lines[0]) != "0" || lines[1] != "status 1" {
		t.Fatalf("the command read the parent's /proc entries: stdout %q stderr %q", out.Stdout, out.Stderr)
	}
	if os.Geteuid() == 0 {
		eff, err := strconv.ParseUint(strings.TrimSpace(strings.TrimPrefix(lines[2], "CapEff:")), 16, 64)
		if err != nil || eff&(1<<unix.CAP_SYS_PTRACE) != 0 {
			t.Fatalf("a root command keeps CAP_SYS_PTRACE: %q", lines[2])
		}
	}
	if os.Getenv("PATH") == "" {
		t.Fatal("blanking the environment block broke os.Getenv")
	}
}

// TestNoControllingTerminal: the runner is a session of its own.
func TestNoControllingTerminal(t *testing.T) {
	out := mustRun(t, request(t, "cat /dev/tty; echo status $?"))
	if !strings.Contains(out.Stdout, "status 1") {
		t.Fatalf("the command opened a terminal: %+v", out)
	}
}

// markerProcs lists live processes whose command line contains marker.
func markerProcs(t *testing.T, marker string) []string {
	t.Helper()
	found, err := proctree.Matching(marker)
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	return found
}

// sleeper links a sleep binary under a unique name in dir.
func sleeper(t *testing.T, dir string) (link, marker string) {
	t.Helper()
	bin, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep binary")
	}
	bin, _ = filepath.EvalSymlinks(bin)
	marker = fmt.Sprintf("jzdaemon%d", time.Now().UnixNano())
	link = filepath.Join(dir, marker)
	if err := os.Symlink(bin, link); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "detach.sh"), []byte(detachScript), 0o644); err != nil {
		t.Fatal(err)
	}
	return link, marker
}

// detachScript (`sh ./detach.sh PROGRAM ARGS...`) starts a program in a
// session of its own and returns once it is there, boundedly. `setsid -f`
// returns before its child has left the group, so the exec handler's kill
// of the group it leaves behind could end the child first, under load.
const detachScript = `setsid "$@" &
pid=$!
i=0
while [ $i -lt 2000 ]; do
	set -- $(cat /proc/$pid/stat 2>/dev/null)
	[ "$6" = "$pid" ] && exit 0
	sleep 0.01
	i=$((i+1))
done
echo "process $pid did not reach a session of its own" >&2
exit 1
`

// TestDaemonsDoNotOutliveTheCommand starts processes that leave the
// command's process group every way a shell can (setsid, a double fork
// through a script, nohup in the background) and checks /proc: none is
// left once Run returns, and the result says how many were killed.
func TestDaemonsDoNotOutliveTheCommand(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid binary")
	}
	bothModes(t, func(t *testing.T, noCgroup bool) {
		req := request(t, "")
		req.NoCgroup = noCgroup
		link, marker := sleeper(t, req.Dir)
		script := fmt.Sprintf("( %q 60 & ) \nsh ./detach.sh %q 60\n", link, link)
		if err := os.WriteFile(filepath.Join(req.Dir, "fork.sh"), []byte(script), 0o644); err != nil {
			t.Fatal(err)
		}
		// The pause lets the background job start before the script ends.
		req.Command = fmt.Sprintf("sh ./detach.sh %q 60; sh ./fork.sh; nohup %q 60 >/dev/null 2>&1 & for i in 1 2 3 4 5; do sleep 0.05; done; echo started", link, link)
		out := mustRun(t, req)
		if out.Stdout != "started" || out.ExitCode != 0 {
			t.Fatalf("%+v", out)
		}
		if left := markerProcs(t, marker); len(left) > 0 {
			t.Fatalf("processes outlived the command: %q", left)
		}
		if out.Killed < 4 {
			t.Fatalf("killed %d processes, want at least 4: %+v", out.Killed, out)
		}
		want := "cgroup"
		if noCgroup {
			want = "subreaper"
		}
		if out.Tracking != want {
			t.Fatalf("tracking %q, want %q", out.Tracking, want)
		}
	})
}

// TestCgroupOutlivesTheShell: when the shell itself dies before it can
// sweep, the cgroup still ends what it left.
func TestCgroupOutlivesTheShell(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid binary")
	}
	if cg, err := newCgroup(); err != nil {
		t.Skipf("no cgroup here: %v", err)
	} else {
		_ = cg.Remove(context.Background())
	}
	req := request(t, "")
	// Outside a PID namespace: inside one, the kernel itself ends what
	// is left when the namespace's first process exits (TestIsolated).
	req.Isolation = isolate.None
	link, marker := sleeper(t, req.Dir)
	// The signal is delivered when the kernel next schedules one of the
	// runner's threads; until then the script would go on, end and sweep,
	// and the sweep (not the cgroup) would end the daemon. So the script
	// never ends: after the kill it waits on a program of its own.
	req.Command = fmt.Sprintf("sh ./detach.sh %q 60 && env kill -TERM $$ && %q 60", link, link)
	out := mustRun(t, req)
	if !out.ShellKilled || out.Signal != "SIGTERM" {
		t.Fatalf("%+v", out)
	}
	if left := markerProcs(t, marker); len(left) > 0 {
		t.Fatalf("processes outlived the command: %q", left)
	}
	if out.Killed < 1 {
		t.Fatalf("killed %d", out.Killed)
	}
}

func TestTimeoutAndCancel(t *testing.T) {
	bothModes(t, func(t *testing.T, noCgroup bool) {
		t.Run("timeout", func(t *testing.T) {
			req := request(t, "")
			req.NoCgroup = noCgroup
			link, marker := sleeper(t, req.Dir)
			req.Command = fmt.Sprintf("sh ./detach.sh %q 60 && %q 60", link, link)
			req.Timeout = 300 * time.Millisecond
			out := mustRun(t, req)
			if !out.TimedOut {
				t.Fatalf("%+v", out)
			}
			if left := markerProcs(t, marker); len(left) > 0 {
				t.Fatalf("processes outlived the timeout: %q", left)
			}
		})
		t.Run("cancel", func(t *testing.T) {
			req := request(t, "")
			req.NoCgroup = noCgroup
			link, marker := sleeper(t, req.Dir)
			req.Command = fmt.Sprintf("sh ./detach.sh %q 60 && %q 60", link, link)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { _, err := Run(ctx, req); done <- err }()
			deadline := time.Now().Add(10 * time.Second)
			for len(markerProcs(t, marker)) < 2 {
				select {
				case err := <-done:
					t.Fatalf("the command ended before the cancel: %v", err)
				default:
				}
				if time.Now().After(deadline) {
					t.Fatalf("the sleepers did not start: %q", markerProcs(t, marker))
				}
				time.Sleep(5 * time.Millisecond)
			}
			cancel()
			if err := <-done; !errors.Is(err, context.Canceled) {
				t.Fatalf("err = %v", err)
			}
			if left := markerProcs(t, marker); len(left) > 0 {
				t.Fatalf("processes outlived the cancel: %q", left)
			}
		})
	})
}

// TestRunnerChecksTheJudgement: every simple command, after expansion,
// passes the judgement's CheckExec in the runner before it runs; the first
// refusal stops the run.
func TestRunnerChecksTheJudgement(t *testing.T) {
	cases := []struct {
		name, cmd string
		j         shellguard.Judgement
		ran       bool
	}{
		{"zero judgement refuses builtins", "echo x > ran", shellguard.Judgement{}, false},
		{"a refusal stops the run", "cat /dev/null > /dev/null; t=touch; $t ran; echo after", shellguard.Judge("cat /dev/null > /dev/null; t=touch; $t ran; echo after", shellguard.ByStatic, nil, "read-only"), false},
		{"zero judgement refuses programs", "touch ran", shellguard.Judgement{}, false},
		{"static: the judged argv", "touch ran", shellguard.Judge("touch ran", shellguard.ByStatic, nil, "read-only"), true},
		{"static: expansion differs", "t=touch; $t ran", shellguard.Judge("t=touch; $t ran", shellguard.ByStatic, nil, "read-only"), false},
		{"allowlist: a covered key", "touch ran", shellguard.Judge("touch ran", shellguard.ByAllowlist, []string{"touch"}, ""), true},
		{"allowlist: expansion leaves the entries", "c=$(printf 'touch'); $c ran", shellguard.Judge("c=$(printf 'touch'); $c ran", shellguard.ByAllowlist, []string{"printf"}, ""), false},
		{"policy approves what the denylist allows", "t=touch; $t ran", shellguard.Judgement{By: shellguard.ByPolicy}, true},
		// Redirections: CheckExec sees no argv for the file `>` opens.
		{"static: a redirection writes", "echo x > ran", shellguard.Judge("echo x > ran", shellguard.ByStatic, nil, "read-only"), false},
		{"allowlist: an expanded redirection", "f=ran; echo x >> $f", shellguard.Judge("f=ran; echo x >> $f", shellguard.ByAllowlist, []string{"echo"}, ""), false},
		{"classifier read-only: a redirection", "echo x > ran", shellguard.Judge("echo x > ran", shellguard.ByClassifier, nil, "read-only"), false},
		{"classifier low-risk: a redirection", "echo x > ran", shellguard.Judge("echo x > ran", shellguard.ByClassifier, nil, "low-risk"), true},
		{"human: a redirection", "echo x > ran", shellguard.Judgement{By: shellguard.ByHuman}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := request(t, tc.cmd)
			req.Judgement = tc.j
			out := mustRun(t, req)
			_, err := os.Stat(filepath.Join(req.Dir, "ran"))
			if (err == nil) != tc.ran {
				t.Fatalf("ran = %v, want %v: %+v", err == nil, tc.ran, out)
			}
			if !tc.ran && !strings.HasPrefix(out.NotJudged, "not auto-approved: ") {
				t.Fatalf("refusal %q", out.NotJudged)
			}
			if !tc.ran && out.Stdout != "" {
				t.Fatalf("the run went on after the refusal: %q", out.Stdout)
			}
		})
	}
}

// TestPinnedDirectory: the runner refuses a directory that was swapped
// after it was pinned, or a missing fingerprint.
func TestPinnedDirectory(t *testing.T) {
	// pin makes root/work and pins it.
	pin := func(t *testing.T) (root, dir string, req Request) {
		root = filepath.Join(t.TempDir(), "root")
		dir = filepath.Join(root, "work")
		must(t, os.MkdirAll(dir, 0o755))
		real, state, err := PinDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		return root, dir, Request{Command: "touch ran", Dir: real, DirState: state, Env: []string{"PATH=" + os.Getenv("PATH")}, Timeout: time.Minute,
			Judgement: shellguard.Judgement{By: shellguard.ByHuman}}
	}
	t.Run("missing fingerprint", func(t *testing.T) {
		_, _, req := pin(t)
		req.DirState = ""
		if _, err := Run(context.Background(), req); err == nil || !strings.Contains(err.Error(), "no fingerprint") {
			t.Fatalf("err = %v", err)
		}
	})
	swaps := []struct {
		name string
		swap func(t *testing.T, root, dir string)
	}{
		{"directory replaced", func(t *testing.T, root, dir string) {
			must(t, os.Rename(dir, dir+".old"))
			must(t, os.Mkdir(dir, 0o755))
		}},
		{"directory replaced by a link", func(t *testing.T, root, dir string) {
			must(t, os.Rename(dir, dir+".old"))
			must(t, os.Mkdir(dir+".elsewhere", 0o755))
			must(t, os.Symlink(dir+".elsewhere", dir))
		}},
		{"parent replaced by a link", func(t *testing.T, root, dir string) {
			other := t.TempDir()
			must(t, os.Mkdir(filepath.Join(other, "work"), 0o755))
			must(t, os.Rename(root, root+".old"))
			must(t, os.Symlink(other, root))
		}},
		{"parent replaced by a copy", func(t *testing.T, root, dir string) {
			must(t, os.Rename(root, root+".old"))
			must(t, os.MkdirAll(dir, 0o755))
		}},
	}
	for _, sw := range swaps {
		t.Run(sw.name, func(t *testing.T) {
			root, dir, req := pin(t)
			sw.swap(t, root, dir)
			_, err := Run(context.Background(), req)
			if !errors.Is(err, ErrDirChanged) && (err == nil || !strings.Contains(err.Error(), "changed since the command was approved")) {
				t.Fatalf("err = %v", err)
			}
			if _, err := os.Stat(filepath.Join(dir, "ran")); err == nil {
				t.Fatal("the command ran in the swapped directory")
			}
		})
	}
	t.Run("unchanged", func(t *testing.T) {
		_, dir, req := pin(t)
		mustRun(t, req)
		if _, err := os.Stat(filepath.Join(dir, "ran")); err != nil {
			t.Fatal(err)
		}
	})
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestRunnerRefusesBadRequests sends the runner broken frames directly:
// it answers with an error, never allocates what a header announces, and
// never runs anything.
func TestRunnerRefusesBadRequests(t *testing.T) {
	good := request(t, "touch ran")
	var frame bytes.Buffer
	if err := writeFrame(&frame, good, MaxRequestBytes); err != nil {
		t.Fatal(err)
	}
	header := func(n uint32) []byte { b := make([]byte, 4); binary.BigEndian.PutUint32(b, n); return b }
	cases := []struct {
		name, want string
		raw        []byte
	}{
		{"nothing", "no frame", nil},
		{"header cut short", "header cut short", []byte{0, 0}},
		{"huge length", "exceeds its size limit", header(0xFFFFFFFF)},
		{"body cut short", "cut short", append(header(100), `{"command":`...)},
		{"not JSON", "malformed frame", append(header(5), "hello"...)},
		{"unknown field", "malformed frame", append(header(14), `{"bogus":true}`...)},
		{"trailing data", "malformed frame", append(header(5), `{} {}`...)},
		{"cut mid-frame", "cut short", frame.Bytes()[:frame.Len()/2]},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, err := startRunner(true, view{})
			if err != nil {
				t.Fatal(err)
			}
			r.begin()
			_, _ = r.ctrl.Write(tc.raw)
			r.ctrl.Close()
			_, err = r.finish(context.Background(), good)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tc.want)
			}
			if _, err := os.Stat(filepath.Join(good.Dir, "ran")); err == nil {
				t.Fatal("a broken request ran")
			}
		})
	}
}

// TestResponseFrames: the parent's reading of the runner's answer.
func TestResponseFrames(t *testing.T) {
	var ok bytes.Buffer
	if err := writeFrame(&ok, response{ExitCode: 3}, maxResponseBytes); err != nil {
		t.Fatal(err)
	}
	big := make([]byte, 4+maxResponseBytes+1)
	binary.BigEndian.PutUint32(big, maxResponseBytes+1)
	cases := []struct {
		name string
		raw  []byte
		ok   bool
	}{
		{"whole", ok.Bytes(), true},
		{"empty (died before answering)", nil, false},
		{"cut short (died mid-message)", ok.Bytes()[:ok.Len()-2], false},
		{"trailing bytes", append(append([]byte{}, ok.Bytes()...), 'x'), false},
		{"too long", big, false},
		{"unknown field", append([]byte{0, 0, 0, 11}, `{"pwned":1}`...), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := &runner{resp: tc.raw}
			resp, err := r.response()
			if (err == nil) != tc.ok || (tc.ok && resp.ExitCode != 3) {
				t.Fatalf("response = %+v, %v", resp, err)
			}
		})
	}
}

func TestParseErrorAndOversizedCommand(t *testing.T) {
	if _, err := Run(context.Background(), request(t, "echo 'unterminated")); err == nil || !strings.Contains(err.Error(), "parse command") {
		t.Fatalf("err = %v", err)
	}
	req := request(t, "echo "+strings.Repeat("x", MaxRequestBytes))
	if _, err := Run(context.Background(), req); !errors.Is(err, errFrameTooLarge) {
		t.Fatalf("err = %v", err)
	}
}

// BenchmarkInProcess is `echo hi` interpreted in the calling process, as
// execute_command ran before it had a runner: the baseline for
// BenchmarkRunner in the same run.
func BenchmarkInProcess(b *testing.B) {
	req := request(b, "echo hi")
	for b.Loop() {
		var out, errb capped
		out.limit, errb.limit = OutputCap, OutputCap
		if r := interpret(context.Background(), req, &out, &errb); r.ExitCode != 0 || r.Error != "" {
			b.Fatal(r)
		}
	}
}

// BenchmarkRunner is `echo hi` through a runner process, cgroup included
// where this machine allows one.
func BenchmarkRunner(b *testing.B) {
	req := request(b, "echo hi")
	for b.Loop() {
		out, err := Run(context.Background(), req)
		if err != nil || out.Stdout != "hi" {
			b.Fatal(err, out)
		}
	}
}

// BenchmarkPool is `echo hi` on a pool's runner, started while the
// previous command ran.
func BenchmarkPool(b *testing.B) {
	req := request(b, "echo hi")
	var p Pool
	defer p.Close()
	for b.Loop() {
		out, err := p.Run(context.Background(), req)
		if err != nil || out.Stdout != "hi" {
			b.Fatal(err, out)
		}
	}
}

// BenchmarkAfterPause times one command after the pause an agent has
// between commands (the model's turn, 100 ms here), cold (Run) and with a
// runner waiting (Pool): the latency a user sees.
func BenchmarkAfterPause(b *testing.B) {
	req := request(b, "echo hi")
	var p Pool
	defer p.Close()
	for _, mode := range []struct {
		name string
		run  func(context.Context, Request) (Output, error)
	}{{"cold", Run}, {"pool", p.Run}} {
		b.Run(mode.name, func(b *testing.B) {
			for range b.N {
				b.StopTimer()
				time.Sleep(100 * time.Millisecond)
				b.StartTimer()
				out, err := mode.run(context.Background(), req)
				if err != nil || out.Stdout != "hi" {
					b.Fatal(err, out)
				}
			}
		})
	}
}

// TestPool: the next command runs on the runner started after the
// previous one; a runner that died while it waited is replaced; Close
// ends the waiting one.
func TestPool(t *testing.T) {
	var p Pool
	req := request(t, "echo $$")
	// $$ is the runner's pid as this process sees it only outside a PID
	// namespace; the view's part of the pool is checked below.
	req.Isolation = isolate.None
	first, err := p.Run(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	spare := func() int {
		p.starting.Wait()
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.spare == nil {
			t.Fatal("no runner waits after a command")
		}
		return p.spare.cmd.Process.Pid
	}
	pid := spare()
	second, err := p.Run(context.Background(), req)
	if err != nil || second.Stdout != strconv.Itoa(pid) || second.Stdout == first.Stdout {
		t.Fatalf("second command ran as %q, the waiting runner was %d (first %q): %v", second.Stdout, pid, first.Stdout, err)
	}
	// A waiting runner killed from outside is not used.
	dead := spare()
	must(t, syscall.Kill(dead, syscall.SIGKILL))
	waitGone := func(pid int) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for {
			st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
			if err != nil || strings.Contains(string(st), ") Z ") {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("runner %d still alive", pid)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	waitGone(dead)
	third, err := p.Run(context.Background(), req)
	if err != nil || third.Stdout == strconv.Itoa(dead) || third.Stdout == "" {
		t.Fatalf("third command: %+v, %v", third, err)
	}
	// A request for another view does not take the waiting runner.
	other := spare()
	req.Isolation, req.Hide = isolation(), []string{t.TempDir()}
	if _, err := p.Run(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	waitGone(other)
	if spare() == other {
		t.Fatal("a runner of another view was kept")
	}
	last := spare()
	p.Close()
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", last)); err == nil {
		t.Fatalf("Close left runner %d", last)
	}
}

// TestIdleRunnerTakesItsCgroup: a runner started ahead whose jazz goes
// away (its control pipe closes before any request) removes the cgroup
// made for it, so none is left behind, empty.
func TestIdleRunnerTakesItsCgroup(t *testing.T) {
	r, err := startRunner(true, view{})
	if err != nil {
		t.Fatal(err)
	}
	if r.cg == nil {
		r.discard()
		t.Skip("no cgroup here")
	}
	dir := r.cg.Dir()
	r.ctrl.Close()
	for _, f := range r.out {
		f.Close()
	}
	_ = r.cmd.Wait()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		_ = r.cg.Remove(context.Background())
		t.Fatalf("cgroup %s left behind: %v", dir, err)
	}
}

// TestIsolated: in the machine's isolation the command sees the hidden
// paths empty, the shell's death still says which signal, and what the
// command left ends with the namespace. Without isolation, hidden paths
// make Run refuse unless a person approved it; a view that cannot be
// built runs nothing.
func TestIsolated(t *testing.T) {
	mode := isolation()
	if mode == isolate.None {
		t.Skip("no isolation on this machine")
	}
	secretDir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(secretDir, "config.json"), []byte("sk-hidden-0123456789"), 0o600))
	req := request(t, "")
	req.Hide = []string{secretDir}
	link, marker := sleeper(t, req.Dir)
	req.Command = fmt.Sprintf("cat %q/config.json; ls -A %q; sh ./detach.sh %q 60 && env kill -TERM $$; sleep 5; echo after", secretDir, secretDir, link)
	out := mustRun(t, req)
	if strings.Contains(out.Stdout+out.Stderr, "sk-hidden") || !strings.Contains(out.Stderr, "No such file") {
		t.Fatalf("the command saw the hidden file: %+v", out)
	}
	if !out.ShellKilled || out.Signal != "SIGTERM" || out.ExitCode != 143 || strings.Contains(out.Stdout, "after") {
		t.Fatalf("want the shell killed by SIGTERM: %+v", out)
	}
	if left := markerProcs(t, marker); len(left) > 0 {
		t.Fatalf("processes outlived the command: %q", left)
	}

	req.Command = "echo ran"
	req.Isolation = isolate.None
	if out, err := Run(context.Background(), req); !errors.Is(err, ErrUnhidden) || out.Stdout != "" {
		t.Fatalf("unisolated with hidden paths: %+v, %v", out, err)
	}
	req.Unhidden = true
	if out := mustRun(t, req); out.Stdout != "ran" {
		t.Fatalf("a person approved it unhidden: %+v", out)
	}

	req.Isolation, req.Unhidden, req.Hide = mode, false, []string{"/"}
	if out, err := Run(context.Background(), req); err == nil || !strings.Contains(err.Error(), "will not hide /") || out.Stdout != "" {
		t.Fatalf("a view that cannot be built: %+v, %v", out, err)
	}
}

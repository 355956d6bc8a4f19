package shelltool

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/proctree"
	"github.com/jazz-run/jazz/shellguard"
	"github.com/jazz-run/jazz/tools"
)

// fixture is a working directory, a separate TMPDIR, and the pair.
type fixture struct {
	dir, tmp string
	env      *tools.Env
	propose  tools.Tool
	twin     tools.Tool
}

func newFixture(t testing.TB, extraEnv ...string) *fixture {
	t.Helper()
	root := t.TempDir()
	f := &fixture{dir: filepath.Join(root, "work"), tmp: filepath.Join(root, "tmp")}
	for _, d := range []string{f.dir, f.tmp} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	parent := append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + root, "TMPDIR=" + f.tmp}, extraEnv...)
	ts := Tools(Options{Environ: func() []string { return parent }})
	if len(ts) != 2 {
		t.Fatalf("Tools returned %d tools", len(ts))
	}
	f.propose, f.twin = ts[0], ts[1]
	f.env = &tools.Env{WorkDir: f.dir, Home: root}
	return f
}

func args(cmd string, more ...string) json.RawMessage {
	m := map[string]any{"command": cmd, "description": "test"}
	for i := 0; i+1 < len(more); i += 2 {
		m[more[i]] = more[i+1]
	}
	b, _ := json.Marshal(m)
	return b
}

// approve runs the propose half and returns the twin's arguments, as the
// gate would pass them on approval; a failed proposal is returned instead.
func (f *fixture) approve(t testing.TB, raw json.RawMessage) (json.RawMessage, *tools.Result) {
	t.Helper()
	res := f.propose.Handler(context.Background(), f.env, raw)
	if res.Approval == nil {
		return nil, &res
	}
	return res.Approval.ExecuteArgs, nil
}

// judged is ctx carrying the gate's judgement that by approved the
// command of execArgs, as the tool actor passes it to the twin.
func judged(t testing.TB, ctx context.Context, execArgs json.RawMessage, by shellguard.Approver, entries ...string) context.Context {
	t.Helper()
	var a Args
	if err := json.Unmarshal(execArgs, &a); err != nil {
		t.Fatal(err)
	}
	level := ""
	if by == shellguard.ByStatic || by == shellguard.ByClassifier {
		level = messages.LevelReadOnly
	}
	b, err := json.Marshal(shellguard.Judge(a.Command, by, entries, level))
	if err != nil {
		t.Fatal(err)
	}
	return tools.WithJudgement(ctx, b)
}

// exec proposes the call and runs the twin on the approved arguments, as
// a person approved them.
func (f *fixture) exec(t testing.TB, raw json.RawMessage) (tools.Result, Result) {
	t.Helper()
	execArgs, failed := f.approve(t, raw)
	if failed != nil {
		return *failed, Result{}
	}
	res := f.twin.Handler(judged(t, context.Background(), execArgs, shellguard.ByHuman), f.env, execArgs)
	v, _ := res.Value.(Result)
	return res, v
}

func TestDeclaration(t *testing.T) {
	f := newFixture(t)
	if f.propose.Name != "execute_command" || f.propose.Hidden || f.propose.Twin != "execute_execute_command" {
		t.Fatalf("propose = %+v", f.propose)
	}
	if f.twin.Name != "execute_execute_command" || !f.twin.Hidden {
		t.Fatalf("twin = %+v", f.twin)
	}
	if f.propose.Level != messages.LevelUnknown || f.twin.Level != messages.LevelUnknown {
		t.Fatal("level is not unknown")
	}
	if f.propose.EffectiveTimeout() != 3*time.Minute || f.twin.EffectiveTimeout() != 15*time.Minute {
		t.Fatalf("timeouts %v / %v", f.propose.EffectiveTimeout(), f.twin.EffectiveTimeout())
	}
	reg, err := tools.NewRegistry(f.propose, f.twin)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args string
		ok   bool
	}{
		{`{"command":"ls","description":"list"}`, true},
		{`{"command":"ls","description":"list","workingDirectory":"src","timeout":5}`, true},
		{`{"command":"","description":"x"}`, false},
		{`{"command":"ls"}`, false},
		{`{"command":"ls","description":"x","timeout":0}`, false},
		{`{"command":"ls","description":"x","timeout":1.5}`, false},
		{`{"command":"ls","description":"x","extra":1}`, false},
		{`{"command":1,"description":"x"}`, false},
	}
	for _, tc := range cases {
		t.Run(tc.args, func(t *testing.T) {
			err := reg.Validate("execute_command", json.RawMessage(tc.args))
			if (err == nil) != tc.ok {
				t.Fatalf("Validate = %v, want ok=%v", err, tc.ok)
			}
		})
	}
	// The twin takes only pinned arguments: what the propose half made.
	twinCases := []struct {
		args string
		ok   bool
	}{
		{`{"command":"ls","description":"list","workingDirectory":"/w","workingDirectoryState":"dir:x","timeout":5}`, true},
		{`{"command":"ls","description":"list"}`, false},
		{`{"command":"ls","description":"list","workingDirectory":"/w"}`, false},
		{`{"command":"ls","description":"list","workingDirectoryState":"dir:x"}`, false},
	}
	for _, tc := range twinCases {
		t.Run("twin "+tc.args, func(t *testing.T) {
			err := reg.Validate("execute_execute_command", json.RawMessage(tc.args))
			if (err == nil) != tc.ok {
				t.Fatalf("Validate = %v, want ok=%v", err, tc.ok)
			}
		})
	}
	if strings.Contains(string(f.propose.Schema), "workingDirectoryState") {
		t.Fatal("the model-visible schema offers workingDirectoryState")
	}
}

func TestPropose(t *testing.T) {
	f := newFixture(t)
	if err := os.Mkdir(filepath.Join(f.dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	res := f.propose.Handler(context.Background(), f.env, args("git status", "workingDirectory", "sub"))
	if res.Success || res.Approval == nil {
		t.Fatalf("want an approval request, got %+v", res)
	}
	if res.Error != "Command execution requires explicit user approval for security reasons." {
		t.Fatalf("error = %q", res.Error)
	}
	sub := filepath.Join(f.dir, "sub")
	want := "Command: git status\nDescription: test\nWorking Directory: " + sub + "\nTimeout: 900000ms\n\nThis command will be executed on your system. Only approve commands you trust."
	if res.Approval.Message != want {
		t.Fatalf("message:\n%s\nwant:\n%s", res.Approval.Message, want)
	}
	if res.Approval.ExecuteToolName != "execute_execute_command" {
		t.Fatalf("executeToolName = %q", res.Approval.ExecuteToolName)
	}
	var ea Args
	if err := json.Unmarshal(res.Approval.ExecuteArgs, &ea); err != nil || ea.Command != "git status" || ea.Timeout != 900000 || *ea.WorkingDirectory != sub || ea.WorkingDirectoryState == "" {
		t.Fatalf("executeArgs = %s (%v)", res.Approval.ExecuteArgs, err)
	}

	res = f.propose.Handler(context.Background(), f.env, args("ls", "description", "  "))
	if res.Approval != nil || res.Error != "description: description cannot be empty" {
		t.Fatalf("blank description: %+v", res)
	}
	res = f.propose.Handler(context.Background(), f.env, args("   "))
	if res.Approval != nil || res.Error != "Command cannot be empty" {
		t.Fatalf("blank command: %+v", res)
	}
	res = f.propose.Handler(context.Background(), f.env, json.RawMessage(`{"command":"ls","description":"d","timeout":5}`))
	if !strings.Contains(res.Approval.Message, "Working Directory: "+f.dir+"\nTimeout: 5ms") {
		t.Fatalf("default dir / timeout: %q", res.Approval.Message)
	}
	res = f.propose.Handler(context.Background(), f.env, args("sudo ls /"))
	if res.Approval != nil || !strings.HasPrefix(res.Error, "Command blocked by the built-in safety denylist: `sudo`") {
		t.Fatalf("blocked command: %+v", res)
	}
}

func TestExecuteRealCommands(t *testing.T) {
	f := newFixture(t, "OPENAI_API_KEY=sk-secret", "PAGER=less")
	if err := os.WriteFile(filepath.Join(f.dir, "script.sh"), []byte("echo \"script $1\"\nexit 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(f.dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, cmd, wd  string
		exit           int
		stdout, stderr string
	}{
		{"echo", "echo hello", "", 0, "hello", ""},
		{"printf", `printf '  a\tb\n\n'`, "", 0, "a\tb", ""},
		{"seq pipeline", "seq 10 | tail -n 2 | tr '\\n' ,", "", 0, "9,10,", ""},
		{"false", "false", "", 1, "", ""},
		{"stderr", "echo oops >&2; exit 4", "", 4, "", "oops"},
		{"sh script", "sh script.sh arg", "", 3, "script arg", ""},
		{"shell logic", "for i in 1 2 3; do if [ $i = 2 ]; then echo two; fi; done && x=$(echo sub) && echo $x", "", 0, "two\nsub", ""},
		{"working directory", "pwd", "sub", 0, filepath.Join(f.dir, "sub"), ""},
		{"empty stdin", "cat; wc -c", "", 0, "0", ""},
		{"sanitized env", `echo "$PAGER $GIT_EDITOR $GIT_TERMINAL_PROMPT ${OPENAI_API_KEY:-hidden}"`, "", 0, "cat false 0 hidden", ""},
		{"external sees env", `env | grep -c OPENAI; true`, "", 0, "0", ""},
		{"not found", "no-such-command-jz", "", 127, "", "no-such-command-jz"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			raw := args(tc.cmd)
			if tc.wd != "" {
				raw = args(tc.cmd, "workingDirectory", tc.wd)
			}
			res, v := f.exec(t, raw)
			if !res.Success {
				t.Fatalf("failed: %s", res.Error)
			}
			if v.ExitCode != tc.exit || v.Success != (tc.exit == 0) {
				t.Errorf("exit = %d success=%v, want %d", v.ExitCode, v.Success, tc.exit)
			}
			if v.Stdout != tc.stdout {
				t.Errorf("stdout = %q, want %q", v.Stdout, tc.stdout)
			}
			if !strings.Contains(v.Stderr, tc.stderr) {
				t.Errorf("stderr = %q, want it to contain %q", v.Stderr, tc.stderr)
			}
			if v.Command != tc.cmd {
				t.Errorf("command = %q", v.Command)
			}
		})
	}
	t.Run("missing working directory", func(t *testing.T) {
		res, _ := f.exec(t, args("ls", "workingDirectory", "nope"))
		if res.Success || !strings.HasPrefix(res.Error, "Path not found: "+filepath.Join(f.dir, "nope")) {
			t.Fatalf("%+v", res)
		}
	})
}

func TestExecuteOutputCap(t *testing.T) {
	f := newFixture(t)
	for _, stream := range []string{"stdout", "stderr"} {
		t.Run(stream, func(t *testing.T) {
			cmd := "seq 1 100000" // 588895 bytes
			if stream == "stderr" {
				cmd += " >&2"
			}
			res, v := f.exec(t, args(cmd))
			if !res.Success || !res.Truncated {
				t.Fatalf("success=%v truncated=%v err=%s", res.Success, res.Truncated, res.Error)
			}
			got := v.Stdout
			if stream == "stderr" {
				got = v.Stderr
			}
			marker := "\n[truncated: " + stream + " exceeded 262144 bytes; showing the first 262144 bytes. Narrow the command (path, range, head/tail/grep) if you need a different slice.]"
			body, ok := strings.CutSuffix(got, marker)
			if !ok {
				t.Fatalf("no marker at the end: %q", got[max(0, len(got)-200):])
			}
			if len(body) != OutputCap || !strings.HasPrefix(body, "1\n2\n3\n") {
				t.Fatalf("body has %d bytes", len(body))
			}
		})
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

// orphanScript starts sleepers three ways: a background job of the
// interpreter, a foreground program, and grandchildren of an external sh.
func orphanScript(t *testing.T, f *fixture) (cmd, marker string) {
	t.Helper()
	sleepBin, err := lookPath("sleep")
	if err != nil {
		t.Skip("no sleep binary")
	}
	marker = fmt.Sprintf("jzmarker%d", time.Now().UnixNano())
	link := filepath.Join(f.dir, "sleep-"+marker)
	if err := os.Symlink(sleepBin, link); err != nil {
		t.Fatal(err)
	}
	script := fmt.Sprintf("%q 30 &\n%q 30\n", link, link)
	if err := os.WriteFile(filepath.Join(f.dir, "kids.sh"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%q 30 & sh kids.sh & %q 30", link, link), marker
}

func TestExecuteTimeoutKillsEveryChild(t *testing.T) {
	f := newFixture(t)
	cmd, marker := orphanScript(t, f)
	res, _ := f.exec(t, json.RawMessage(fmt.Sprintf(`{"command":%q,"description":"d","timeout":300}`, cmd)))
	if res.Success || res.Error != "Command timed out after 300ms" {
		t.Fatalf("result = %+v", res)
	}
	waitNoProcs(t, marker)
}

func TestExecuteCancelKillsEveryChild(t *testing.T) {
	f := newFixture(t)
	cmd, marker := orphanScript(t, f)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan tools.Result, 1)
	execArgs, failed := f.approve(t, args(cmd))
	if failed != nil {
		t.Fatalf("propose: %+v", failed)
	}
	go func() { done <- f.twin.Handler(judged(t, ctx, execArgs, shellguard.ByHuman), f.env, execArgs) }()
	// Cancel once the sleepers are up.
	deadline := time.Now().Add(10 * time.Second)
	for len(markerProcs(t, marker)) < 4 {
		if time.Now().After(deadline) {
			t.Fatalf("children did not start: %q", markerProcs(t, marker))
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	res := <-done
	if res.Success || !strings.Contains(res.Error, "cancel") {
		t.Fatalf("result = %+v", res)
	}
	waitNoProcs(t, marker)
}

// waitNoProcs polls briefly: killed grandchildren are reaped by init.
func waitNoProcs(t *testing.T, marker string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		left := markerProcs(t, marker)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes survived: %q", left)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestExecuteRuntimeDenylist(t *testing.T) {
	cases := []struct{ name, cmd string }{
		{"variable command name", `x=rm; $x -rf "$VICTIM"`},
		{"quoted pieces", `r''m -r''f "$VICTIM"`},
		{"command substitution name", `$(printf rm) -rf "$VICTIM"`},
		{"function wrapper", `f() { "$@"; }; f rm -rf "$VICTIM"`},
		{"eval through a variable", `e=eval; $e 'rm -rf "$VICTIM"'`},
		{"sh -c through a variable", `s=sh; $s -c 'rm -rf "$VICTIM"'`},
		{"script on stdin", `echo 'rm -rf "$VICTIM"' | sh`},
		{"here-doc script", "sh <<EOF\nrm -rf $VICTIM\nEOF"},
		{"xargs", `echo "$VICTIM" | xargs rm -rf`},
		{"source a written file", `echo 'rm -rf "$VICTIM"' > s.sh; . ./s.sh`},
		{"base64", `$(echo cm0= | base64 -d) -rf "$VICTIM"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			victim := filepath.Join(f.dir, "victim")
			if err := os.WriteFile(victim, []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
			f.env.WorkDir = f.dir
			cmd := "export VICTIM=" + victim + "\n" + tc.cmd + "\necho after"
			res, v := f.exec(t, args(cmd))
			if res.Success {
				t.Errorf("ran: exit %d stdout %q stderr %q", v.ExitCode, v.Stdout, v.Stderr)
			}
			if !strings.HasPrefix(res.Error, "Command blocked by the built-in safety denylist: ") {
				t.Errorf("error = %q", res.Error)
			}
			if _, err := os.Stat(victim); err != nil {
				t.Fatalf("victim gone: %v", err)
			}
		})
	}
	t.Run("an expanded redirection a person approved", func(t *testing.T) {
		// What only a person may approve (a home dotfile), a person did:
		// the denylist still refuses the target expansion names.
		f := newFixture(t)
		res, _ := f.exec(t, args("mkdir -p ~/.ssh; f=~/.ssh/authorized_keys; echo key >> $f"))
		if res.Success || !strings.HasPrefix(res.Error, "Command blocked by the built-in safety denylist: ") || !strings.Contains(res.Error, "authorized_keys") {
			t.Fatalf("%+v", res)
		}
		if _, err := os.Stat(filepath.Join(f.env.Home, ".ssh", "authorized_keys")); err == nil {
			t.Fatal("authorized_keys was written")
		}
	})
	t.Run("temp carve-out still works", func(t *testing.T) {
		f := newFixture(t)
		res, v := f.exec(t, args(`tmp="$(mktemp -d)"; touch "$tmp/f"; rm -rf "$tmp"; [ ! -e "$tmp" ] && echo gone`))
		if !res.Success || v.Stdout != "gone" {
			t.Fatalf("res=%+v v=%+v", res, v)
		}
	})
}

func BenchmarkExecuteCommandEcho(b *testing.B) {
	f := newFixture(b)
	raw, failed := f.approve(b, args("echo hello"))
	if failed != nil {
		b.Fatal(failed.Error)
	}
	ctx := judged(b, context.Background(), raw, shellguard.ByHuman)
	for b.Loop() {
		res := f.twin.Handler(ctx, f.env, raw)
		if !res.Success {
			b.Fatal(res.Error)
		}
	}
}

// BenchmarkExecuteCommandEchoAfterPause is the same call after the pause
// an agent has between commands (the model's turn, 100 ms here, not
// timed): the latency a user sees, with the next runner started during
// the pause.
func BenchmarkExecuteCommandEchoAfterPause(b *testing.B) {
	f := newFixture(b)
	raw, failed := f.approve(b, args("echo hello"))
	if failed != nil {
		b.Fatal(failed.Error)
	}
	ctx := judged(b, context.Background(), raw, shellguard.ByHuman)
	for range b.N {
		b.StopTimer()
		time.Sleep(100 * time.Millisecond)
		b.StartTimer()
		if res := f.twin.Handler(ctx, f.env, raw); !res.Success {
			b.Fatal(res.Error)
		}
	}
}

func lookPath(name string) (string, error) {
	for _, d := range filepath.SplitList(os.Getenv("PATH")) {
		p := filepath.Join(d, name)
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return filepath.EvalSymlinks(p)
		}
	}
	return "", os.ErrNotExist
}

// TestPinnedWorkingDirectory: the approval shows the directory resolved,
// the twin runs exactly there whatever `cd` did since, and refuses when
// the directory was swapped after approval.
func TestPinnedWorkingDirectory(t *testing.T) {
	f := newFixture(t)
	real := filepath.Join(f.dir, "real")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, filepath.Join(f.dir, "link")); err != nil {
		t.Fatal(err)
	}
	res := f.propose.Handler(context.Background(), f.env, args("pwd", "workingDirectory", "link"))
	if res.Approval == nil {
		t.Fatalf("%+v", res)
	}
	if want := "Working Directory: " + real + " (resolved from " + filepath.Join(f.dir, "link") + ")\n"; !strings.Contains(res.Approval.Message, want) {
		t.Fatalf("message %q lacks %q", res.Approval.Message, want)
	}
	var ea Args
	if err := json.Unmarshal(res.Approval.ExecuteArgs, &ea); err != nil || *ea.WorkingDirectory != real || !strings.HasPrefix(ea.WorkingDirectoryState, "dir:") {
		t.Fatalf("executeArgs %s", res.Approval.ExecuteArgs)
	}
	// A cd after the approval (another call of the batch) moves nothing.
	f.env.WorkDir = f.tmp
	human := judged(t, context.Background(), res.Approval.ExecuteArgs, shellguard.ByHuman)
	out := f.twin.Handler(human, f.env, res.Approval.ExecuteArgs)
	if v, _ := out.Value.(Result); !out.Success || v.Stdout != real || v.WorkingDirectory != real {
		t.Fatalf("ran as %+v", out)
	}
	// Swapping the directory after approval is refused.
	if err := os.Rename(real, real+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	out = f.twin.Handler(human, f.env, res.Approval.ExecuteArgs)
	if out.Success || !strings.Contains(out.Error, real+" changed since the command was approved") {
		t.Fatalf("swapped directory: %+v", out)
	}
	// Arguments without the propose half's pin are refused.
	out = f.twin.Handler(judged(t, context.Background(), args("pwd"), shellguard.ByHuman), f.env, args("pwd"))
	if out.Success || out.Error != notPinned {
		t.Fatalf("unpinned: %+v", out)
	}
}

// TestExecuteReportsKillsAndSignals: what the runner reports reaches the
// model: leftovers killed, the shell's signal death, the memory limit.
func TestExecuteReportsKillsAndSignals(t *testing.T) {
	f := newFixture(t)
	res, v := f.exec(t, args("sleep 30 & echo bg; sleep 0.2"))
	if !res.Success || v.KilledProcesses != 1 || !strings.Contains(v.Notice, "1 process(es) still running when the command ended") {
		t.Fatalf("leftover: %+v", res)
	}
	res, v = f.exec(t, args("env kill -HUP $$"))
	if res.Success || v.Signal != "SIGHUP" || v.Success || v.ExitCode != 129 || !strings.Contains(res.Error, "Command killed by signal SIGHUP") {
		t.Fatalf("signal: %+v", res)
	}
	ts := Tools(Options{Environ: func() []string { return []string{"PATH=" + os.Getenv("PATH")} }, ShellMemoryLimit: 32 << 20})
	f.propose, f.twin = ts[0], ts[1]
	res, v = f.exec(t, args("x=0123456789abcdef; for i in $(seq 40); do x=$x$x; done; echo survived"))
	if res.Success || v.Success || !strings.Contains(res.Error, "exceeded its memory limit of 32 MiB") || strings.Contains(v.Stdout, "survived") {
		t.Fatalf("memory: %+v", res)
	}
}

// TestExecuteChecksTheJudgement: the twin runs only a command the gate
// judged, byte for byte, and the runner re-checks every expanded command
// against the judgement: what expansion turns into another command than
// the one approved automatically does not run.
func TestExecuteChecksTheJudgement(t *testing.T) {
	f := newFixture(t)
	run := func(t *testing.T, cmd string, ctxFor func(execArgs json.RawMessage) context.Context) tools.Result {
		t.Helper()
		execArgs, failed := f.approve(t, args(cmd))
		if failed != nil {
			t.Fatalf("propose: %+v", failed)
		}
		return f.twin.Handler(ctxFor(execArgs), f.env, execArgs)
	}
	static := func(execArgs json.RawMessage) context.Context {
		return judged(t, context.Background(), execArgs, shellguard.ByStatic)
	}
	t.Run("no judgement", func(t *testing.T) {
		res := run(t, "touch made", func(json.RawMessage) context.Context { return context.Background() })
		if res.Success || !strings.HasPrefix(res.Error, "not auto-approved: no approval judgement") {
			t.Fatalf("%+v", res)
		}
	})
	t.Run("judgement of another command", func(t *testing.T) {
		res := run(t, "touch made", func(json.RawMessage) context.Context {
			b, _ := json.Marshal(shellguard.Judge("ls", shellguard.ByHuman, nil, ""))
			return tools.WithJudgement(context.Background(), b)
		})
		if res.Success || !strings.Contains(res.Error, "differs from the one the gate judged") {
			t.Fatalf("%+v", res)
		}
	})
	t.Run("unreadable judgement", func(t *testing.T) {
		res := run(t, "touch made", func(json.RawMessage) context.Context {
			return tools.WithJudgement(context.Background(), json.RawMessage(`{"command":`))
		})
		if res.Success || !strings.Contains(res.Error, "judgement is unreadable") {
			t.Fatalf("%+v", res)
		}
	})
	if _, err := os.Stat(filepath.Join(f.dir, "made")); err == nil {
		t.Fatal("a command without a matching judgement ran")
	}
	t.Run("expansion turns a judged argv into another", func(t *testing.T) {
		res := run(t, "sort {-o,f} /dev/null", static)
		if res.Success || !strings.HasPrefix(res.Error, "not auto-approved: ") || !strings.Contains(res.Error, "sort -o f") {
			t.Fatalf("%+v", res)
		}
		if _, err := os.Stat(filepath.Join(f.dir, "f")); err == nil {
			t.Fatal("sort -o f ran")
		}
	})
	t.Run("the judged argv runs", func(t *testing.T) {
		res := run(t, "echo judged", static)
		if v, _ := res.Value.(Result); !res.Success || v.Stdout != "judged" {
			t.Fatalf("%+v", res)
		}
	})
	t.Run("a person's approval is not narrowed", func(t *testing.T) {
		res := run(t, "x=echo; $x person", func(execArgs json.RawMessage) context.Context {
			return judged(t, context.Background(), execArgs, shellguard.ByHuman)
		})
		if v, _ := res.Value.(Result); !res.Success || v.Stdout != "person" {
			t.Fatalf("%+v", res)
		}
	})
}

// The model writes the command and the description: a line break in
// either (LF, CR or CRLF) continues its field, indented, and cannot add a
// line that reads as another field of the message.
func TestMessageFieldsCannotBeForged(t *testing.T) {
	f := newFixture(t)
	for _, nl := range []string{"\n", "\r", "\r\n"} {
		forged := "x" + nl + "Working Directory: /forged" + nl + "Timeout: 1ms"
		res := f.propose.Handler(context.Background(), f.env, args("printf '%s' '"+forged+"'", "description", forged))
		if res.Approval == nil {
			t.Fatalf("%q: no approval request: %+v", nl, res)
		}
		lines := strings.FieldsFunc(res.Approval.Message, func(r rune) bool { return r == '\n' || r == '\r' })
		var dirs, timeouts []string
		for _, l := range lines {
			if v, ok := strings.CutPrefix(l, "Working Directory: "); ok {
				dirs = append(dirs, v)
			}
			if v, ok := strings.CutPrefix(l, "Timeout: "); ok {
				timeouts = append(timeouts, v)
			}
		}
		if len(dirs) != 1 || dirs[0] != f.dir || len(timeouts) != 1 {
			t.Fatalf("%q: fields read from the message: dirs %q timeouts %q\n%s", nl, dirs, timeouts, res.Approval.Message)
		}
	}
}

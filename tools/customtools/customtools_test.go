package customtools

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jazz-run/jazz/config"
	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/secrets"
	"github.com/jazz-run/jazz/tools"
)

func decl(t *testing.T, raw string) config.CustomTool {
	t.Helper()
	ds, err := config.ParseCustomToolsJSON(json.RawMessage("["+raw+"]"), "customTools")
	if err != nil {
		t.Fatal(err)
	}
	return ds[0]
}

func command(t *testing.T, argv []string, timeoutMs int) config.CustomTool {
	b, _ := json.Marshal(argv)
	return decl(t, fmt.Sprintf(`{"name":"cmd","description":"d","handler":{"type":"command","command":%s,"timeoutMs":%d}}`, b, timeoutMs))
}

func env(dir string) *tools.Env { return &tools.Env{WorkDir: dir} }

func call(t *testing.T, tl tools.Tool, dir, args string) tools.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return tl.Handler(ctx, env(dir), json.RawMessage(args))
}

func TestRecord(t *testing.T) {
	tl := Tool(decl(t, `{"name":"note","description":"Record a note.","handler":{"type":"record","response":"Noted."}}`), Options{})
	if tl.Level != messages.LevelReadOnly || tl.Gated() {
		t.Fatalf("record tool level %q", tl.Level)
	}
	if r := call(t, tl, t.TempDir(), `{"x":1}`); !r.Success || r.Value != "Noted." {
		t.Fatalf("record: %+v", r)
	}
}

func TestCommandRunsWithoutAShell(t *testing.T) {
	dir := t.TempDir()
	tl := Tool(command(t, []string{"cat"}, 5000), Options{Environ: func() []string { return []string{"PATH=/usr/bin:/bin"} }})
	if tl.Level != messages.LevelHighRisk || !tl.Gated() || tl.Timeout != 5*time.Second+ExecutorSlack {
		t.Fatalf("command tool: level %q timeout %v", tl.Level, tl.Timeout)
	}
	// The validated arguments arrive as JSON on stdin; a shell
	// metacharacter in them is just a byte.
	args := `{"q":"$(touch pwned); rm -rf /"}`
	r := call(t, tl, dir, args)
	if !r.Success || r.Value != args+"\n" {
		t.Fatalf("cat: %+v", r)
	}
	if _, err := os.Stat(filepath.Join(dir, "pwned")); err == nil {
		t.Fatal("a shell ran the arguments")
	}
}

func TestCommandFailures(t *testing.T) {
	dir := t.TempDir()
	fail := Tool(command(t, []string{"sh", "-c", "echo partial; echo 'bad input' >&2; exit 4"}, 5000), Options{})
	if r := call(t, fail, dir, `{}`); r.Success || r.Error != "Command exited with code 4: bad input" {
		t.Fatalf("exit 4: %+v", r)
	}
	quiet := Tool(command(t, []string{"false"}, 5000), Options{})
	if r := call(t, quiet, dir, `{}`); r.Error != "Command exited with code 1" {
		t.Fatalf("false: %+v", r)
	}
	missing := Tool(command(t, []string{"no-such-tool-jz"}, 5000), Options{})
	if r := call(t, missing, dir, `{}`); !strings.HasPrefix(r.Error, "Command could not start: program \"no-such-tool-jz\" is not on the PATH") {
		t.Fatalf("missing: %+v", r)
	}
}

func TestCommandTimeoutKillsTheTree(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "survived")
	// A background child that would write the marker after the timeout.
	tl := Tool(command(t, []string{"sh", "-c", "(sleep 1; touch " + marker + ") & sleep 30"}, 200), Options{})
	start := time.Now()
	r := call(t, tl, dir, `{}`)
	if r.Success || r.Error != "Command timed out after 200ms" {
		t.Fatalf("timeout: %+v", r)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("took %v", took)
	}
	time.Sleep(1500 * time.Millisecond)
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a process of the timed-out command lived on")
	}
}

func TestCommandOutputCap(t *testing.T) {
	tl := Tool(command(t, []string{"sh", "-c", "head -c 100000 /dev/zero | tr '\\0' x; head -c 100000 /dev/zero >&2; exit 0"}, 10000), Options{})
	r := call(t, tl, t.TempDir(), `{}`)
	s, _ := r.Value.(string)
	if !r.Success || len(s) != OutputCap || !r.Truncated || strings.Contains(s, "truncated") {
		t.Fatalf("capped output: success %v, %d bytes, truncated %v", r.Success, len(s), r.Truncated)
	}
	small := Tool(command(t, []string{"printf", "  padded  "}, 5000), Options{})
	if r := call(t, small, t.TempDir(), `{}`); r.Value != "  padded  " || r.Truncated {
		t.Fatalf("untrimmed: %+v", r)
	}
}

// Secrets stay out of a command's environment unless the declaring
// agent's envAllowlist names them; SSH_ variables never get in; nor does a
// variable of innocent name and shape holding a secret the run knows.
func TestCommandEnvScrub(t *testing.T) {
	environ := func() []string {
		return []string{"PATH=/usr/bin:/bin", "HOME=/home/u", "GITHUB_TOKEN=ghp_1", "ALLOWED_API_KEY=k2", "PLAIN=p", "SSH_AUTH_SOCK=/s", "DB_URL=postgres://u:hunter2@db/x",
			"FOO=plainknownvalue0123"}
	}
	tl := Tool(command(t, []string{"env"}, 5000), Options{Environ: environ, EnvAllowlist: []string{"ALLOWED_API_KEY", "SSH_AUTH_SOCK"}})
	e := env(t.TempDir())
	e.Secrets = secrets.NewSet([]string{"plainknownvalue0123"})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r := tl.Handler(ctx, e, json.RawMessage(`{}`))
	out, _ := r.Value.(string)
	for _, want := range []string{"PLAIN=p", "ALLOWED_API_KEY=k2", "GIT_TERMINAL_PROMPT=0", "HOME=/home/u"} {
		if !strings.Contains(out, want+"\n") {
			t.Errorf("env lacks %s:\n%s", want, out)
		}
	}
	for _, leak := range []string{"GITHUB_TOKEN", "SSH_AUTH_SOCK", "hunter2", "FOO="} {
		if strings.Contains(out, leak) {
			t.Errorf("env leaks %s:\n%s", leak, out)
		}
	}
}

// A relative program is found from where jazz started, not from the
// directory the model cd'ed to (where it may have written a look-alike).
func TestRelativeProgramResolvesFromBaseDir(t *testing.T) {
	base, moved := t.TempDir(), t.TempDir()
	for dir, out := range map[string]string{base: "trusted", moved: "planted"} {
		if err := os.WriteFile(filepath.Join(dir, "tool.sh"), []byte("#!/bin/sh\necho "+out+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	tl := Tool(command(t, []string{"./tool.sh"}, 5000), Options{BaseDir: base})
	if r := call(t, tl, moved, `{}`); r.Value != "trusted\n" {
		t.Fatalf("ran %+v", r)
	}
}

// TestCommandRunsWhereJazzStarted: wherever the model has cd'ed (a
// directory holding a Makefile, a script or a file of the same name as
// the base's), a command tool works in the directory jazz started in:
// its pwd is that directory and what it reads by a relative path is that
// directory's. It used to run in the agent's working directory, where the
// declared program found the model's choice of files.
func TestCommandRunsWhereJazzStarted(t *testing.T) {
	base := t.TempDir()
	if err := os.WriteFile(filepath.Join(base, "target"), []byte("trusted"), 0o644); err != nil {
		t.Fatal(err)
	}
	pwd := Tool(command(t, []string{"pwd"}, 5000), Options{BaseDir: base})
	read := Tool(command(t, []string{"cat", "target"}, 5000), Options{BaseDir: base})
	rng := rand.New(rand.NewPCG(9, 9))
	for i := range 8 {
		moved := t.TempDir()
		if rng.IntN(2) == 0 {
			moved = filepath.Join(moved, strings.Repeat("sub/", 1+rng.IntN(3)))
			if err := os.MkdirAll(moved, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(moved, "target"), []byte(fmt.Sprintf("planted %d", i)), 0o644); err != nil {
			t.Fatal(err)
		}
		if r := call(t, pwd, moved, `{}`); !r.Success || strings.TrimSpace(r.Value.(string)) != base {
			t.Fatalf("pwd from %s = %+v, want %s", moved, r, base)
		}
		if r := call(t, read, moved, `{}`); r.Value != "trusted" {
			t.Fatalf("cat target from %s = %+v, want the base's", moved, r)
		}
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	unset := Tool(command(t, []string{"pwd"}, 5000), Options{})
	if r := call(t, unset, base, `{}`); strings.TrimSpace(fmt.Sprint(r.Value)) != wd {
		t.Fatalf("pwd without a BaseDir = %+v, want jazz's own %s", r, wd)
	}
}

// TestCommandApprovalShowsWhatRuns: the person deciding a command tool's
// call sees the argv the declaration runs, where, and the stdin it gets,
// each escaped, not only the tool's name: before, the approval was
// "About to run deploy with arguments: {…}", which says nothing of the
// program a name like deploy or lint starts.
func TestCommandApprovalShowsWhatRuns(t *testing.T) {
	dir := t.TempDir()
	tl := Tool(decl(t, `{"name":"lint","description":"Lints.","handler":{"type":"command","command":["./scripts/x","--fix","a b\u202e"],"timeoutMs":7000}}`), Options{BaseDir: dir})
	msg, err := tl.ApprovalMessage(json.RawMessage(` {"path":"src"} `))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"./scripts/x" "--fix" "a b\u202e"`, `Working Directory: "` + dir + `"`, "Timeout: 7000ms", `{"path":"src"}`} {
		if !strings.Contains(msg, want) {
			t.Errorf("the approval lacks %s:\n%s", want, msg)
		}
	}
	if strings.ContainsRune(msg, '\u202e') {
		t.Errorf("the approval carries a raw bidi control:\n%q", msg)
	}
}

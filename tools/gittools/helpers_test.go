package gittools

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jazz-run/jazz/isolate"
	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/tools"
)

// world is a temporary HOME with a trusted global git config, a
// registry of the git tools, and an agent Env whose policy a test sets.
type world struct {
	t       *testing.T
	home    string
	policy  string
	environ []string
	reg     *tools.Registry
	env     *tools.Env
}

func newWorld(t *testing.T) *world {
	t.Helper()
	home := t.TempDir()
	w := &world{t: t, home: home}
	w.environ = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "GIT_CONFIG_NOSYSTEM=1"}
	writeFile(t, filepath.Join(home, ".gitconfig"), "[user]\n\tname = Tester\n\temail = tester@example.com\n[init]\n\tdefaultBranch = main\n")
	reg, err := tools.NewRegistry(Tools(Options{Environ: func() []string { return w.environ }})...)
	if err != nil {
		t.Fatal(err)
	}
	w.reg = reg
	w.env = &tools.Env{
		Home:     home,
		JazzHome: filepath.Join(home, ".jazz"),
		WorkDir:  home,
		Policy:   func() string { return w.policy },
	}
	return w
}

// withoutSandbox makes the world's git children run outside isolate's
// namespaces, for the race sweeps: what they prove (the twin stages,
// commits, checks out or deletes exactly what was approved, or nothing)
// does not depend on the view git runs in, which shows it the same files,
// and a race-built test binary as the trampoline of every git call was
// three quarters of their time (63 s against 18 s for the git_add sweep
// with -short). isolate_test.go and the high-risk sweeps keep it.
func (w *world) withoutSandbox() {
	w.t.Helper()
	reg, err := tools.NewRegistry(Tools(Options{Environ: func() []string { return w.environ }, Isolator: isolate.Fixed(isolate.None, "a race sweep runs git unsandboxed")})...)
	if err != nil {
		w.t.Fatal(err)
	}
	w.reg = reg
}

// copyRepo makes to a fresh copy of the repository at from (cp -a, so
// modes, links and times are kept): each step of a race sweep starts
// from the same tree the approval was given for.
func copyRepo(t *testing.T, from, to string) {
	t.Helper()
	if err := os.RemoveAll(to); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cp", "-a", from, to).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// git runs the real git for the test's own set-up, never through the tools.
func (w *world) git(dir string, args ...string) string {
	w.t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(append([]string(nil), w.environ...), "GIT_TERMINAL_PROMPT=0")
	out, err := cmd.CombinedOutput()
	if err != nil {
		w.t.Fatalf("git %s in %s: %v\n%s", strings.Join(args, " "), dir, err, out)
	}
	return strings.TrimSpace(string(out))
}

// repo makes a repository with one commit of README.
func (w *world) repo(name string) string {
	w.t.Helper()
	dir := filepath.Join(w.home, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		w.t.Fatal(err)
	}
	w.git(dir, "init", "-q")
	writeFile(w.t, filepath.Join(dir, "README"), "hello\n")
	w.git(dir, "add", "README")
	w.git(dir, "commit", "-q", "-m", "first")
	return dir
}

// call runs a visible tool with args (validated as the tool actor would).
func (w *world) call(name string, args any) tools.Result {
	w.t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		w.t.Fatal(err)
	}
	if err := w.reg.Validate(name, raw); err != nil {
		w.t.Fatalf("%s: arguments %s do not validate: %v", name, raw, err)
	}
	t, ok := w.reg.Lookup(name)
	if !ok {
		w.t.Fatalf("no tool %s", name)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return t.Handler(ctx, w.env, raw)
}

// approve runs the twin with exactly the arguments the propose half
// returned, as the gate would after an approval.
func (w *world) approve(r tools.Result) tools.Result {
	w.t.Helper()
	if r.Approval == nil {
		w.t.Fatalf("no approval request: %+v", r)
	}
	twin, ok := w.reg.Lookup(r.Approval.ExecuteToolName)
	if !ok || !twin.Hidden {
		w.t.Fatalf("twin %s not registered as hidden", r.Approval.ExecuteToolName)
	}
	if err := w.reg.Validate(twin.Name, r.Approval.ExecuteArgs); err != nil {
		w.t.Fatalf("twin arguments do not validate: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return twin.Handler(ctx, w.env, r.Approval.ExecuteArgs)
}

// propose calls a pair and insists on an approval request.
func (w *world) propose(name string, args any) tools.Result {
	w.t.Helper()
	r := w.call(name, args)
	if r.Approval == nil {
		w.t.Fatalf("%s: want an approval request, got success=%v error=%q value=%+v", name, r.Success, r.Error, r.Value)
	}
	return r
}

func ok(t *testing.T, r tools.Result) {
	t.Helper()
	if !r.Success {
		t.Fatalf("want success, got error %q (value %+v)", r.Error, r.Value)
	}
}

func asMap(t *testing.T, v any) map[string]any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func setPolicy(w *world, p string) { w.policy = p }

var _ = messages.PolicyHighRisk

// statOf identifies a file's version: inode, size and modification time.
func statOf(t *testing.T, path string) string {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%v %d", fi.ModTime().UnixNano(), fi.Size())
}

package readtools

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jazz-run/jazz/secrets"
	"github.com/jazz-run/jazz/tools"
)

// plantedVar carries a secret in this test process's own environment from
// its start, so /proc/self/environ holds it (a later os.Setenv would not
// show there). TestMain re-executes the test binary with it set.
const plantedVar = "JAZZ_READTOOLS_TEST_API_KEY"

func TestMain(m *testing.M) {
	if os.Getenv(plantedVar) == "" {
		exe, err := os.Executable()
		if err == nil {
			env := append(os.Environ(), plantedVar+"=sk-planted"+randHex(12))
			err = syscall.Exec(exe, os.Args, env) // returns only on failure
		}
		fmt.Fprintln(os.Stderr, "readtools tests: re-exec with a planted secret:", err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// secretWorld is a user with a JAZZ_HOME full of secrets, a config file
// elsewhere, a project (the cwd) full of links into them, a child process
// whose environment holds a key, and, outside the project, a control file
// holding every secret as plain text.
type secretWorld struct {
	env     *tools.Env
	reg     *tools.Registry
	project string
	control string
	home    string // JAZZ_HOME
	secrets map[string]string
	child   int
	cfgFD   int
}

func newSecretWorld(t *testing.T) *secretWorld {
	t.Helper()
	if _, err := os.Stat("/proc/self/environ"); err != nil {
		t.Skip("no /proc")
	}
	base := t.TempDir()
	user := filepath.Join(base, "user")
	w := &secretWorld{home: filepath.Join(user, ".jazz"), project: filepath.Join(base, "project"), control: filepath.Join(t.TempDir(), "control", "all.txt")}
	w.secrets = map[string]string{
		"env":   os.Getenv(plantedVar),
		"cfg":   "sk-cfg" + randHex(12),
		"agent": "sk-agent" + randHex(12),
		"seed":  "SU" + strings.ToUpper(strings.NewReplacer("0", "A", "1", "B", "8", "C", "9", "D").Replace(randHex(28))),
		"extra": "sk-extra" + randHex(12),
		"child": "sk-child" + randHex(12),
	}
	extra := filepath.Join(base, "etc", "jazz.json")
	cfg := filepath.Join(w.home, "config.json")
	writeFile(t, cfg, `{"llm":{"openai":{"api_key":"`+w.secrets["cfg"]+`"}}}`)
	writeFile(t, filepath.Join(w.home, "agents", "a.json"), `{"config":{"llmApiKeys":{"openai":"`+w.secrets["agent"]+`"}}}`)
	writeFile(t, filepath.Join(w.home, "approvals", "approver.creds"), "-----BEGIN USER NKEY SEED-----\n"+w.secrets["seed"]+"\n------END USER NKEY SEED------\n")
	writeFile(t, extra, `{"llm":{"anthropic":{"api_key":"`+w.secrets["extra"]+`"}}}`)
	var all strings.Builder
	for _, v := range w.secrets {
		all.WriteString(v + "\n")
	}
	writeFile(t, w.control, all.String())
	writeFile(t, filepath.Join(w.project, "README.md"), "# project\n")

	child := exec.Command("sleep", "60")
	child.Env = []string{"CHILD_API_KEY=" + w.secrets["child"]}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = child.Process.Kill(); _ = child.Wait() })
	w.child = child.Process.Pid
	f, err := os.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	w.cfgFD = int(f.Fd())

	link := func(target, name string) {
		if err := os.Symlink(target, filepath.Join(w.project, name)); err != nil {
			t.Fatal(err)
		}
	}
	link("/proc/self/environ", "env")
	link("/proc/self", "self")
	link(strings.Repeat("../", 12)+"proc/self/environ", "relenv")
	link("/dev/fd", "fds")
	link(w.home, "jazzhome")
	link(cfg, "cfg.json")
	link(extra, "extra.json")
	link(filepath.Join("/proc", strconv.Itoa(w.child)), "childproc")
	if err := os.Link(cfg, filepath.Join(w.project, "hard.json")); err != nil {
		t.Fatal(err)
	}

	reg, err := tools.NewRegistry(Tools()...)
	if err != nil {
		t.Fatal(err)
	}
	w.reg = reg
	w.env = &tools.Env{
		JazzHome: w.home, Home: user, WorkDir: w.project,
		Secrets: secrets.Collect(context.Background(), secrets.Sources{Environ: os.Environ(), Home: w.home, Files: []string{extra}}),
	}
	// The control: the planted values really are where the tricks point,
	// so a tool that reached them would show them and this test would fail.
	if b, _ := os.ReadFile("/proc/self/environ"); !strings.Contains(string(b), w.secrets["env"]) {
		t.Fatal("control: /proc/self/environ does not hold the planted secret")
	}
	if b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", w.child)); !strings.Contains(string(b), w.secrets["child"]) {
		t.Fatal("control: the child's environ does not hold its secret")
	}
	return w
}

// call runs one tool as the registry would and returns all it said.
func (w *secretWorld) call(t *testing.T, name string, args map[string]any) string {
	t.Helper()
	raw, _ := json.Marshal(args)
	if err := w.reg.Validate(name, raw); err != nil {
		t.Fatalf("%s %s: %v", name, raw, err)
	}
	tl, _ := w.reg.Lookup(name)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r := tl.Handler(ctx, w.env, raw)
	body, err := json.Marshal(r.Value)
	if err != nil {
		t.Fatal(err)
	}
	return string(body) + "\n" + r.Error
}

// leaked names the secrets found in out.
func (w *secretWorld) leaked(out string) []string {
	var found []string
	for name, v := range w.secrets {
		if strings.Contains(out, v) {
			found = append(found, name)
		}
	}
	return found
}

// readCalls are the calls of every read tool on one path.
func readCalls(p string) []struct {
	tool string
	args map[string]any
} {
	type call = struct {
		tool string
		args map[string]any
	}
	return []call{
		{"read_file", map[string]any{"path": p}},
		{"read_file", map[string]any{"path": p, "startLine": 1, "endLine": 100}},
		{"head", map[string]any{"path": p, "lines": 100}},
		{"tail", map[string]any{"path": p, "lines": 100}},
		{"stat", map[string]any{"path": p}},
		{"cd", map[string]any{"path": p}},
		{"ls", map[string]any{"path": p, "showHidden": true, "recursive": true}},
		{"find", map[string]any{"path": p, "includeHidden": true}},
		{"glob", map[string]any{"path": p, "includeHidden": true, "name": "*"}},
		{"grep", map[string]any{"pattern": "re:.", "path": p}},
		{"grep", map[string]any{"pattern": "re:.", "path": p, "recursive": false}},
		{"grep", map[string]any{"pattern": "sk-", "path": p, "outputMode": "files"}},
		{"grep", map[string]any{"pattern": "sk-", "path": p, "outputMode": "count"}},
	}
}

// TestSecretsDifferential tries every read tool on every spelling of a
// path into jazz's own secrets, and on the control file that holds the
// same values as plain text. The control must show them (the test can
// see a leak); no trick may.
func TestSecretsDifferential(t *testing.T) { forEachBackend(t, secretsDifferential) }

func secretsDifferential(t *testing.T) {
	w := newSecretWorld(t)
	pid, child, fd := strconv.Itoa(os.Getpid()), strconv.Itoa(w.child), strconv.Itoa(w.cfgFD)
	tricks := []string{
		"/proc/self/environ", "/proc/self/environ/", "/proc/./self//environ", `"/proc/self/environ"`, `/proc/self/env\iron`,
		"/proc/" + pid + "/environ", "/proc/" + child + "/environ", "/proc/thread-self/environ",
		"/proc/self/task/" + pid + "/environ", "/proc/" + strconv.Itoa(os.Getppid()) + "/environ",
		"/proc/self/mem", "/proc/self/cmdline", "/proc/self/fd/" + fd, "/dev/fd/" + fd, "/dev/stdin",
		"/proc/self/root/proc/self/environ", "/proc/self", "/proc/" + child, "/proc",
		"env", "./env", "relenv", "self/environ", "self/fd/" + fd, "fds/" + fd, "childproc/environ",
		"jazzhome", "jazzhome/", "jazzhome/config.json", "cfg.json", "hard.json", "extra.json",
		"../user/.jazz/config.json", "~/.jazz/config.json", "~/.jazz", "~/.jazz/", "~/.jazz/agents/a.json",
		"~/.jazz/approvals/approver.creds", "~/.jazz/agents/../config.json", "~/.JAZZ/config.json",
		"/PROC/SELF/ENVIRON", w.home, w.home + "/./", filepath.Dir(w.home), filepath.Dir(filepath.Dir(w.home)),
		".", "..",
	}
	for _, p := range tricks {
		for _, c := range readCalls(p) {
			if out := w.call(t, c.tool, c.args); len(w.leaked(out)) > 0 {
				t.Errorf("%s %v leaked %v:\n%.400s", c.tool, c.args, w.leaked(out), out)
			}
			w.env.WorkDir = w.project // undo a cd
		}
	}
	// The control shows everything, through every content tool.
	for _, c := range readCalls(w.control)[:4] {
		if out := w.call(t, c.tool, c.args); len(w.leaked(out)) != len(w.secrets) {
			t.Errorf("control %s leaked only %v", c.tool, w.leaked(out))
		}
	}
	if out := w.call(t, "grep", map[string]any{"pattern": "sk-", "path": filepath.Dir(w.control), "outputMode": "count"}); !strings.Contains(out, `"count":`) {
		t.Errorf("control grep count found nothing: %s", out)
	}
}

// A search whose root holds JAZZ_HOME (the user's home, with it hidden or
// not) finds what is beside it and nothing in it; not even a count of
// matches in a protected file (a hard link in the project) comes back.
func TestSecretsGrepAroundHome(t *testing.T) { forEachBackend(t, secretsGrepAroundHome) }

func secretsGrepAroundHome(t *testing.T) {
	w := newSecretWorld(t)
	writeFile(t, filepath.Join(filepath.Dir(w.home), "notes.txt"), "sk- is how keys start\n")
	for _, mode := range []string{"content", "files", "count"} {
		out := w.call(t, "grep", map[string]any{"pattern": "sk-", "path": "~", "outputMode": mode})
		if !strings.Contains(out, "notes.txt") {
			t.Errorf("%s: the file beside JAZZ_HOME was not searched: %s", mode, out)
		}
		if strings.Contains(out, ".jazz") || len(w.leaked(out)) > 0 {
			t.Errorf("%s: JAZZ_HOME was searched: %s", mode, out)
		}
		out = w.call(t, "grep", map[string]any{"pattern": w.secrets["cfg"][:10], "path": ".", "outputMode": mode})
		if strings.Contains(out, "hard.json") {
			t.Errorf("%s: a hard link of config.json answered the pattern: %s", mode, out)
		}
	}
}

// The backstop: a copy of a key in an ordinary file is readable (the
// Guard cannot know it), and the run's Redactor takes it out of the
// result, as the tool actor does before anything leaves.
func TestSecretsRedactorBackstop(t *testing.T) {
	w := newSecretWorld(t)
	out := w.call(t, "read_file", map[string]any{"path": w.control})
	red := string(w.env.Secrets.RedactJSON(json.RawMessage(out[:strings.LastIndexByte(out, '\n')])))
	for _, name := range []string{"env", "cfg", "agent", "seed", "extra"} {
		if strings.Contains(red, w.secrets[name]) {
			t.Errorf("redacted result still holds the %s secret: %s", name, red)
		}
	}
	if !strings.Contains(red, secrets.Placeholder) {
		t.Errorf("nothing was redacted: %s", red)
	}
}

// forEachBackend runs fn with each grep backend: ripgrep when installed,
// and GNU grep with rg hidden from PATH.
func forEachBackend(t *testing.T, fn func(t *testing.T)) {
	if _, err := exec.LookPath("rg"); err == nil {
		t.Run("ripgrep", fn)
	}
	t.Run("grep", func(t *testing.T) {
		bin := t.TempDir()
		for _, name := range []string{"grep", "sleep"} {
			p, err := exec.LookPath(name)
			if err != nil {
				t.Skipf("no %s: %v", name, err)
			}
			if err := os.Symlink(p, filepath.Join(bin, name)); err != nil {
				t.Fatal(err)
			}
		}
		t.Setenv("PATH", bin)
		fn(t)
	})
}

func writeFile(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

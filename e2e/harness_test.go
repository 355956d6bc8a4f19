package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jazz-run/jazz/e2e/chatserver"
	"github.com/jazz-run/jazz/mcpclient/mcptest"
)

// jazzBin is the binary built once by TestMain.
var jazzBin string

func TestMain(m *testing.M) {
	// The MCP tests start this test binary as their stdio server.
	if mcptest.Main() {
		return
	}
	os.Exit(buildAndRun(m))
}

// buildAndRun builds the binary once for every test of the package (the
// internal e2e files find it through JAZZ_E2E_BIN), unless JAZZ_E2E_BIN
// already names one.
func buildAndRun(m *testing.M) int {
	if p := os.Getenv("JAZZ_E2E_BIN"); p != "" {
		jazzBin = p
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "jazz-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: temp dir:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	root, err := moduleRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	jazzBin = filepath.Join(dir, "jazz")
	build := exec.Command("go", "build", "-o", jazzBin, "./cmd/jazz")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: go build ./cmd/jazz: %v\n%s", err, out)
		return 1
	}
	if err := os.Setenv("JAZZ_E2E_BIN", jazzBin); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	return m.Run()
}

func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", errors.New("not inside the jazz module")
	}
	return filepath.Dir(mod), nil
}

// world is one test's JAZZ_HOME, working directory and provider URL.
type world struct {
	t       *testing.T
	home    string
	cwd     string
	baseURL string
	env     []string
}

// newWorld makes a fresh JAZZ_HOME whose config turns retries off (so a
// failing provider fails fast) and points the openai provider at baseURL.
func newWorld(t *testing.T, baseURL string) *world {
	t.Helper()
	w := &world{t: t, home: t.TempDir(), cwd: t.TempDir(), baseURL: baseURL}
	w.writeConfig(`{"maxRetries": 0}`)
	return w
}

func (w *world) writeConfig(doc string) {
	w.t.Helper()
	if err := os.WriteFile(filepath.Join(w.home, "config.json"), []byte(doc), 0o600); err != nil {
		w.t.Fatal(err)
	}
}

// file writes a file in the working directory and returns its path.
func (w *world) file(name, content string) string {
	w.t.Helper()
	p := filepath.Join(w.cwd, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		w.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		w.t.Fatal(err)
	}
	return p
}

// environ is a clean environment: nothing of the developer's leaks in.
func (w *world) environ() []string {
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + w.home,
		"JAZZ_HOME=" + w.home,
		"OPENAI_BASE_URL=" + w.baseURL,
		"OPENAI_API_KEY=test",
		"NO_COLOR=1",
		"JAZZ_OFFLINE=1", // no catalog fetch: tests reach 127.0.0.1 only
	}
	return append(env, w.env...)
}

// agent creates an agent on openai/gpt-4o-mini with exactly these tools.
func (w *world) agent(name string, tools ...string) string {
	w.t.Helper()
	r := w.exec("", "agent", "create", "--name", name, "--model", "openai/gpt-4o-mini", "--tools", strings.Join(tools, ","))
	if r.code != 0 {
		w.t.Fatalf("agent create: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	return strings.TrimSpace(r.stdout)
}

// result is one finished jazz process.
type result struct {
	stdout, stderr string
	code           int
	took           time.Duration
}

// exec runs the built binary with stdin (empty = an already-ended pipe).
func (w *world) exec(stdin string, args ...string) result {
	w.t.Helper()
	return runJazz(w.t, w.cwd, w.environ(), stdin, args...)
}

// runJazz runs the built binary in dir with exactly env, and fails the
// test if it died of a signal or printed a panic: whatever a test feeds
// it, jazz must exit 0 or 1 on its own.
func runJazz(t testing.TB, dir string, env []string, stdin string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, jazzBin, args...)
	cmd.Dir = dir
	cmd.Env = env
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String(), took: time.Since(start)}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
		if ee.ProcessState != nil && !ee.Exited() {
			t.Fatalf("jazz %v died of a signal (%v)\nstderr: %s", args, ee.ProcessState, r.stderr)
		}
	default:
		t.Fatalf("run jazz %v: %v", args, err)
	}
	if strings.Contains(r.stderr, "panic:") || strings.Contains(r.stderr, "goroutine ") && strings.Contains(r.stderr, "[running]") {
		t.Fatalf("jazz %v panicked:\n%s", args, r.stderr)
	}
	return r
}

// envelope is the --json object, success or failure.
type envelope struct {
	OK         *bool   `json:"ok"`
	Answer     string  `json:"answer"`
	Error      string  `json:"error"`
	CostUSD    float64 `json:"costUSD"`
	CostKnown  bool    `json:"costKnown"`
	TokenUsage struct {
		PromptTokens     int `json:"promptTokens"`
		CompletionTokens int `json:"completionTokens"`
		TotalTokens      int `json:"totalTokens"`
	} `json:"tokenUsage"`
	ToolCalls []struct {
		ID        string `json:"id"`
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"toolCalls"`
}

// oneObject asserts the --json contract: stdout is exactly one line that
// is exactly one JSON object with an "ok" field, and returns it.
func oneObject(t *testing.T, r result) envelope {
	t.Helper()
	if !strings.HasSuffix(r.stdout, "\n") || strings.Count(r.stdout, "\n") != 1 {
		t.Fatalf("stdout is not exactly one line:\n%q\nstderr: %s", r.stdout, r.stderr)
	}
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	var raw map[string]json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		t.Fatalf("stdout is not a JSON object: %v\n%q\nstderr: %s", err, r.stdout, r.stderr)
	}
	if dec.More() {
		t.Fatalf("stdout holds more than one JSON value: %q", r.stdout)
	}
	var e envelope
	if err := json.Unmarshal([]byte(r.stdout), &e); err != nil || e.OK == nil {
		t.Fatalf("stdout is not an envelope (err %v): %q", err, r.stdout)
	}
	return e
}

// wantFailure asserts exit 1 with one failure envelope whose error
// contains want, and returns it.
func wantFailure(t *testing.T, r result, want string) envelope {
	t.Helper()
	e := oneObject(t, r)
	if r.code != 1 || *e.OK {
		t.Fatalf("want exit 1 and ok:false, got exit %d ok:%v\nstdout: %s\nstderr: %s", r.code, *e.OK, r.stdout, r.stderr)
	}
	if !strings.Contains(e.Error, want) {
		t.Fatalf("error %q does not contain %q\nstderr: %s", e.Error, want, r.stderr)
	}
	return e
}

// wantSuccess asserts exit 0 and ok:true and returns the envelope.
func wantSuccess(t *testing.T, r result) envelope {
	t.Helper()
	e := oneObject(t, r)
	if r.code != 0 || !*e.OK {
		t.Fatalf("want exit 0 and ok:true, got exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	return e
}

// answer is a scripted final answer.
func answer(text string) chatserver.Turn { return chatserver.Turn{Text: text} }

// calls is a scripted turn of tool calls.
func calls(cs ...chatserver.Call) chatserver.Turn { return chatserver.Turn{Calls: cs} }

func readFile(id, path string) chatserver.Call {
	return chatserver.Call{ID: id, Name: "read_file", Arguments: chatserver.JSONArgs(map[string]string{"path": path})}
}

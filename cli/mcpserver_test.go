package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/jazz-run/jazz/mcpclient/mcptest"
)

// Environment of the reporting server (reportingServer).
const (
	// reportEnv names the file the server writes its report to.
	reportEnv = "JAZZ_CLITEST_REPORT"
	// probeEnv names a file the server tries to read.
	probeEnv = "JAZZ_CLITEST_PROBE"
	// thenEnv is the mcptest mode it serves in after reporting.
	thenEnv = "JAZZ_CLITEST_THEN"
)

// serverReport is what a server started by jazz saw of the machine.
type serverReport struct {
	Env []string `json:"env"`
	Cwd string   `json:"cwd"`
	// Probe is the content of the probeEnv file, or the error reading it.
	Probe    string `json:"probe"`
	ProbeErr string `json:"probeErr"`
}

// reportingServer, when reportEnv is set, writes what this process sees
// (its environment, working directory, whether it can read the probe
// file), starts a child that sleeps (so reaping can be checked), then
// serves as mcptest in thenEnv's mode (normal by default). It returns
// false when reportEnv is unset.
func reportingServer() bool {
	out := os.Getenv(reportEnv)
	if out == "" {
		return false
	}
	r := serverReport{Env: os.Environ()}
	r.Cwd, _ = os.Getwd()
	if b, err := os.ReadFile(os.Getenv(probeEnv)); err != nil {
		r.ProbeErr = err.Error()
	} else {
		r.Probe = string(b)
	}
	b, _ := json.Marshal(r)
	if err := os.WriteFile(out, b, 0o600); err != nil {
		fmt.Fprintln(os.Stderr, "reporting server:", err)
		os.Exit(1)
	}
	// The grandchild carries the server's arguments (a test's marker),
	// so the test finds it in /proc.
	child := exec.Command(os.Args[0], os.Args[1:]...)
	child.Env = []string{mcptest.ServerEnv + "=" + mcptest.ModeSleeper}
	_ = child.Start()
	mode := os.Getenv(thenEnv)
	if mode == "" {
		mode = mcptest.ModeNormal
	}
	_ = os.Unsetenv(reportEnv)
	_ = os.Setenv(mcptest.ServerEnv, mode)
	mcptest.Main()
	os.Exit(0)
	return true
}

// marked lists the pids of processes whose command line holds marker.
func marked(t *testing.T, marker string) []string {
	t.Helper()
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatalf("read /proc: %v", err)
	}
	var out []string
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline"))
		if err != nil || !bytes.Contains(b, []byte(marker)) {
			continue
		}
		// A zombie has an empty command line; one still listed is alive.
		out = append(out, d.Name())
	}
	return out
}

// awaitGone waits (bounded) until no process holds marker.
func awaitGone(t *testing.T, marker string, bound time.Duration) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for {
		left := marked(t, marker)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes of the server are still running %v after jazz exited: %v", bound, left)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// jazzWorld is a JAZZ_HOME, HOME and working directory of one test,
// and the environment jazz runs with there.
type jazzWorld struct {
	t               *testing.T
	home, jhome, wd string
	out             string // a directory for reports, outside JAZZ_HOME
	env             []string
}

func newJazzWorld(t *testing.T) *jazzWorld {
	t.Helper()
	root := t.TempDir()
	w := &jazzWorld{t: t, home: filepath.Join(root, "user"), jhome: filepath.Join(root, "user", "jazzhome"),
		wd: filepath.Join(root, "work"), out: filepath.Join(root, "out")}
	for _, d := range []string{w.home, w.jhome, w.wd, w.out} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	w.env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + w.home, "JAZZ_HOME=" + w.jhome, "NO_COLOR=1"}
	return w
}

// jazz runs the jazz binary (this test binary, by testscript's PATH) in
// w.wd, bounded, and returns its stdout, stderr and exit code.
func (w *jazzWorld) jazz(bound time.Duration, args ...string) (string, string, int) {
	w.t.Helper()
	path, err := exec.LookPath("jazz")
	if err != nil {
		w.t.Fatalf("no jazz on PATH: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Dir, cmd.Env = w.wd, w.env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = time.Second
	err = cmd.Run()
	if ctx.Err() != nil {
		w.t.Fatalf("jazz %s did not end within %v: %s", strings.Join(args, " "), bound, stderr.String())
	}
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		w.t.Fatalf("jazz %s: %v", strings.Join(args, " "), err)
	}
	return stdout.String(), stderr.String(), code
}

// addServer defines an MCP server running this test binary with env and
// a marker argument, through `jazz mcp add`.
func (w *jazzWorld) addServer(name, marker string, extra map[string]any) {
	w.t.Helper()
	exe, err := os.Executable()
	if err != nil {
		w.t.Fatal(err)
	}
	def := map[string]any{"command": exe, "args": []string{marker}}
	for k, v := range extra {
		def[k] = v
	}
	b, _ := json.Marshal(map[string]any{name: def})
	if _, stderr, code := w.jazz(30*time.Second, "mcp", "add", string(b)); code != 0 {
		w.t.Fatalf("jazz mcp add: exit %d: %s", code, stderr)
	}
}

func linuxOnly(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
}

// TestMCPToolsStartsTheServerAsARunDoes: `jazz mcp tools` starts a
// server the way a run does. The server does not get a variable holding
// one of jazz's secrets under a harmless name (the run's known values),
// nor a provider key; it cannot read a file in JAZZ_HOME (the run's
// isolation); it starts outside the working directory until the user
// trusts that project, and in it then; and it and the
// child it spawned are gone when jazz exits (process group, cgroup,
// reaper).
func TestMCPToolsStartsTheServerAsARunDoes(t *testing.T) {
	linuxOnly(t)
	w := newJazzWorld(t)
	const secret = "clitest-value-9f3a1c77e2"
	probe := filepath.Join(w.jhome, "probe-secret")
	if err := os.WriteFile(probe, []byte("the contents of JAZZ_HOME"), 0o600); err != nil {
		t.Fatal(err)
	}
	w.env = append(w.env, "OPENAI_API_KEY="+secret, "CLITEST_COPY="+secret, "CLITEST_PLAIN=plain-ok")
	report := filepath.Join(w.out, "report.json")
	marker := fmt.Sprintf("clitest-marker-%d-%d", os.Getpid(), time.Now().UnixNano())
	w.addServer("rep", marker, map[string]any{"env": map[string]string{reportEnv: report, probeEnv: probe}})

	stdout, stderr, code := w.jazz(60*time.Second, "mcp", "tools", "rep")
	if code != 0 {
		t.Fatalf("jazz mcp tools: exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "mcp_rep_echo\t") {
		t.Errorf("the listing lacks mcp_rep_echo: %s", stdout)
	}
	awaitGone(t, marker, 10*time.Second)

	b, err := os.ReadFile(report)
	if err != nil {
		t.Fatalf("the server wrote no report: %v", err)
	}
	var r serverReport
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	env := strings.Join(r.Env, "\n")
	if strings.Contains(env, secret) {
		t.Errorf("the server got a secret of jazz's in its environment:\n%s", env)
	}
	if !strings.Contains(env, "CLITEST_PLAIN=plain-ok") {
		t.Errorf("the server did not get jazz's plain variables (the check above proves nothing):\n%s", env)
	}
	if r.ProbeErr == "" {
		t.Errorf("the server read %s in JAZZ_HOME: %q", probe, r.Probe)
	}
	// The working directory is a project the user has not trusted: the
	// user's server starts outside it, in the home, as a run's does.
	if r.Cwd != w.home {
		t.Errorf("the server started in %s, not the user's home %s (the project %s is not trusted)", r.Cwd, w.home, w.wd)
	}

	// Trusted, the project is where it starts.
	if err := os.MkdirAll(filepath.Join(w.wd, ".jazz"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(w.wd, ".jazz", "config.json"), []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := w.jazz(30*time.Second, "trust"); code != 0 {
		t.Fatalf("jazz trust: exit %d: %s", code, stderr)
	}
	if _, stderr, code := w.jazz(60*time.Second, "mcp", "tools", "rep"); code != 0 {
		t.Fatalf("jazz mcp tools in a trusted project: exit %d: %s", code, stderr)
	}
	awaitGone(t, marker, 10*time.Second)
	if b, err = os.ReadFile(report); err != nil {
		t.Fatal(err)
	}
	r = serverReport{}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if r.Cwd != w.wd {
		t.Errorf("in a trusted project the server started in %s, not jazz's working directory %s", r.Cwd, w.wd)
	}
}

// TestMCPToolsBoundsAHangingServer: a server that never answers
// initialize makes `jazz mcp tools` fail at the server's connect
// timeout, saying so, and leaves no process behind.
func TestMCPToolsBoundsAHangingServer(t *testing.T) {
	linuxOnly(t)
	w := newJazzWorld(t)
	report := filepath.Join(w.out, "report.json")
	marker := fmt.Sprintf("clitest-hang-%d-%d", os.Getpid(), time.Now().UnixNano())
	w.addServer("hang", marker, map[string]any{"connectTimeoutMs": 500,
		"env": map[string]string{reportEnv: report, probeEnv: "/nonexistent", thenEnv: mcptest.ModeHangInit}})
	start := time.Now()
	_, stderr, code := w.jazz(60*time.Second, "mcp", "tools", "hang")
	took := time.Since(start)
	if code != 1 {
		t.Fatalf("jazz mcp tools on a hanging server: exit %d, want 1: %s", code, stderr)
	}
	if !strings.Contains(stderr, "did not finish connecting within 500ms") {
		t.Errorf("stderr does not say the server timed out: %s", stderr)
	}
	if took > 20*time.Second {
		t.Errorf("jazz mcp tools took %v on a server with a 500ms connect timeout", took)
	}
	if _, err := os.Stat(report); err != nil {
		t.Fatalf("the hanging server never started (the test proves nothing): %v", err)
	}
	awaitGone(t, marker, 10*time.Second)
}

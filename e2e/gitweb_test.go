package e2e

import (
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// gitIn runs the test's own git (never through jazz) in dir.
func gitIn(t *testing.T, e *hlEnv, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + e.user, "GIT_CONFIG_NOSYSTEM=1"}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// gitRepo makes the working directory a repository with one commit and a
// change to commit.
func gitRepo(t *testing.T, e *hlEnv) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(e.user, ".gitconfig"), []byte("[user]\n\tname = E2E\n\temail = e2e@example.com\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitIn(t, e, e.cwd, "init", "-q")
	e.writeFile("README", "one\n")
	gitIn(t, e, e.cwd, "add", "README")
	gitIn(t, e, e.cwd, "commit", "-q", "-m", "first")
	e.writeFile("README", "one\ntwo\n")
}

func callThenResult(name string, args map[string]any) map[string]any {
	return map[string]any{"turns": []any{
		map[string]any{"toolCalls": []any{map[string]any{"name": name, "arguments": args}}},
		map[string]any{"text": "RESULT {{lastToolResult}}"},
	}}
}

// TestGitCommitThroughTheBinary: git_commit is a pair. Unattended with no
// policy it is declined and nothing is committed; allowed by
// --auto-approve-tools, the twin commits what the preview showed.
func TestGitCommitThroughTheBinary(t *testing.T) {
	t.Parallel()
	e := hlNewEnv(t)
	gitRepo(t, e)
	id := e.replayAgent("committer", callThenResult("git_commit", map[string]any{"message": "e2e commit", "all": true}), "git_commit", "git_status")

	r := e.run(hlRunOpts{args: []string{"run", "--agent", id, "--json", "commit it"}})
	env := r.envelope(t)
	if len(env.Declined) != 1 || env.Declined[0].Name != "git_commit" {
		t.Fatalf("want git_commit declined, got %+v\nstderr:\n%s", env, r.stderr)
	}
	if got := gitIn(t, e, e.cwd, "log", "-1", "--format=%s"); got != "first" {
		t.Fatalf("a declined commit was made: HEAD is %q", got)
	}

	r = e.run(hlRunOpts{args: []string{"run", "--agent", id, "--json", "--auto-approve-tools", "git_commit", "commit it"}})
	env = r.envelope(t)
	if r.code != 0 || !*env.OK || !strings.Contains(env.Answer, `"commitHash"`) {
		t.Fatalf("exit %d, envelope %+v\nstderr:\n%s", r.code, env, r.stderr)
	}
	if got := gitIn(t, e, e.cwd, "log", "-1", "--format=%s"); got != "e2e commit" {
		t.Fatalf("HEAD is %q", got)
	}
	if !strings.Contains(env.Answer, gitIn(t, e, e.cwd, "rev-parse", "HEAD")) {
		t.Errorf("the answer does not name the new commit: %s", env.Answer)
	}
}

// TestHostileRepositoryThroughTheBinary: a repository whose .git/config
// sets core.fsmonitor and core.pager to a canary. Below high-risk the git
// tools refuse and the canary never runs.
func TestHostileRepositoryThroughTheBinary(t *testing.T) {
	t.Parallel()
	e := hlNewEnv(t)
	gitRepo(t, e)
	marker := filepath.Join(t.TempDir(), "ran")
	canary := filepath.Join(t.TempDir(), "canary.sh")
	if err := os.WriteFile(canary, []byte("#!/bin/sh\necho \"$0 $*\" >> '"+marker+"'\nexec cat\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	gitIn(t, e, e.cwd, "config", "core.fsmonitor", canary)
	gitIn(t, e, e.cwd, "config", "core.pager", canary)
	id := e.replayAgent("looker", callThenResult("git_status", map[string]any{}), "git_status")

	for _, policy := range []string{"read-only", "low-risk"} {
		r := e.run(hlRunOpts{args: []string{"run", "--agent", id, "--json", "--approval-policy", policy, "look"}})
		env := r.envelope(t)
		if !strings.Contains(env.Answer, "Refused:") || !strings.Contains(env.Answer, "core.fsmonitor") {
			t.Fatalf("policy %s: want a refusal, got %q\nstderr:\n%s", policy, env.Answer, r.stderr)
		}
	}
	if _, err := os.Stat(marker); err == nil {
		b, _ := os.ReadFile(marker)
		t.Fatalf("the canary ran:\n%s", b)
	}
	r := e.run(hlRunOpts{args: []string{"run", "--agent", id, "--json", "--approval-policy", "high-risk", "look"}})
	if env := r.envelope(t); !strings.Contains(env.Answer, `"rawStatus"`) || !strings.Contains(env.Answer, "M README") {
		t.Fatalf("high-risk: %q", env.Answer)
	}
}

// TestWebFetchThroughTheBinary: a server on 127.0.0.1 is refused unless
// JAZZ_NET_ALLOW (the user's environment) allows it.
func TestWebFetchThroughTheBinary(t *testing.T) {
	t.Parallel()
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, "<html><head><title>Local page</title><script>alert(1)</script></head><body><p>hello from the test server</p></body></html>")
	}))
	defer srv.Close()
	e := hlNewEnv(t)
	id := e.replayAgent("fetcher", callThenResult("web_fetch", map[string]any{"url": srv.URL + "/"}), "web_fetch")

	r := e.run(hlRunOpts{args: []string{"run", "--agent", id, "--json", "fetch"}})
	if env := r.envelope(t); !strings.Contains(env.Answer, "refused to connect to 127.0.0.1") {
		t.Fatalf("default: %q\nstderr:\n%s", env.Answer, r.stderr)
	}
	if hits.Load() != 0 {
		t.Fatal("the refused server was reached")
	}
	r = e.run(hlRunOpts{args: []string{"run", "--agent", id, "--json", "fetch"}, env: []string{"JAZZ_NET_ALLOW=127.0.0.1"}})
	env := r.envelope(t)
	if !strings.Contains(env.Answer, "hello from the test server") || !strings.Contains(env.Answer, "Local page") || strings.Contains(env.Answer, "alert") {
		t.Fatalf("allowed: %q\nstderr:\n%s", env.Answer, r.stderr)
	}
}

// TestAnthropicThroughTheBinary: anthropic/<model> speaks the Messages
// API (ANTHROPIC_BASE_URL, x-api-key), and the envelope prices the cache
// reads and writes the server reported at their own rates.
func TestAnthropicThroughTheBinary(t *testing.T) {
	t.Parallel()
	var seen atomic.Value
	var streamed atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen.Store(r.URL.Path + " " + r.Header.Get("X-Api-Key") + " " + r.Header.Get("Anthropic-Version"))
		var req struct{ Stream bool }
		_ = json.NewDecoder(r.Body).Decode(&req)
		if req.Stream {
			streamed.Add(1)
		}
		if !req.Stream {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","stop_reason":"end_turn",
"content":[{"type":"text","text":"Hello from Claude."}],
"usage":{"input_tokens":100,"cache_creation_input_tokens":2000,"cache_read_input_tokens":10000,"output_tokens":40}}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for _, ev := range []string{
			`{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"claude-sonnet-4-5","usage":{"input_tokens":100,"cache_creation_input_tokens":2000,"cache_read_input_tokens":10000,"output_tokens":1}}}`,
			`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
			`{"type":"ping"}`,
			`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello from Claude."}}`,
			`{"type":"content_block_stop","index":0}`,
			`{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":40}}`,
			`{"type":"message_stop"}`,
		} {
			var probe struct{ Type string }
			_ = json.Unmarshal([]byte(ev), &probe)
			io.WriteString(w, "event: "+probe.Type+"\ndata: "+ev+"\n\n")
		}
	}))
	defer srv.Close()
	e := hlNewEnv(t)
	e.writeConfig(map[string]any{"maxRetries": 0})
	id := e.agent("claude", "anthropic/claude-sonnet-4-5")
	for _, mode := range []string{"--no-stream", "--stream"} {
		r := e.run(hlRunOpts{args: []string{"run", "--agent", id, "--json", mode, "hi"},
			env: []string{"ANTHROPIC_API_KEY=sk-ant-e2e", "ANTHROPIC_BASE_URL=" + srv.URL}})
		checkAnthropicRun(t, r, &seen)
	}
	if streamed.Load() != 1 {
		t.Errorf("%d of the 2 runs streamed, want 1", streamed.Load())
	}
}

func checkAnthropicRun(t *testing.T, r hlResult, seen *atomic.Value) {
	t.Helper()
	env := r.envelope(t)
	if r.code != 0 || env.Answer != "Hello from Claude." {
		t.Fatalf("exit %d, envelope %+v\nstderr:\n%s", r.code, env, r.stderr)
	}
	if got := seen.Load(); got != "/v1/messages sk-ant-e2e 2023-06-01" {
		t.Errorf("the server saw %v", got)
	}
	if env.TokenUsage == nil || env.TokenUsage.PromptTokens != 12100 || env.TokenUsage.CompletionTokens != 40 {
		t.Errorf("usage %+v", env.TokenUsage)
	}
	want := (100*3.0 + 10000*0.3 + 2000*3.75 + 40*15.0) / 1e6
	if env.CostKnown == nil || !*env.CostKnown || env.CostUSD == nil || math.Abs(*env.CostUSD-want) > 1e-9 {
		t.Errorf("cost %v (known %v), want %v", *env.CostUSD, env.CostKnown, want)
	}
}

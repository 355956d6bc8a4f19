package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestHeadlessSeedBridge spawns jazz exactly as the seed's bridge does:
// prompt on stdin, --json, --conversation, --approval-policy low-risk,
// --timeout, and parses stdout.
func TestHeadlessSeedBridge(t *testing.T) {
	t.Parallel()
	e := hlNewEnv(t)
	chat := hlNewChat(t, func(n int, req hlChatReq) hlReply {
		return hlReply{Content: "4", Prompt: 10, Completion: 5}
	})
	e.openAIAgent(chat, "assistant", true, nil, "read_file")
	r := e.run(hlRunOpts{
		args:  []string{"run", "--json", "--agent", "assistant", "--conversation", "4815162342", "--approval-policy", "low-risk", "--timeout", "300000"},
		stdin: "what is 2+2?",
	})
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	env := r.envelope(t)
	if !*env.OK || env.Answer != "4" {
		t.Fatalf("envelope = %s", r.stdout)
	}
	// (10×1 + 5×2) / 1e6 at the configured price.
	if *env.CostUSD != 0.00002 || env.CostKnown == nil || !*env.CostKnown {
		t.Errorf("cost = %v known = %v, want 0.00002 true", *env.CostUSD, env.CostKnown)
	}
	if env.TokenUsage == nil || env.TokenUsage.TotalTokens != 15 {
		t.Errorf("tokenUsage = %+v", env.TokenUsage)
	}
	if env.ToolCalls == nil || !strings.Contains(r.stdout, `"toolCalls":[]`) {
		t.Errorf("toolCalls must be present as []: %s", r.stdout)
	}
	if !strings.Contains(r.stderr, "◉ assistant") || !strings.Contains(r.stderr, "✔ completed") {
		t.Errorf("stderr lacks header/footer:\n%s", r.stderr)
	}
	reqs := chat.requests()
	if len(reqs) != 1 || reqs[0].Stream {
		t.Errorf("want one batch request (stdout is a pipe), got %d stream=%v", len(reqs), len(reqs) > 0 && reqs[0].Stream)
	}
	if got := reqs[0].userTexts(); len(got) != 1 || got[0] != "what is 2+2?" {
		t.Errorf("prompt from stdin = %q", got)
	}
	if _, err := os.Stat(filepath.Join(e.home, "history")); err != nil {
		t.Errorf("conversation not saved: %v", err)
	}
}

func TestHeadlessCostKnown(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		priced    bool
		wantKnown bool
	}{{"priced", true, true}, {"unpriced", false, false}} {
		t.Run(tc.name, func(t *testing.T) {
			e := hlNewEnv(t)
			chat := hlNewChat(t, func(int, hlChatReq) hlReply { return hlReply{Content: "ok", Prompt: 100, Completion: 10} })
			e.openAIAgent(chat, "a", tc.priced, nil)
			r := e.run(hlRunOpts{args: []string{"run", "--json", "--agent", "a", "hi"}})
			env := r.envelope(t)
			if env.CostKnown == nil || *env.CostKnown != tc.wantKnown {
				t.Fatalf("costKnown = %v, want %v: %s", env.CostKnown, tc.wantKnown, r.stdout)
			}
			if !tc.wantKnown && *env.CostUSD != 0 {
				t.Errorf("unpriced costUSD = %v, want the number 0", *env.CostUSD)
			}
		})
	}
}

// TestHeadlessProviderFailures: a 400 is never retried and the failure
// envelope carries what was already spent; a 500 is retried once with a
// recoverable error event.
func TestHeadlessProviderFailures(t *testing.T) {
	t.Parallel()
	t.Run("400 not retried, spend reported", func(t *testing.T) {
		e := hlNewEnv(t)
		e.writeFile("notes.txt", "hello")
		chat := hlNewChat(t, func(n int, req hlChatReq) hlReply {
			if n == 0 {
				return hlReply{Calls: []hlCall{{"read_file", `{"path":"notes.txt"}`}}, Prompt: 1000, Completion: 500}
			}
			return hlReply{Status: 400, ErrMessage: "bad request: context too long"}
		})
		e.openAIAgent(chat, "a", true, nil, "read_file")
		r := e.run(hlRunOpts{args: []string{"run", "--json", "--agent", "a", "--events", "tools", "read it"}})
		if r.code != 1 {
			t.Fatalf("exit %d, want 1", r.code)
		}
		env := r.envelope(t)
		if *env.OK || *env.CostUSD != 0.002 {
			t.Errorf("failure envelope = %s, want ok:false costUSD:0.002", r.stdout)
		}
		if n := len(chat.requests()); n != 2 {
			t.Errorf("%d requests, want 2 (the 400 is not retried)", n)
		}
		errs := hlOfType(r.events(t), "error")
		if len(errs) != 1 || errs[0]["recoverable"] != false {
			t.Errorf("error events = %v, want one with recoverable:false", errs)
		}
	})
	t.Run("500 retried", func(t *testing.T) {
		e := hlNewEnv(t)
		chat := hlNewChat(t, func(n int, req hlChatReq) hlReply {
			if n == 0 {
				return hlReply{Status: 500, ErrMessage: "upstream hiccup"}
			}
			return hlReply{Content: "fine", Prompt: 1, Completion: 1}
		})
		e.openAIAgent(chat, "a", true, nil)
		r := e.run(hlRunOpts{args: []string{"run", "--json", "--agent", "a", "--events", "usage", "hi"}})
		env := r.envelope(t)
		if r.code != 0 || !*env.OK || env.Answer != "fine" {
			t.Fatalf("exit %d: %s\n%s", r.code, r.stdout, r.stderr)
		}
		errs := hlOfType(r.events(t), "error")
		if len(errs) != 1 || errs[0]["recoverable"] != true {
			t.Fatalf("error events = %v, want one recoverable:true", errs)
		}
		if e, _ := errs[0]["error"].(map[string]any); e["name"] == nil || e["message"] == nil {
			t.Errorf("error body = %v, want {name,message}", errs[0]["error"])
		}
		if n := len(chat.requests()); n != 2 {
			t.Errorf("%d requests, want 2", n)
		}
	})
}

func TestHeadlessTimeout(t *testing.T) {
	t.Parallel()
	e := hlNewEnv(t)
	e.replayAgent("slow", map[string]any{"turns": []any{
		map[string]any{"text": "late", "delayMs": 5000},
	}})
	t.Run("json", func(t *testing.T) {
		r := e.run(hlRunOpts{args: []string{"run", "--json", "--agent", "slow", "--timeout", "300", "hi"}})
		env := r.envelope(t)
		if r.code != 1 || *env.OK || env.Error != "Run exceeded the 300ms timeout." {
			t.Fatalf("exit %d envelope %s", r.code, r.stdout)
		}
	})
	t.Run("events carry the failure", func(t *testing.T) {
		r := e.run(hlRunOpts{args: []string{"run", "--json", "--events", "tools", "--agent", "slow", "--timeout", "300", "hi"}})
		if r.code != 1 || !strings.Contains(r.stderr, `"type":"error"`) || !strings.Contains(r.stderr, `"name":"TimeoutError"`) ||
			!strings.Contains(r.stderr, `"recoverable":false`) {
			t.Fatalf("a timed-out run must end its event stream with one error event: %s", r.stderr)
		}
	})
	t.Run("plain", func(t *testing.T) {
		r := e.run(hlRunOpts{args: []string{"run", "--agent", "slow", "--timeout", "300", "hi"}})
		if r.code != 1 || r.stdout != "" || !strings.Contains(r.stderr, "Run exceeded the 300ms timeout.\n") {
			t.Fatalf("exit %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
		}
	})
}

// TestHeadlessAskToolsOffered: the ask tools reach the model only when a
// human is reachable; --interactive-stdin wins over CI=true; the file
// picker needs a terminal.
func TestHeadlessAskToolsOffered(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		args       []string
		env        []string
		wantAsk    bool
		wantPicker bool
	}{
		{"piped stdin is unattended", nil, nil, false, false},
		{"CI alone is unattended", nil, []string{"CI=true"}, false, false},
		{"interactive-stdin", []string{"--interactive-stdin"}, nil, true, false},
		{"interactive-stdin wins over CI", []string{"--interactive-stdin"}, []string{"CI=true"}, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := hlNewEnv(t)
			chat := hlNewChat(t, func(int, hlChatReq) hlReply { return hlReply{Content: "ok"} })
			e.openAIAgent(chat, "a", true, nil, "read_file", "ask_user_question", "ask_file_picker")
			args := append([]string{"run", "--json", "--agent", "a"}, tc.args...)
			r := e.run(hlRunOpts{args: append(args, "hi"), env: tc.env})
			if r.code != 0 {
				t.Fatalf("exit %d: %s %s", r.code, r.stdout, r.stderr)
			}
			names := chat.requests()[0].toolNames()
			if got := slices.Contains(names, "ask_user_question"); got != tc.wantAsk {
				t.Errorf("ask_user_question offered = %v, want %v (tools %v)", got, tc.wantAsk, names)
			}
			if got := slices.Contains(names, "ask_file_picker"); got != tc.wantPicker {
				t.Errorf("ask_file_picker offered = %v, want %v", got, tc.wantPicker)
			}
			if !slices.Contains(names, "read_file") {
				t.Errorf("read_file missing: %v", names)
			}
		})
	}
}

// hlAskScript asks one question, then answers with the tool's result.
func hlAskScript(question string) map[string]any {
	return map[string]any{"turns": []any{
		map[string]any{"toolCalls": []any{map[string]any{"name": "ask_user_question", "arguments": map[string]any{
			"question": question,
			"suggested_responses": []any{
				map[string]any{"value": "today", "label": "Today"},
				map[string]any{"value": "tomorrow", "label": "Tomorrow"},
			}}}}},
		map[string]any{"text": "Got: {{lastToolResult}}"},
	}}
}

// hlBridge drives a --interactive-stdin run: script gets each request
// line from stderr and returns the lines to write back (nil: nothing);
// closeAfter closes stdin after the first request instead.
func hlBridge(t *testing.T, e *hlEnv, args []string, respond func(req map[string]any) []string, closeAfter bool) hlResult {
	t.Helper()
	r, _ := driveBridge(t, e, args, nil, func(req map[string]any) []string {
		if closeAfter {
			return nil // closes stdin
		}
		if out := respond(req); out != nil {
			return out
		}
		return []string{}
	})
	return r
}

func TestHeadlessBridgeQuestion(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("When is your appointment, exactly? ", 20) // > 200 chars: never cut
	t.Run("answered after a wait longer than --timeout", func(t *testing.T) {
		e := hlNewEnv(t)
		e.replayAgent("asker", hlAskScript(long), "ask_user_question")
		var seen map[string]any
		r := hlBridge(t, e, []string{"run", "--json", "--interactive-stdin", "--agent", "asker", "--timeout", "800", "book it"},
			func(req map[string]any) []string {
				seen = req
				time.Sleep(1500 * time.Millisecond) // a slow human: not counted
				id := req["requestId"].(string)
				return []string{
					"this is not json",
					`{"type":"user_input_response","requestId":"ui-999","response":"never"}`,
					`{"type":"who_knows"}`,
					fmt.Sprintf(`{"type":"user_input_response","requestId":%q,"response":"tomorrow"}`, id),
				}
			}, false)
		env := r.envelope(t)
		if r.code != 0 || env.Answer != "Got: User responded: tomorrow" {
			t.Fatalf("exit %d envelope %s\nstderr:\n%s", r.code, r.stdout, r.stderr)
		}
		if seen["requestId"] != "ui-1" || seen["question"] != long || seen["allowCustom"] != true {
			t.Errorf("request = %v", seen)
		}
		if s, _ := seen["suggestions"].([]any); len(s) != 2 {
			t.Errorf("suggestions = %v", seen["suggestions"])
		}
		for _, want := range []string{"not JSON", `unknown requestId \"ui-999\"`, `unknown type \"who_knows\"`} {
			if !strings.Contains(r.stderr, want) {
				t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
			}
		}
	})
	t.Run("empty response is no answer", func(t *testing.T) {
		e := hlNewEnv(t)
		e.replayAgent("asker", hlAskScript("When?"), "ask_user_question")
		r := hlBridge(t, e, []string{"run", "--json", "--interactive-stdin", "--agent", "asker", "go"},
			func(req map[string]any) []string {
				return []string{fmt.Sprintf(`{"type":"user_input_response","requestId":%q,"response":""}`, req["requestId"])}
			}, false)
		env := r.envelope(t)
		if r.code != 0 || !strings.Contains(env.Answer, "could not be asked or gave no answer") {
			t.Fatalf("exit %d envelope %s", r.code, r.stdout)
		}
	})
	t.Run("stdin closed while pending", func(t *testing.T) {
		e := hlNewEnv(t)
		e.replayAgent("asker", hlAskScript("When?"), "ask_user_question")
		r := hlBridge(t, e, []string{"run", "--json", "--interactive-stdin", "--agent", "asker", "go"}, nil, true)
		env := r.envelope(t)
		if r.code != 0 || !strings.Contains(env.Answer, "could not be asked or gave no answer") {
			t.Fatalf("exit %d envelope %s\n%s", r.code, r.stdout, r.stderr)
		}
	})
}

// hlWriteScript proposes one write_file, then reports its result.
func hlWriteScript() map[string]any {
	return map[string]any{"turns": []any{
		map[string]any{"toolCalls": []any{map[string]any{"name": "write_file", "arguments": map[string]any{"path": "out.txt", "content": "hi\n"}}}},
		map[string]any{"text": "Result: {{lastToolResult}}"},
	}}
}

func TestHeadlessApprovalAndDecline(t *testing.T) {
	t.Parallel()
	t.Run("bridge approves", func(t *testing.T) {
		e := hlNewEnv(t)
		e.replayAgent("w", hlWriteScript(), "write_file")
		r := hlBridge(t, e, []string{"run", "--json", "--interactive-stdin", "--approval-policy", "low-risk", "--agent", "w", "write"},
			func(req map[string]any) []string {
				return []string{fmt.Sprintf(`{"type":"approval_decision","requestId":%q,"toolCallId":%q,"approved":true}`, req["requestId"], req["toolCallId"])}
			}, false)
		env := r.envelope(t)
		if r.code != 0 || len(env.Declined) != 0 {
			t.Fatalf("exit %d envelope %s\n%s", r.code, r.stdout, r.stderr)
		}
		if b, err := os.ReadFile(filepath.Join(e.cwd, "out.txt")); err != nil || string(b) != "hi\n" {
			t.Errorf("out.txt = %q, %v", b, err)
		}
	})
	t.Run("bridge with --events approval sees each request once", func(t *testing.T) {
		e := hlNewEnv(t)
		e.replayAgent("w", hlWriteScript(), "write_file")
		r := hlBridge(t, e, []string{"run", "--json", "--interactive-stdin", "--events", "approval", "--approval-policy", "low-risk", "--agent", "w", "write"},
			func(req map[string]any) []string {
				if req["type"] != "approval_required" || req["arguments"] == nil {
					t.Errorf("approval request without its arguments: %v", req)
				}
				return []string{fmt.Sprintf(`{"type":"approval_decision","requestId":%q,"toolCallId":%q,"approved":true}`, req["requestId"], req["toolCallId"])}
			}, false)
		if r.code != 0 {
			t.Fatalf("exit %d: %s\n%s", r.code, r.stdout, r.stderr)
		}
		if n := strings.Count(r.stderr, `"type":"approval_required"`); n != 1 {
			t.Errorf("approval_required appears %d times on stderr, want 1:\n%s", n, r.stderr)
		}
		if strings.Contains(r.stderr, "ignored approval_decision") {
			t.Errorf("a reply was ignored: %s", r.stderr)
		}
	})
	for _, tc := range []struct {
		name     string
		bridge   bool
		failFlag bool
		wantCode int
	}{
		{"unattended declines", false, false, 0},
		{"unattended with --fail-on-decline", false, true, 1},
		{"bridge denies", true, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := hlNewEnv(t)
			e.replayAgent("w", hlWriteScript(), "write_file")
			args := []string{"run", "--json", "--agent", "w", "--approval-policy", "low-risk"}
			if tc.failFlag {
				args = append(args, "--fail-on-decline")
			}
			var r hlResult
			if tc.bridge {
				r = hlBridge(t, e, append(args, "--interactive-stdin", "write"), func(req map[string]any) []string {
					return []string{fmt.Sprintf(`{"type":"approval_decision","requestId":%q,"approved":false,"note":"not today"}`, req["requestId"])}
				}, false)
			} else {
				r = e.run(hlRunOpts{args: append(args, "write")})
			}
			env := r.envelope(t)
			if r.code != tc.wantCode {
				t.Fatalf("exit %d, want %d: %s", r.code, tc.wantCode, r.stdout)
			}
			if _, err := os.Stat(filepath.Join(e.cwd, "out.txt")); err == nil {
				t.Errorf("a declined write happened")
			}
			if tc.wantCode == 1 {
				if *env.OK || !strings.Contains(env.Error, "--fail-on-decline") {
					t.Errorf("envelope = %s", r.stdout)
				}
				return
			}
			if !*env.OK || len(env.Declined) != 1 || env.Declined[0].Name != "write_file" {
				t.Errorf("envelope = %s, want write_file in declinedToolCalls", r.stdout)
			}
			if tc.bridge && !strings.Contains(env.Answer, "not today") {
				t.Errorf("the note did not reach the model: %s", env.Answer)
			}
		})
	}
}

// TestHeadlessReadOnlyHome: a read-only JAZZ_HOME is one clear error at
// start, naming the path; the seed's recipe (config copied into a
// writable directory) works.
func TestHeadlessReadOnlyHome(t *testing.T) {
	t.Parallel()
	e := hlNewEnv(t)
	e.replayAgent("r", map[string]any{"turns": []any{map[string]any{"text": "fine"}}})
	t.Run("sandbox recipe", func(t *testing.T) {
		seed := e.home
		fresh := filepath.Join(t.TempDir(), "tmpfs-home")
		if out, err := exec.Command("cp", "-r", seed+"/.", fresh).CombinedOutput(); err != nil {
			t.Fatalf("cp: %v %s", err, out)
		}
		r := e.run(hlRunOpts{args: []string{"run", "--json", "--agent", "r", "--conversation", "c1", "hi"}, env: []string{"JAZZ_HOME=" + fresh}})
		if r.code != 0 || r.envelope(t).Answer != "fine" {
			t.Fatalf("exit %d: %s %s", r.code, r.stdout, r.stderr)
		}
		if _, err := os.Stat(filepath.Join(fresh, "history")); err != nil {
			t.Errorf("history not written to the copied home: %v", err)
		}
	})
	t.Run("read-only mount", func(t *testing.T) {
		if _, err := exec.LookPath("unshare"); err != nil {
			t.Skip("unshare not available")
		}
		if err := exec.Command("unshare", "-m", "true").Run(); err != nil {
			t.Skipf("no mount namespaces here: %v", err)
		}
		// A private mount namespace: the read-only bind dies with the process.
		script := `mount --bind "$JAZZ_HOME" "$JAZZ_HOME" && mount -o remount,bind,ro "$JAZZ_HOME" && exec "$0" "$@"`
		cmd := exec.Command("unshare", "-m", "sh", "-c", script, e.bin, "run", "--json", "--agent", "r", "--conversation", "c1", "hi")
		cmd.Env = e.environ()
		cmd.Dir = e.cwd
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		if err == nil {
			t.Fatalf("run on a read-only home succeeded: %s", stdout.String())
		}
		if strings.Contains(stderr.String(), "mount:") {
			t.Skipf("cannot mount here: %s", stderr.String())
		}
		var env hlEnvelope
		if json.Unmarshal([]byte(stdout.String()), &env) != nil || env.OK == nil || *env.OK {
			t.Fatalf("stdout = %q", stdout.String())
		}
		if !strings.Contains(env.Error, e.home) || !strings.Contains(env.Error, "not writable") || !strings.Contains(env.Error, "read-only file system") {
			t.Errorf("error = %q, want the path and the reason", env.Error)
		}
	})
	// A run without a conversation checks home without a probe file
	// (config.CheckHomeAccess): a read-only mount still fails it at the
	// start, with the same message.
	t.Run("read-only mount, no conversation", func(t *testing.T) {
		inNamespace(t)
		script := `mount --bind "$JAZZ_HOME" "$JAZZ_HOME" && mount -o remount,bind,ro "$JAZZ_HOME" && exec "$0" "$@"`
		r := hlShell(t, e, script, "run", "--json", "--agent", "r", "hi")
		env := r.failure(t)
		if !strings.Contains(env.Error, e.home) || !strings.Contains(env.Error, "not writable") || !strings.Contains(env.Error, "read-only file system") {
			t.Errorf("error = %q, want the path and the reason", env.Error)
		}
	})
	// What the probe file protects: a conversation is saved after the
	// model answered, so a home that cannot take the save (here a full
	// tmpfs) fails the run before it starts; a run that writes nothing
	// there goes through.
	t.Run("full home", func(t *testing.T) {
		inNamespace(t)
		full := filepath.Join(t.TempDir(), "full-home")
		if err := os.Mkdir(full, 0o700); err != nil {
			t.Fatal(err)
		}
		script := `mount -t tmpfs -o size=256k,mode=0700 tmpfs "$FULL" && cp -r "$JAZZ_HOME"/. "$FULL" && ` +
			`{ dd if=/dev/zero of="$FULL/.fill" bs=4096 2>/dev/null; true; } && JAZZ_HOME="$FULL" exec "$0" "$@"`
		e := *e
		e.extra = append(append([]string{}, e.extra...), "FULL="+full)
		r := hlShell(t, &e, script, "run", "--json", "--agent", "r", "--conversation", "c1", "hi")
		env := r.failure(t)
		if !strings.Contains(env.Error, full) || !strings.Contains(env.Error, "not writable") || !strings.Contains(env.Error, "no space left on device") {
			t.Errorf("error = %q, want the path and the reason", env.Error)
		}
		r = hlShell(t, &e, script, "run", "--json", "--agent", "r", "hi")
		if r.code != 0 || r.envelope(t).Answer != "fine" {
			t.Errorf("a run that saves nothing, on a full home: exit %d: %s %s", r.code, r.stdout, r.stderr)
		}
	})
}

// inNamespace skips a test that needs a private mount namespace where
// there is none.
func inNamespace(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("unshare not available")
	}
	if err := exec.Command("unshare", "-m", "true").Run(); err != nil {
		t.Skipf("no mount namespaces here: %v", err)
	}
}

// hlShell runs script in a private mount namespace (its mounts die with
// it); the script ends by exec'ing jazz with args.
func hlShell(t *testing.T, e *hlEnv, script string, args ...string) hlResult {
	t.Helper()
	cmd := exec.Command("unshare", append([]string{"-m", "sh", "-c", script, e.bin}, args...)...)
	cmd.Env = e.environ()
	cmd.Dir = e.cwd
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if strings.Contains(stderr.String(), "mount:") {
		t.Skipf("cannot mount here: %s", stderr.String())
	}
	r := hlResult{stdout: stdout.String(), stderr: stderr.String()}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return r
}

// failure is the failure envelope of a run that must have failed.
func (r hlResult) failure(t *testing.T) hlEnvelope {
	t.Helper()
	var env hlEnvelope
	if r.code == 0 || json.Unmarshal([]byte(r.stdout), &env) != nil || env.OK == nil || *env.OK {
		t.Fatalf("exit %d, stdout = %q, stderr = %q", r.code, r.stdout, r.stderr)
	}
	return env
}

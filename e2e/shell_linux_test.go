package e2e_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jazz-run/jazz/e2e/chatserver"
	"github.com/jazz-run/jazz/internal/testutil/sleeper"
	"github.com/jazz-run/jazz/proctree"
)

// The execute_command runner, driven through the built binary: the
// command runs in a child process of its own, so what it does to its
// shell, its memory and its descendants is not jazz's.

func shellCall(id, command string) chatserver.Call {
	return chatserver.Call{ID: id, Name: "execute_command", Arguments: chatserver.JSONArgs(map[string]string{
		"command": command, "description": "e2e"})}
}

// shellRun runs one agent with execute_command (and cd) under the
// high-risk policy on the given turns, and returns the run and what the
// model was sent back for each tool call, by call id.
func shellRun(t *testing.T, setup func(w *world), turns ...chatserver.Turn) (result, map[string]string, *world) {
	t.Helper()
	srv := chatserver.New(turns...)
	t.Cleanup(srv.Close)
	w := newWorld(t, srv.URL())
	if setup != nil {
		setup(w)
	}
	w.agent("sh", "execute_command", "cd")
	r := w.exec("", "run", "--agent", "sh", "--json", "--events", "approval", "--approval-policy", "high-risk", "--timeout", "60000", "go")
	wantSuccess(t, r)
	results := map[string]string{}
	for _, q := range srv.Requests() {
		for _, m := range q.ToolMessages() {
			if m.Content != nil {
				results[m.ToolCallID] = *m.Content
			}
		}
	}
	return r, results, w
}

// TestShellKillOfItsShellSparesJazz: `kill -TERM $$` ends the command's
// shell, which is not jazz: the run goes on to its answer, exits 0, and
// the model is told which signal ended the command.
func TestShellKillOfItsShellSparesJazz(t *testing.T) {
	t.Parallel()
	_, res, _ := shellRun(t, nil,
		calls(shellCall("k1", "echo $$; env kill -TERM $$; echo unreachable")),
		answer("still here"))
	f := failedShell(t, res["k1"])
	if !strings.Contains(f.Error, "killed by signal SIGTERM") || f.Result.Signal != "SIGTERM" || f.Result.Success || f.Result.ExitCode != 143 {
		t.Fatalf("tool result %s", res["k1"])
	}
	if f.Result.Stdout == "" || strings.Contains(f.Result.Stdout, "unreachable") {
		t.Fatalf("stdout %q", f.Result.Stdout)
	}
}

// shellFailure is a failed execute_command result as the model sees it.
type shellFailure struct {
	Error  string `json:"error"`
	Result struct {
		ExitCode int    `json:"exitCode"`
		Stdout   string `json:"stdout"`
		Success  bool   `json:"success"`
		Signal   string `json:"signal"`
	} `json:"result"`
}

func failedShell(t *testing.T, content string) shellFailure {
	t.Helper()
	var f shellFailure
	if err := json.Unmarshal([]byte(content), &f); err != nil || f.Error == "" {
		t.Fatalf("not a failed result: %s (%v)", content, err)
	}
	return f
}

// TestShellMemoryBombStopped: `x=$x$x` in a loop is stopped by the shell's
// memory limit with a clear result, and jazz finishes the run.
func TestShellMemoryBombStopped(t *testing.T) {
	t.Parallel()
	_, res, _ := shellRun(t, nil,
		calls(shellCall("m1", "x=0123456789abcdef; for i in $(seq 40); do x=$x$x; done; echo survived")),
		answer("done"))
	f := failedShell(t, res["m1"])
	if !strings.Contains(f.Error, "exceeded its memory limit of 1024 MiB") || f.Result.Success || strings.Contains(f.Result.Stdout, "survived") {
		t.Fatalf("tool result %s", res["m1"])
	}
}

// TestShellDaemonsLeaveNothing: processes that leave the command's group
// (setsid, a double fork, nohup in the background) are gone once jazz has
// exited, as /proc shows, and the result says they were killed.
func TestShellDaemonsLeaveNothing(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid binary")
	}
	link, marker := sleeper.Link(t)
	cmd := fmt.Sprintf("setsid -f %[1]s 60; nohup %[1]s 60 >/dev/null 2>&1 & sleep 0.2; echo started", link)
	_, res, _ := shellRun(t, nil, calls(shellCall("d1", cmd)), answer("done"))
	got := res["d1"]
	if !strings.Contains(got, `"stdout":"started"`) || !strings.Contains(got, `"killedProcesses":2`) || !strings.Contains(got, "were killed") {
		t.Fatalf("tool result %s", got)
	}
	if left, err := proctree.Matching(marker); err != nil || len(left) > 0 {
		t.Fatalf("processes outlived jazz: %q", left)
	}
}

// TestShellCdInBatchDoesNotMoveApproval: a `cd` in the same batch as an
// approved command does not move where it runs: the command runs in the
// directory its approval showed, resolved.
func TestShellCdInBatchDoesNotMoveApproval(t *testing.T) {
	t.Parallel()
	mkSub := func(w *world) {
		if err := os.Mkdir(filepath.Join(w.cwd, "sub"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	r, res, w := shellRun(t, mkSub,
		calls(
			shellCall("c1", "pwd"),
			chatserver.Call{ID: "c2", Name: "cd", Arguments: chatserver.JSONArgs(map[string]string{"path": "sub"})},
		),
		calls(shellCall("c3", "pwd")),
		answer("done"))
	var shown string
	for _, line := range strings.Split(r.stderr, "\n") {
		var ev struct {
			Type, ToolCallID, Message string
		}
		if json.Unmarshal([]byte(line), &ev) == nil && ev.Type == "approval_required" && ev.ToolCallID == "c1" {
			_, after, _ := strings.Cut(ev.Message, "Working Directory: ")
			shown, _, _ = strings.Cut(after, "\n")
		}
	}
	if shown == "" {
		t.Fatalf("no approval_required for c1 in stderr:\n%s", r.stderr)
	}
	var first struct {
		Stdout           string `json:"stdout"`
		WorkingDirectory string `json:"workingDirectory"`
	}
	if err := json.Unmarshal([]byte(res["c1"]), &first); err != nil {
		t.Fatalf("tool result %s: %v", res["c1"], err)
	}
	if first.Stdout != shown || first.WorkingDirectory != shown {
		t.Fatalf("approved in %q, ran in %q (reported %q)", shown, first.Stdout, first.WorkingDirectory)
	}
	// The next turn's command runs where cd went.
	real, _ := filepath.EvalSymlinks(w.cwd)
	if !strings.Contains(res["c3"], `"stdout":"`+filepath.Join(real, "sub")+`"`) {
		t.Fatalf("after cd: %s", res["c3"])
	}
}

// TestShellAutoApprovalsReachTheRunner: a command the allowlist or the
// static read-only pass approved runs, which it does only if the gate's
// judgement travelled with the approval into the runner (without one the
// runner refuses every command).
func TestShellAutoApprovalsReachTheRunner(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, config, policy, command, stdout string
	}{
		{"allowlist", `{"maxRetries": 0, "autoApprovedCommands": ["echo"]}`, "", "echo judged", "judged"},
		{"static read-only", `{"maxRetries": 0}`, "read-only", "ls -d .", "."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := chatserver.New(calls(shellCall("a1", tc.command)), answer("done"))
			defer srv.Close()
			w := newWorld(t, srv.URL())
			runUnattended(t, w, tc.config, tc.policy)
			got := toolResults(srv)["a1"]
			var res struct {
				Stdout  string `json:"stdout"`
				Success bool   `json:"success"`
			}
			if err := json.Unmarshal([]byte(got), &res); err != nil || !res.Success || res.Stdout != tc.stdout {
				t.Fatalf("tool result %s", got)
			}
		})
	}
}

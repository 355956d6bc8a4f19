package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestApprovalsWatchDecidesInline: `jazz approvals watch`, started before
// any request, streams each new one as it arrives and decides it from
// what is typed on its stdin: "y note" approves (the file is written and
// the envelope says alice decided), "n note" denies (nothing is written),
// and each outcome is streamed too.
func TestApprovalsWatchDecidesInline(t *testing.T) {
	t.Parallel()
	e := busWithAlice(t)
	// The running server admits a new approver within a second.
	waitPending(t, e, 0, "--as", "alice")
	in, typed, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer typed.Close()
	watch := e.start(hlRunOpts{args: []string{"approvals", "watch", "--as", "alice", "--prompt", "--json"}, stdinReader: in})
	defer func() { _ = watch.cmd.Process.Kill(); _ = watch.cmd.Wait() }()

	// seen waits for the watch to stream a record of tool write_file in
	// this state, other than those already taken.
	taken := map[string]bool{}
	seen := func(pending bool) pendingView {
		t.Helper()
		var found pendingView
		if watch.stdout.waitFor(30*time.Second, func(text string) bool {
			for _, line := range strings.Split(text, "\n") {
				var v pendingView
				if json.Unmarshal([]byte(line), &v) != nil || v.Request.Tool != "write_file" || v.Pending != pending {
					continue
				}
				if k := v.Request.RequestID + v.Status; !taken[k] {
					taken[k] = true
					found = v
					return true
				}
			}
			return false
		}) {
			return found
		}
		t.Fatalf("watch never streamed a record (pending %v)\nstdout:\n%s\nstderr:\n%s", pending, watch.stdout.String(), watch.stderr.String())
		return pendingView{}
	}
	decidedBy := func(res hlResult, field string) string {
		t.Helper()
		var env map[string][]struct {
			DecidedBy string `json:"decidedBy"`
		}
		_ = json.Unmarshal([]byte(res.stdout), &env)
		if res.code != 0 || len(env[field]) != 1 {
			t.Fatalf("run: %+v", res)
		}
		return env[field][0].DecidedBy
	}

	e.replayAgent("remote", noteScript, "write_file")
	run := e.start(hlRunOpts{args: []string{"run", "--agent", "remote", "--json", "--remote-approvals", "--approval-timeout", "120000", "write the note"}})
	req := seen(true)
	if req.Request.PreviewDiff == "" || !strings.HasPrefix(req.Request.ActionHash, "sha256:") {
		t.Fatalf("the streamed request lacks what a person decides on: %+v", req)
	}
	if _, err := typed.WriteString("y looks right\n"); err != nil {
		t.Fatal(err)
	}
	if by := decidedBy(run.wait(60*time.Second), "toolCalls"); by != "remote:alice" {
		t.Fatalf("approved by %q", by)
	}
	if got, err := os.ReadFile(filepath.Join(e.cwd, "note.txt")); err != nil || string(got) != "approved remotely\n" {
		t.Fatalf("file %q %v", got, err)
	}
	if out := seen(false); out.Request.RequestID != req.Request.RequestID || out.Status != "approved" {
		t.Fatalf("outcome streamed: %+v", out)
	}

	if err := os.Remove(filepath.Join(e.cwd, "note.txt")); err != nil {
		t.Fatal(err)
	}
	run = e.start(hlRunOpts{args: []string{"run", "--agent", "remote", "--json", "--remote-approvals", "--approval-timeout", "120000", "write the note"}})
	req = seen(true)
	if _, err := typed.WriteString("n not today\n"); err != nil {
		t.Fatal(err)
	}
	if by := decidedBy(run.wait(60*time.Second), "declinedToolCalls"); by != "remote:alice" {
		t.Fatalf("denied by %q", by)
	}
	if _, err := os.Stat(filepath.Join(e.cwd, "note.txt")); err == nil {
		t.Fatal("a denied write happened")
	}
	if out := seen(false); out.Request.RequestID != req.Request.RequestID || out.Status != "denied" {
		t.Fatalf("outcome streamed: %+v", out)
	}
}

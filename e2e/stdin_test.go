package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jazz-run/jazz/e2e/chatserver"
)

// `echo "$DIFF" | jazz run --agent dev "review this diff"`: the prompt is
// the argument followed by the piped text, fenced; stdin alone is the
// prompt; too much piped text is refused, not cut.
func TestPipedStdinJoinsThePrompt(t *testing.T) {
	t.Parallel()
	srv := chatserver.New(chatserver.Turn{Text: "looks fine"}, chatserver.Turn{Text: "ok"}, chatserver.Turn{Text: "ok"})
	defer srv.Close()
	e := hlNewEnv(t)
	e.chatAgent(srv, "dev", nil, "read_file")
	diff := "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-old\n+new ```\n"
	r := e.run(hlRunOpts{args: []string{"run", "--agent", "dev", "review this diff"}, stdin: diff})
	if r.code != 0 || r.stdout != "looks fine\n" {
		t.Fatalf("exit %d\nstdout %q\nstderr %s", r.code, r.stdout, r.stderr)
	}
	got := srv.Requests()[0].LastUser()
	fence := "````" // longer than the run of backticks inside the diff
	want := "review this diff\n\nThe text below was piped to jazz on stdin.\n\n" + fence + "\n" + strings.TrimRight(diff, "\n") + "\n" + fence
	if got != want {
		t.Fatalf("the model got\n%q\nwant\n%q", got, want)
	}

	r = e.run(hlRunOpts{args: []string{"run", "--agent", "dev"}, stdin: "  what is 2+2?\n"})
	if r.code != 0 || srv.Requests()[1].LastUser() != "what is 2+2?" {
		t.Fatalf("stdin as the prompt: exit %d, model got %q\n%s", r.code, srv.Requests()[1].LastUser(), r.stderr)
	}
	// A blank pipe leaves the argument alone.
	r = e.run(hlRunOpts{args: []string{"run", "--agent", "dev", "just this"}, stdin: "\n \n"})
	if r.code != 0 || srv.Requests()[2].LastUser() != "just this" {
		t.Fatalf("blank stdin: exit %d, model got %q", r.code, srv.Requests()[2].LastUser())
	}

	big := strings.Repeat("x", 1<<20+1)
	r = e.run(hlRunOpts{args: []string{"run", "--json", "--agent", "dev", "summarize"}, stdin: big})
	env := r.envelope(t)
	if r.code != 1 || *env.OK || !strings.Contains(env.Error, "stdin holds more than 1048576 bytes (1 MiB)") {
		t.Fatalf("oversized stdin: exit %d %s", r.code, r.stdout)
	}
	if len(srv.Requests()) != 3 {
		t.Fatalf("the oversized prompt reached the model")
	}
}

// With --interactive-stdin, stdin is the protocol: the prompt must be an
// argument, and text piped there is said (once) not to be the prompt.
func TestInteractiveStdinIsTheProtocol(t *testing.T) {
	t.Parallel()
	srv := chatserver.New(chatserver.Turn{Text: "reviewed nothing"})
	defer srv.Close()
	e := hlNewEnv(t)
	e.chatAgent(srv, "dev", nil, "read_file")
	r := e.run(hlRunOpts{args: []string{"run", "--json", "--interactive-stdin", "--agent", "dev"}, stdin: "please review\n"})
	env := r.envelope(t)
	if r.code != 1 || !strings.Contains(env.Error, "stdin carries the protocol") || !strings.Contains(env.Error, "the prompt must be an argument") ||
		strings.Contains(env.Error, "pipe it via stdin") {
		t.Fatalf("exit %d: %s", r.code, r.stdout)
	}
	r = e.run(hlRunOpts{args: []string{"run", "--json", "--interactive-stdin", "--agent", "dev", "review"},
		stdin: "diff --git a/x b/x\n-old\n+new\n"})
	if r.code != 0 {
		t.Fatalf("exit %d: %s\n%s", r.code, r.stdout, r.stderr)
	}
	warns := hlOfType(r.events(t), "warning")
	if len(warns) != 2 || !strings.Contains(warns[0]["message"].(string), "the prompt and any text for it go in the argument") {
		t.Fatalf("warnings %v", warns)
	}
}

// The original's chat bridges answer approvals on stdin without
// --interactive-stdin: a prompt argument, --events selecting approvals
// and stdin an open pipe are bridge mode. Their decisions name the call
// by toolCallId only. At the end of stdin what waits is declined.
func TestImpliedBridgeMode(t *testing.T) {
	t.Parallel()
	write := chatserver.Call{ID: "call_1", Name: "write_file", Arguments: chatserver.JSONArgs(map[string]string{"path": "out.txt", "content": "hi\n"})}
	srv := chatserver.New(chatserver.Turn{Calls: []chatserver.Call{write}}, chatserver.Turn{Text: "written"},
		chatserver.Turn{Calls: []chatserver.Call{write}}, chatserver.Turn{Text: "could not"})
	defer srv.Close()
	e := hlNewEnv(t)
	e.chatAgent(srv, "w", nil, "write_file")
	r, br := driveBridge(t, e, []string{"run", "--json", "--events", "approval", "--agent", "w", "write out.txt"}, nil,
		func(req map[string]any) []string {
			if req["type"] != "approval_required" || req["asked"] != true {
				return nil
			}
			b, _ := json.Marshal(map[string]any{"type": "approval_decision", "toolCallId": req["toolCallId"], "approved": true})
			return []string{string(b)}
		})
	env := r.envelope(t)
	if r.code != 0 || !*env.OK || len(br.requests) == 0 {
		t.Fatalf("exit %d: %s\n%s", r.code, r.stdout, r.stderr)
	}
	if data, err := os.ReadFile(filepath.Join(e.cwd, "out.txt")); err != nil || string(data) != "hi\n" {
		t.Fatalf("the approved write did not happen: %q %v\n%s", data, err, r.stderr)
	}
	// Fail closed: stdin ends with nothing decided.
	r = e.run(hlRunOpts{args: []string{"run", "--json", "--events", "approval", "--agent", "w", "write it again"}})
	env = r.envelope(t)
	if r.code != 0 || len(env.Declined) != 1 {
		t.Fatalf("at EOF: exit %d %s\n%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(fmt.Sprint(hlOfType(r.events(t), "approval_resolved")), "approved:false") {
		t.Errorf("no declined approval_resolved:\n%s", r.stderr)
	}
}

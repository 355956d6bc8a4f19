package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jazz-run/jazz/e2e/chatserver"
)

// TestApprovalRequestsAreWhole (issue 9, class 12): with --interactive-stdin
// and --events approval, the approval_required a bridge answers carries
// the whole command, however long, with the tail a cut would hide; so
// does every approval_required line on stderr. Declined, the tail never
// runs.
func TestApprovalRequestsAreWhole(t *testing.T) {
	t.Parallel()
	tail := "; touch pwn-tail"
	cmd := "echo " + strings.Repeat("A", 400) + tail
	srv := chatserver.New(
		chatserver.Turn{Calls: []chatserver.Call{{ID: "long", Name: "execute_command",
			Arguments: chatserver.JSONArgs(map[string]string{"command": cmd, "description": "echo"})}}},
		chatserver.Turn{Text: "done"},
	)
	defer srv.Close()
	e := hlNewEnv(t)
	e.chatAgent(srv, "sh", nil, "execute_command")
	r, br := driveBridge(t, e, []string{"run", "--json", "--interactive-stdin", "--events", "approval", "--agent", "sh", "go"}, nil,
		func(req map[string]any) []string { return []string{decision(req, false)} })
	if r.code != 0 {
		t.Fatalf("exit %d: %s\n%s", r.code, r.stdout, r.stderr)
	}
	if len(br.requests) != 1 {
		t.Fatalf("%d requests reached the bridge, want 1:\n%s", len(br.requests), r.stderr)
	}
	req := br.requests[0]
	if args, _ := req["arguments"].(map[string]any); args["command"] != cmd {
		t.Errorf("the request's arguments do not hold the whole command: %v", req["arguments"])
	}
	if msg, _ := req["message"].(string); !strings.Contains(msg, cmd) {
		t.Errorf("the request's message is cut: %q", msg)
	}
	n := 0
	for _, l := range br.all() {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) != nil || m["type"] != "approval_required" {
			continue
		}
		n++
		if !strings.Contains(l, cmd) || strings.Contains(l, "…") {
			t.Errorf("an approval_required line is cut: %s", l)
		}
	}
	if n == 0 {
		t.Errorf("no approval_required line on stderr:\n%s", r.stderr)
	}
	if _, err := os.Stat(filepath.Join(e.cwd, "pwn-tail")); err == nil {
		t.Error("the declined command's tail ran")
	}
	// Settled without a person (here by the policy), the request is
	// announced on the event stream, whole as well.
	srv2 := chatserver.New(
		chatserver.Turn{Calls: []chatserver.Call{{ID: "long", Name: "execute_command",
			Arguments: chatserver.JSONArgs(map[string]string{"command": cmd, "description": "echo"})}}},
		chatserver.Turn{Text: "done"},
	)
	defer srv2.Close()
	e2 := hlNewEnv(t)
	e2.chatAgent(srv2, "sh", nil, "execute_command")
	r2 := e2.run(hlRunOpts{args: []string{"run", "--json", "--events", "approval", "--approval-policy", "high-risk", "--agent", "sh", "go"}})
	if r2.code != 0 {
		t.Fatalf("exit %d: %s\n%s", r2.code, r2.stdout, r2.stderr)
	}
	seen := false
	for _, l := range strings.Split(r2.stderr, "\n") {
		if strings.Contains(l, `"type":"approval_required"`) {
			seen = true
			if !strings.Contains(l, cmd) {
				t.Errorf("an approval_required event is cut: %s", l)
			}
		}
	}
	if !seen {
		t.Errorf("no approval_required event:\n%s", r2.stderr)
	}
}

package e2e

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/jazz-run/jazz/e2e/chatserver"
)

// TestApprovalWording (issue 13 item 11): the approval a bridge shows no
// longer ends with the original's TUI key, and overwriting a one-line
// file says "1 lines", not 2.
func TestApprovalWording(t *testing.T) {
	t.Parallel()
	wr := chatserver.Call{ID: "w1", Name: "write_file", Arguments: chatserver.JSONArgs(map[string]string{"path": "one.txt", "content": "new"})}
	srv := chatserver.New(chatserver.Turn{Calls: []chatserver.Call{wr}}, chatserver.Turn{Text: "done"})
	defer srv.Close()
	e := hlNewEnv(t)
	e.chatAgent(srv, "w", nil, "write_file")
	e.writeFile("one.txt", "only line\n")
	r, br := driveBridge(t, e, []string{"run", "--json", "--interactive-stdin", "--agent", "w", "overwrite it"}, nil,
		func(req map[string]any) []string { return []string{decision(req, false)} })
	if r.code != 0 {
		t.Fatalf("exit %d: %s\n%s", r.code, r.stdout, r.stderr)
	}
	var msg string
	for _, l := range br.all() {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil && m["type"] == "approval_required" {
			msg, _ = m["message"].(string)
		}
	}
	if msg == "" {
		t.Fatalf("no approval_required message:\n%s", strings.Join(br.all(), "\n"))
	}
	if strings.Contains(msg, "Ctrl+O") {
		t.Errorf("the TUI's key is still offered: %q", msg)
	}
	if !strings.Contains(msg, "overwrite the existing file (1 lines)") {
		t.Errorf("line count of a one-line file: %q", msg)
	}
}

package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An unattended decline names the tool, who declined and how to allow
// it; the approval_required of a call nobody is asked about says so up
// front (asked:false, and who settled it), so a bridge shows no button.
func TestDeclinesSayWhy(t *testing.T) {
	t.Parallel()
	e := hlNewEnv(t)
	e.writeConfig(map[string]any{"maxRetries": 0})
	write := hlReplayCall("write_file", map[string]any{"path": "out.txt", "content": "x\n"})
	e.replayAgent("w", map[string]any{"turns": []any{hlTurn("", write), hlTurn("I could not write out.txt.")}}, "write_file")
	r := e.run(hlRunOpts{args: []string{"run", "--agent", "w", "write out.txt"}})
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	want := "⚠ w: the gate declined 1 tool call: write_file (unattended, so nobody could approve). To allow it: --approval-policy high-risk, or --auto-approve-tools write_file"
	if !strings.Contains(r.stderr, want) {
		t.Fatalf("stderr lacks\n%s\n:\n%s", want, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(e.cwd, "out.txt")); err == nil {
		t.Fatal("the declined write happened")
	}
	// Following the advice works.
	e.replayAgent("w2", map[string]any{"turns": []any{hlTurn("", write), hlTurn("written")}}, "write_file")
	r = e.run(hlRunOpts{args: []string{"run", "--agent", "w2", "--auto-approve-tools", "write_file", "write out.txt"}})
	if _, err := os.Stat(filepath.Join(e.cwd, "out.txt")); r.code != 0 || err != nil || strings.Contains(r.stderr, "declined") {
		t.Fatalf("with the advice: exit %d, %v\n%s", r.code, err, r.stderr)
	}

	e.replayAgent("w3", map[string]any{"turns": []any{hlTurn("", write), hlTurn("no")}}, "write_file")
	r = e.run(hlRunOpts{args: []string{"run", "--json", "--agent", "w3", "--events", "tools", "--approval-policy", "low-risk", "write"}})
	evs := r.events(t)
	reqs := hlOfType(evs, "approval_required")
	if len(reqs) != 0 {
		t.Fatalf("approval events under --events tools: %v", reqs)
	}
	r = e.run(hlRunOpts{args: []string{"run", "--json", "--agent", "w3", "--events", "approval", "--interactive-stdin=false", "--approval-policy", "low-risk", "write"}})
	reqs = hlOfType(r.events(t), "approval_required")
	if len(reqs) != 1 || reqs[0]["asked"] != false || reqs[0]["decidedBy"] != "unattended" || reqs[0]["requestId"] != nil {
		t.Fatalf("approval_required of a call nobody is asked about: %v", reqs)
	}
	warns := hlOfType(r.events(t), "warning")
	if len(warns) != 1 || !strings.Contains(warns[0]["message"].(string), "write_file (unattended") {
		t.Fatalf("warnings %v", warns)
	}
}

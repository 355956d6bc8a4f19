package app_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jazz-run/jazz/app"
	"github.com/jazz-run/jazz/config"
	"github.com/jazz-run/jazz/messages"
)

// TestApproveDecidesTheAskedRequest: a Go program embedding a run answers
// its approval requests with Run.Approve, naming the request from the
// approval_required event. A decision that names no request is refused
// (and decides nothing: the write that a refusal would have declined is
// then approved and happens); one naming another request is ignored.
func TestApproveDecidesTheAskedRequest(t *testing.T) {
	home, dir := t.TempDir(), t.TempDir()
	run, err := app.Start(context.Background(), app.RunOptions{
		Agent: writeAgent(writeScript(t, dir)), Prompt: "write the note", Config: &config.Config{Home: home, MaxIterations: 10},
		Reachable: true, Events: []string{"all"}, Cwd: dir, Timeout: 30 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	asked := 0
	for ev := range run.Events() {
		if ev.Type != messages.EventApprovalRequired || ev.RequestID == "" {
			continue
		}
		asked++
		if err := run.Approve(app.Decision{ToolCallID: ev.ToolCallID, Approved: false, Note: "no"}); err == nil {
			t.Error("a decision naming no request was taken")
		}
		if err := run.Approve(app.Decision{RequestID: ev.RequestID + "x", ToolCallID: ev.ToolCallID, Approved: false, Note: "no"}); err != nil {
			t.Error(err)
		}
		if err := run.Approve(app.Decision{RequestID: ev.RequestID, ToolCallID: ev.ToolCallID, Approved: true}); err != nil {
			t.Error(err)
		}
	}
	out, err := run.Wait()
	if err != nil || !out.OK {
		t.Fatalf("run: %v %+v", err, out)
	}
	if asked != 1 || len(out.Declined) != 0 {
		t.Fatalf("asked %d times, declined %d: %+v", asked, len(out.Declined), out.ToolCalls)
	}
	if got, err := os.ReadFile(filepath.Join(dir, "note.txt")); err != nil || string(got) != "approved remotely\n" {
		t.Fatalf("file: %q %v", got, err)
	}
	for _, c := range out.ToolCalls {
		if c.Name == "write_file" && c.DecidedBy != messages.DecidedByHuman {
			t.Errorf("the write was decided by %q, want the person", c.DecidedBy)
		}
	}
}

package remoteapproval_test

import (
	"testing"
	"time"

	"github.com/jazz-run/jazz/messages"
)

// A call relayed from a worker runs on the worker's machine, in a
// directory of the worker's: its record names the worker, and not the
// run's directory, which would tell the approver it acts where the run
// is. The approver's signature covers it as every other field.
func TestWorkersCallSaysWhereItRuns(t *testing.T) {
	r := newRig(t, time.Minute, "", "")
	m := messages.ApprovalRequired{Place: messages.Place{RunID: "run-1", AgentID: "a1-1", AgentName: "writer", Depth: 1}, ToolCallID: "call_1",
		ToolName: "write_file", RiskLevel: "high-risk", Message: "Write note.txt", Worker: "UWORKERKEY",
		ExecuteToolName: "execute_write_file", ExecuteArgs: writeArgs}
	r.remote.Ask(m)
	rec := r.pendingFor("call_1")
	if rec.Request.Worker != "UWORKERKEY" || rec.Request.WorkDir != "" {
		t.Fatalf("request says worker %q, directory %q: want the worker and no directory of the run", rec.Request.Worker, rec.Request.WorkDir)
	}
	if err := r.decide(rec, r.alice, nil); err != nil {
		t.Fatal(err)
	}
	r.want(t, true, "remote:alice")
}

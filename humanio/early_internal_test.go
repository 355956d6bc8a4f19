package humanio

import (
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/jazz-run/jazz/messages"
)

type recorded struct {
	mu  sync.Mutex
	got []messages.ApprovalDecided
}

func (r *recorded) Publish(_ string, msg any, _ messages.Trace) error {
	if d, ok := msg.(messages.ApprovalDecided); ok {
		r.mu.Lock()
		r.got = append(r.got, d)
		r.mu.Unlock()
	}
	return nil
}

// With the event stream carrying approval requests, a bridge may answer
// before the request reaches the bridge on its own subject: the answer is
// kept and applied when the request arrives, not dropped as unknown.
func TestAnswerBeforeRequestIsApplied(t *testing.T) {
	pub := &recorded{}
	b := NewBridge("r", pub, io.Discard)
	b.EventsCarryApprovals()
	var warnings []string
	b.Serve(strings.NewReader(`{"type":"approval_decision","toolCallId":"call_7","approved":true}`+"\n"),
		func(w string) { warnings = append(warnings, w) })
	if len(pub.got) != 0 || len(warnings) != 0 {
		t.Fatalf("decided before the request existed: %+v %v", pub.got, warnings)
	}
	b.approvalRequired(messages.ApprovalRequired{ToolCallID: "call_7", ToolName: "write_file"})
	if len(pub.got) != 1 || !pub.got[0].Approved || pub.got[0].ToolCallID != "call_7" {
		t.Fatalf("early answer not applied: %+v", pub.got)
	}
}

// Without that mode an unknown id is reported and ignored at once.
func TestUnknownDecisionIsReported(t *testing.T) {
	pub := &recorded{}
	b := NewBridge("r", pub, io.Discard)
	var warnings []string
	b.Serve(strings.NewReader(`{"type":"approval_decision","toolCallId":"nope","approved":true}`+"\n"+`not json`+"\n"),
		func(w string) { warnings = append(warnings, w) })
	if len(pub.got) != 0 || len(warnings) != 2 {
		t.Fatalf("published %+v, warnings %v", pub.got, warnings)
	}
}

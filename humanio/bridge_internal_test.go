package humanio

import (
	"encoding/json"
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

// lines records what the bridge writes.
type lines struct {
	mu  sync.Mutex
	got []string
}

func (l *lines) WriteLine(b []byte) {
	l.mu.Lock()
	l.got = append(l.got, string(b))
	l.mu.Unlock()
}

func serve(b *Bridge, in ...string) []string {
	var warnings []string
	b.Serve(strings.NewReader(strings.Join(in, "\n")+"\n"), func(w string) { warnings = append(warnings, w) })
	return warnings
}

// TestBridgeMatchesRequestIDs: the bridge announces a request before it
// can be answered, and takes a decision only for the request id it
// announced, once. A decision sent ahead for a call id the model will
// reuse, or naming only the call, is never kept or applied.
func TestBridgeMatchesRequestIDs(t *testing.T) {
	pub, out := &recorded{}, &lines{}
	b := NewBridge("r", pub, out)
	// Ahead of any request: dropped, not kept for later.
	early := serve(b, `{"type":"approval_decision","toolCallId":"call_7","approved":true}`,
		`{"type":"approval_decision","requestId":"apr-guess","toolCallId":"call_7","approved":true}`)
	if len(pub.got) != 0 || len(early) != 2 {
		t.Fatalf("published %+v, warnings %v", pub.got, early)
	}

	pub, out = &recorded{}, &lines{}
	b = NewBridge("r", pub, out)
	b.approvalRequired(messages.ApprovalRequired{RequestID: "apr-1", ToolCallID: "call_7", ToolName: "write_file", Message: strings.Repeat("x", 500)})
	if len(out.got) != 1 {
		t.Fatalf("request lines: %v", out.got)
	}
	var line map[string]any
	if err := json.Unmarshal([]byte(out.got[0]), &line); err != nil || line["requestId"] != "apr-1" || line["toolCallId"] != "call_7" ||
		line["asked"] != true || len(line["message"].(string)) != 500 {
		t.Fatalf("request line %s (%v)", out.got[0], err)
	}
	warnings := serve(b,
		`{"type":"approval_decision","requestId":"apr-1","toolCallId":"call_8","approved":true}`,  // another call
		`{"type":"approval_decision","requestId":"apr-1","toolCallId":"call_7","approved":false}`, // the answer
		`{"type":"approval_decision","requestId":"apr-1","toolCallId":"call_7","approved":true}`,  // a second one
		`{"type":"approval_decision","toolCallId":"call_7","approved":true}`)                      // by call id, once decided
	if len(pub.got) != 1 || pub.got[0].Approved || pub.got[0].RequestID != "apr-1" || pub.got[0].ToolCallID != "call_7" {
		t.Fatalf("published %+v", pub.got)
	}
	if len(warnings) != 3 {
		t.Fatalf("warnings %v", warnings)
	}
}

// TestBridgeCallIDOnlyDecisions: the original's bridges answer by
// tool-call id alone. That decides the pending request announced under
// the id when it is the only one ever announced under it in the run; an
// id the model reused (a later batch, a sub-agent) decides nothing, so a
// stale or repeated decision never lands on a call nobody saw.
func TestBridgeCallIDOnlyDecisions(t *testing.T) {
	pub, out := &recorded{}, &lines{}
	b := NewBridge("r", pub, out)
	b.approvalRequired(messages.ApprovalRequired{RequestID: "apr-1", ToolCallID: "call_1", ToolName: "write_file"})
	if w := serve(b, `{"type":"approval_decision","toolCallId":"call_1","approved":true}`); len(w) != 0 || len(pub.got) != 1 ||
		!pub.got[0].Approved || pub.got[0].RequestID != "apr-1" {
		t.Fatalf("published %+v, warnings %v", pub.got, w)
	}

	pub, out = &recorded{}, &lines{}
	b = NewBridge("r", pub, out)
	b.approvalRequired(messages.ApprovalRequired{RequestID: "apr-1", ToolCallID: "call_1", ToolName: "read_secrets"})
	b.approvalRequired(messages.ApprovalRequired{RequestID: "apr-2", ToolCallID: "call_1", ToolName: "write_file",
		Place: messages.Place{AgentName: "child", Depth: 1}})
	w := serve(b,
		`{"type":"approval_decision","toolCallId":"call_1","approved":true}`, // which one? neither
		`{"type":"approval_decision","toolCallId":"","approved":true}`,
		`{"type":"approval_decision","requestId":"apr-2","approved":false}`)
	if len(pub.got) != 2 || pub.got[0].RequestID != "apr-2" || pub.got[0].Approved {
		t.Fatalf("published %+v (the EOF declines the rest)", pub.got)
	}
	if pub.got[1].RequestID != "apr-1" || pub.got[1].Approved {
		t.Fatalf("apr-1 was not declined at EOF: %+v", pub.got[1])
	}
	if len(w) != 2 || !strings.Contains(w[0], "2 gated calls of this run had that toolCallId") {
		t.Fatalf("warnings %v", w)
	}
}

// TestBridgeSaysOnceWhatStdinIs: text piped into a bridge is not the
// prompt; it is said once, not once a line.
func TestBridgeSaysOnceWhatStdinIs(t *testing.T) {
	b := NewBridge("r", &recorded{}, &lines{})
	w := serve(b, "diff --git a/x b/x", "--- a/x", "+++ b/x", "@@ -1 +1 @@")
	if len(w) != 2 || !strings.Contains(w[0], "the prompt and any text for it go in the argument") || !strings.Contains(w[1], "3 more") {
		t.Fatalf("warnings %v", w)
	}
}

// TestBridgeDeclinesAtEOF: stdin's end declines what is pending, and a
// request arriving after it is declined at once.
func TestBridgeDeclinesAtEOF(t *testing.T) {
	pub := &recorded{}
	b := NewBridge("r", pub, &lines{})
	b.approvalRequired(messages.ApprovalRequired{RequestID: "apr-1", ToolCallID: "a"})
	serve(b)
	b.approvalRequired(messages.ApprovalRequired{RequestID: "apr-2", ToolCallID: "b"})
	if len(pub.got) != 2 || pub.got[0].Approved || pub.got[1].Approved || pub.got[1].RequestID != "apr-2" {
		t.Fatalf("published %+v", pub.got)
	}
}

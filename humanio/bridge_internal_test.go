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
		`{"type":"approval_decision","toolCallId":"call_7","approved":true}`,                      // no request id
		`{"type":"approval_decision","requestId":"apr-1","toolCallId":"call_8","approved":true}`,  // another call
		`{"type":"approval_decision","requestId":"apr-1","toolCallId":"call_7","approved":false}`, // the answer
		`{"type":"approval_decision","requestId":"apr-1","toolCallId":"call_7","approved":true}`)  // a second one
	if len(pub.got) != 1 || pub.got[0].Approved || pub.got[0].RequestID != "apr-1" || pub.got[0].ToolCallID != "call_7" {
		t.Fatalf("published %+v", pub.got)
	}
	if len(warnings) != 3 {
		t.Fatalf("warnings %v", warnings)
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

package humanio

import (
	"strings"
	"testing"

	"github.com/jazz-run/jazz/messages"
)

// TestBridgeRefusesAnswersToSettledRequests: once the gate has settled a
// request some other way (a remote approver, the timeout, a cancel), a
// bridge answer to it decides nothing, whether it names the request id or
// only the call, and the warning says who settled it; its neighbour is
// still answered, and stdin's end declines only what is still pending.
func TestBridgeRefusesAnswersToSettledRequests(t *testing.T) {
	pub := &recorded{}
	b := NewBridge("r", pub, &lines{})
	b.approvalRequired(messages.ApprovalRequired{RequestID: "apr-1", ToolCallID: "a", ToolName: "write_file"})
	b.approvalRequired(messages.ApprovalRequired{RequestID: "apr-2", ToolCallID: "b", ToolName: "write_file"})
	b.approvalRequired(messages.ApprovalRequired{RequestID: "apr-3", ToolCallID: "c", ToolName: "write_file"})
	b.Settled(messages.ApprovalDecided{RequestID: "apr-1", DecidedBy: "remote:alice", Approved: false})
	b.Settled(messages.ApprovalDecided{RequestID: "apr-3", DecidedBy: "cancel"})
	w := serve(b,
		`{"type":"approval_decision","requestId":"apr-1","approved":true}`,
		`{"type":"approval_decision","toolCallId":"c","approved":true}`,
		`{"type":"approval_decision","requestId":"apr-2","approved":true}`,
	)
	if len(pub.got) != 1 || pub.got[0].RequestID != "apr-2" || !pub.got[0].Approved {
		t.Fatalf("published %+v, want only apr-2 approved (apr-1 and apr-3 were settled; nothing left to decline at EOF)", pub.got)
	}
	if len(w) != 2 || !strings.Contains(w[0], `"apr-1"`) || !strings.Contains(w[0], "already settled (remote:alice)") ||
		!strings.Contains(w[1], "already decided") {
		t.Fatalf("warnings %q", w)
	}
	// A request the bridge answered itself is settled by that answer:
	// the gate's word on it changes nothing more.
	b2 := NewBridge("r", &recorded{}, &lines{})
	b2.approvalRequired(messages.ApprovalRequired{RequestID: "apr-9", ToolCallID: "z"})
	b2.Settled(messages.ApprovalDecided{RequestID: "apr-unknown", DecidedBy: "x"})
	if _, ok := b2.approvals["apr-9"]; !ok {
		t.Fatal("settling another id took apr-9 off")
	}
}

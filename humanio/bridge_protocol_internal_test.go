package humanio

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/jazz-run/jazz/messages"
)

// TestBridgeSkipsOverlongLinesWhole: a stdin line longer than MaxLine is
// dropped whole, its tail included (a tail that is itself a decision
// decides nothing), and the protocol goes on: the next line is read. The
// bridge does not take the long line for the end of stdin.
func TestBridgeSkipsOverlongLinesWhole(t *testing.T) {
	pub, out := &recorded{}, &lines{}
	b := NewBridge("r", pub, out)
	b.approvalRequired(messages.ApprovalRequired{RequestID: "apr-1", ToolCallID: "a", ToolName: "write_file"})
	b.approvalRequired(messages.ApprovalRequired{RequestID: "apr-2", ToolCallID: "b", ToolName: "write_file"})
	approve1 := `{"type":"approval_decision","requestId":"apr-1","approved":true}`
	long := strings.Repeat(" ", MaxLine+10) + approve1 // its tail is a decision
	w := serve(b, long, `{"type":"approval_decision","requestId":"apr-2","approved":true}`)
	if len(pub.got) != 2 || pub.got[0].RequestID != "apr-2" || !pub.got[0].Approved {
		t.Fatalf("published %+v (apr-2 approved by the line after the long one, then apr-1 declined at EOF)", pub.got)
	}
	if pub.got[1].RequestID != "apr-1" || pub.got[1].Approved {
		t.Fatalf("the long line's tail decided apr-1: %+v", pub.got[1])
	}
	if len(w) != 1 || !strings.Contains(w[0], "longer than") {
		t.Fatalf("warnings %v", w)
	}
}

// TestBridgeRefusesAmbiguousLines: a decision line two JSON readers could
// read apart (a key twice, a key differing from a protocol key only in
// case, bytes that are not UTF-8, a field of the wrong type) decides
// nothing. A line with keys jazz does not know is taken.
func TestBridgeRefusesAmbiguousLines(t *testing.T) {
	refused := []string{
		`{"type":"approval_decision","requestId":"apr-1","approved":false,"approved":true}`,
		`{"type":"approval_decision","requestId":"apr-1","approved":false,"Approved":true}`,
		`{"type":"approval_decision","requestId":"apr-1","Approved":true}`,
		`{"type":"approval_decision","requeſtId":"apr-1","approved":true}`,
		`{"type":"approval_decision","requestId":"apr-1","requestId":"apr-2","approved":true}`,
		`{"type":"approval_decision","requestId":"apr-1","approved":"true"}`,
		"{\"type\":\"approval_decision\",\"requestId\":\"apr-1\",\"approved\":true,\"note\":\"\xff\"}",
		`{"type":"approval_decision","requestId":"apr-1","approved":true,"x":{"a":1,"a":2}}`,
	}
	for i, line := range refused {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			pub := &recorded{}
			b := NewBridge("r", pub, &lines{})
			b.approvalRequired(messages.ApprovalRequired{RequestID: "apr-1", ToolCallID: "a"})
			b.approvalRequired(messages.ApprovalRequired{RequestID: "apr-2", ToolCallID: "b"})
			w := serve(b, line)
			for _, d := range pub.got {
				if d.Approved {
					t.Fatalf("%s approved %s", line, d.RequestID)
				}
			}
			if len(w) != 1 || !strings.HasPrefix(w[0], "ignored a stdin line: ") {
				t.Fatalf("warnings %v", w)
			}
		})
	}
	pub := &recorded{}
	b := NewBridge("r", pub, &lines{})
	b.approvalRequired(messages.ApprovalRequired{RequestID: "apr-1", ToolCallID: "a"})
	if w := serve(b, `{"type":"approval_decision","requestId":"apr-1","approved":true,"via":"telegram"}`); len(w) != 0 || len(pub.got) != 1 || !pub.got[0].Approved {
		t.Fatalf("a line with an unknown key: published %+v, warnings %v", pub.got, w)
	}
}

// TestBridgeAnnouncesARequestIDOnce: a second request under a request id
// already announced never replaces what the person read. The same line
// again is a redelivery and changes nothing; a different one withdraws
// the id (the pending call is declined) and no answer to it approves.
func TestBridgeAnnouncesARequestIDOnce(t *testing.T) {
	shown := messages.ApprovalRequired{RequestID: "apr-1", ToolCallID: "a", ToolName: "execute_command", ExecuteToolName: "execute_command_exec",
		Message: "Run: ls", ExecuteArgs: json.RawMessage(`{"command":"ls"}`)}
	other := shown
	other.ToolCallID, other.Message, other.ExecuteArgs = "b", "Run: rm -rf ~", json.RawMessage(`{"command":"rm -rf ~"}`)

	pub, out := &recorded{}, &lines{}
	b := NewBridge("r", pub, out)
	b.approvalRequired(shown)
	b.approvalRequired(shown)
	if len(out.got) != 1 {
		t.Fatalf("a redelivery wrote another line: %v", out.got)
	}
	b.approvalRequired(other)
	if len(out.got) != 1 {
		t.Fatalf("a second request under apr-1 was shown: %v", out.got)
	}
	// The decline must reach the gate whichever of the two it asked: it
	// takes a decision only for its own call id.
	declined := map[string]bool{}
	for _, d := range pub.got {
		if !d.Approved && d.RequestID == "apr-1" {
			declined[d.ToolCallID] = true
		}
	}
	if len(pub.got) != 2 || !declined["a"] || !declined["b"] {
		t.Fatalf("the withdrawn id was not declined for both calls: %+v", pub.got)
	}
	serve(b, `{"type":"approval_decision","requestId":"apr-1","approved":true}`)
	if len(pub.got) != 2 {
		t.Fatalf("an answer to the withdrawn id was taken: %+v", pub.got)
	}
}

// TestBridgeBindsTheActionHash: the request line carries the action hash
// of exactly what will run, and a decision that echoes a hash is taken
// only when it is that one.
func TestBridgeBindsTheActionHash(t *testing.T) {
	pub, out := &recorded{}, &lines{}
	b := NewBridge("r", pub, out)
	b.approvalRequired(messages.ApprovalRequired{RequestID: "apr-1", ToolCallID: "a", ToolName: "write_file", ExecuteToolName: "execute_write_file",
		ExecuteArgs: json.RawMessage(`{"path":"a.txt","content":"x"}`)})
	var line struct {
		ActionHash string `json:"actionHash"`
	}
	if err := json.Unmarshal([]byte(out.got[0]), &line); err != nil || !strings.HasPrefix(line.ActionHash, "sha256:") {
		t.Fatalf("request line %s (%v)", out.got[0], err)
	}
	w := serve(b,
		`{"type":"approval_decision","requestId":"apr-1","approved":true,"actionHash":"sha256:00"}`,
		`{"type":"approval_decision","requestId":"apr-1","approved":true,"actionHash":"`+line.ActionHash+`"}`)
	if len(pub.got) != 1 || !pub.got[0].Approved || len(w) != 1 || !strings.Contains(w[0], "actionHash") {
		t.Fatalf("published %+v, warnings %v", pub.got, w)
	}
}

// TestBridgeDeclinesArgumentsItCannotShowExactly: execute arguments with
// a key twice (up to case) would read one way to a bridge's JSON parser
// and another to the tool's: the call is declined, never shown.
func TestBridgeDeclinesArgumentsItCannotShowExactly(t *testing.T) {
	for _, args := range []string{`{"path":"a","PATH":"b"}`, `{"old_string":"x","old_ſtring":"y"}`, `{"path":"a","path":"b"}`} {
		pub, out := &recorded{}, &lines{}
		b := NewBridge("r", pub, out)
		b.approvalRequired(messages.ApprovalRequired{RequestID: "apr-1", ToolCallID: "a", ToolName: "write_file", ExecuteToolName: "execute_write_file",
			ExecuteArgs: json.RawMessage(args)})
		if len(out.got) != 0 || len(pub.got) != 1 || pub.got[0].Approved {
			t.Fatalf("%s: lines %v, published %+v", args, out.got, pub.got)
		}
	}
}

// TestBridgeCallIDsAreWhatTheLineShows: a bridge echoes the tool-call id
// it decoded from the request line, where bytes that are not UTF-8 read
// as U+FFFD. The echo matches that request, and two ids the model sent
// apart that read the same count as one id: a call-id-only answer to
// the first never lands on the second.
func TestBridgeCallIDsAreWhatTheLineShows(t *testing.T) {
	pub, out := &recorded{}, &lines{}
	b := NewBridge("r", pub, out)
	b.approvalRequired(messages.ApprovalRequired{RequestID: "apr-1", ToolCallID: "a\xff", ToolName: "write_file"})
	var line struct {
		ToolCallID string `json:"toolCallId"`
	}
	if err := json.Unmarshal([]byte(out.got[0]), &line); err != nil {
		t.Fatal(err)
	}
	echo, _ := json.Marshal(line.ToolCallID)
	if w := serve(b, `{"type":"approval_decision","requestId":"apr-1","toolCallId":`+string(echo)+`,"approved":true}`); len(pub.got) != 1 || !pub.got[0].Approved || pub.got[0].ToolCallID != "a\xff" {
		t.Fatalf("the echoed id was refused: published %+v, warnings %v", pub.got, w)
	}

	pub, out = &recorded{}, &lines{}
	b = NewBridge("r", pub, out)
	b.approvalRequired(messages.ApprovalRequired{RequestID: "apr-1", ToolCallID: "a\xff", ToolName: "read_file"})
	b.decline(b.approvals["apr-1"], "timed out") // decided without the bridge
	delete(b.approvals, "apr-1")
	b.approvalRequired(messages.ApprovalRequired{RequestID: "apr-2", ToolCallID: "a\uFFFD", ToolName: "delete_file"})
	pub.got = nil
	w := serve(b, `{"type":"approval_decision","toolCallId":`+string(echo)+`,"approved":true}`)
	for _, d := range pub.got {
		if d.Approved {
			t.Fatalf("a late call-id-only answer to apr-1 approved %s", d.RequestID)
		}
	}
	if len(w) != 1 || !strings.Contains(w[0], "2 gated calls") {
		t.Fatalf("warnings %v", w)
	}
}

// TestBridgeLineSaysThePersona: a sub-agent's approval_required line
// carries its persona and task beside the name the model chose for it.
func TestBridgeLineSaysThePersona(t *testing.T) {
	out := &lines{}
	b := NewBridge("r", &recorded{}, out)
	b.approvalRequired(messages.ApprovalRequired{RequestID: "apr-1", ToolCallID: "a", ToolName: "write_file",
		Place: messages.Place{AgentName: "researcher", Depth: 1}, Persona: "coder", Task: "tidy the notes"})
	var line map[string]any
	if err := json.Unmarshal([]byte(out.got[0]), &line); err != nil || line["persona"] != "coder" || line["task"] != "tidy the notes" {
		t.Fatalf("request line %s (%v)", out.got[0], err)
	}
}

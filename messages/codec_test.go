package messages

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func place() Place {
	return Place{RunID: "run-1", AgentID: "a1", AgentName: "dev", Depth: 1, ToolCallID: "call_1"}
}

var trace = Trace{"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}

// roundTrip encodes v with the bus codec, decodes it as the same type and
// requires an identical value.
func roundTrip[T any](t *testing.T, v T) {
	t.Helper()
	data, err := Encode(v)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Decode[T](data)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, v) {
		t.Fatalf("round trip changed the message:\n sent %+v\n  got %+v\n wire %s", v, got, data)
	}
}

func TestEveryBusMessageRoundTrips(t *testing.T) {
	call := ToolCall{ID: "call_1", Name: "write_file", Arguments: `{"path":"x"}`}
	usage := Usage{PromptTokens: 10, CompletionTokens: 2, TotalTokens: 12, CacheReadTokens: 3}
	args := json.RawMessage(`{"path":"/tmp/x","content":"hi"}`)
	t.Run("RunRequested", func(t *testing.T) {
		roundTrip(t, RunRequested{Place: place(), Trace: trace, Prompt: "hi",
			History: []ChatMessage{{Role: RoleUser, Content: "before"}, {Role: RoleAssistant, Content: "ok", ToolCalls: []ToolCall{call}}}})
	})
	t.Run("ModelTurnCompleted", func(t *testing.T) {
		roundTrip(t, ModelTurnCompleted{Place: place(), Trace: trace, Iteration: 2, Usage: usage, Model: "m",
			Message: ChatMessage{Role: RoleAssistant, Reasoning: "think", ToolCalls: []ToolCall{call}}})
	})
	t.Run("ToolCallRequested", func(t *testing.T) {
		roundTrip(t, ToolCallRequested{Place: place(), Trace: trace, Iteration: 1, Call: call, Cwd: "/work"})
	})
	t.Run("ToolResultReady", func(t *testing.T) {
		roundTrip(t, ToolResultReady{Place: place(), Trace: trace, Call: call, DurationMs: 4, Executed: "execute_write_file", Declined: true,
			Result: ToolResult{Success: false, Result: json.RawMessage(`{"rejected":true}`), Error: "User rejected the operation",
				Approval: &ApprovalRequest{Message: "m", PreviewDiff: "--- a/x\n+++ b/x\n", ExecuteToolName: "execute_write_file", ExecuteArgs: args},
				Chdir:    "/work/sub"}})
	})
	t.Run("ApprovalRequired", func(t *testing.T) {
		roundTrip(t, ApprovalRequired{Place: place(), Trace: trace, RequestID: "apr-1", ToolCallID: "call_1", ToolName: "execute_command", RiskLevel: LevelUnknown,
			Message: "Command: ls", ExecuteToolName: "execute_execute_command", ExecuteArgs: args, Arguments: args, Command: "ls"})
	})
	t.Run("ApprovalDecided", func(t *testing.T) {
		roundTrip(t, ApprovalDecided{Place: place(), Trace: trace, RequestID: "apr-1", ToolCallID: "call_1", ToolName: "rm", Approved: true, Auto: false,
			DecidedBy: DecidedByRemote, Note: "ok", Remember: RememberTool, Judgement: json.RawMessage(`{"command":"ls","by":"human"}`)})
	})
	t.Run("PolicyChanged", func(t *testing.T) { roundTrip(t, PolicyChanged{Place: place(), Policy: PolicyLowRisk}) })
	t.Run("UserInputRequired", func(t *testing.T) {
		roundTrip(t, UserInputRequired{Place: place(), Trace: trace, RequestID: "ui-1", Question: "Which?", AllowCustom: true,
			Suggestions: []Suggestion{{Value: "a", Label: "A", Description: "first"}}})
	})
	t.Run("UserInputAnswered", func(t *testing.T) {
		roundTrip(t, UserInputAnswered{Place: place(), RequestID: "ui-1", Response: "a"})
	})
	t.Run("RunFinished", func(t *testing.T) {
		roundTrip(t, RunFinished{Place: place(), Trace: trace, OK: true, Answer: "4", CostUSD: 0.1, CostKnown: true, Usage: usage,
			ToolCalls: []AgentCall{{ToolCall: call, AgentID: "a", AgentName: "n", Depth: 1}}, Declined: []AgentCall{{ToolCall: call}}, Texts: []string{"t"}, Iterations: 3,
			Transcript: []ChatMessage{{Role: RoleSystem, Content: "s"}}})
	})
	t.Run("ActorFailed", func(t *testing.T) {
		roundTrip(t, ActorFailed{Place: place(), Actor: "pid", Reason: "boom", Role: RoleGate})
	})
	t.Run("CancelRun", func(t *testing.T) { roundTrip(t, CancelRun{Place: place(), Reason: "SIGTERM", Cause: CauseCancelled}) })
}

func TestEventRoundTripsBothErrorShapes(t *testing.T) {
	complete := Event{Type: EventToolExecutionComplete, Place: place(), Result: Ptr(`{"a":1}`), DurationMs: Ptr(int64(3)),
		Success: Ptr(false), ErrorText: "User rejected the operation"}
	failure := Event{Type: EventErrorType, Place: place(), Err: &EventError{Name: "ProviderError", Message: "HTTP 500"}, Recoverable: Ptr(true)}
	for _, ev := range []Event{complete, failure} {
		data, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		var got Event
		if err := json.Unmarshal(data, &got); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, ev) {
			t.Fatalf("event changed:\n sent %+v\n  got %+v", ev, got)
		}
	}
	data, _ := json.Marshal(complete)
	if !strings.Contains(string(data), `"error":"User rejected the operation"`) {
		t.Fatalf("tool_execution_complete error must be a string: %s", data)
	}
	data, _ = json.Marshal(failure)
	if !strings.Contains(string(data), `"error":{"name":"ProviderError","message":"HTTP 500"}`) {
		t.Fatalf("error event must carry an {name,message} object: %s", data)
	}
}

func TestSubjectsAreScopedAndSafe(t *testing.T) {
	if got := ApprovalDecidedSubject("run-1"); got != "jazz.run.run-1.approval.decided" {
		t.Fatal(got)
	}
	// A hostile id cannot add tokens or wildcards.
	if got := EventSubject("a.b.>*", "x y"); got != "jazz.run.a_b___.event.x_y" {
		t.Fatal(got)
	}
	if CategoryOf(EventToolCall) != CategoryTools || CategoryOf(EventErrorType) != CategoryAlways {
		t.Fatal("categories")
	}
}

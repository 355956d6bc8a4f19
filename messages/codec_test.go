package messages

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
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

func TestWorkMessagesRoundTrip(t *testing.T) {
	usage := Usage{PromptTokens: 3, CompletionTokens: 1, TotalTokens: 4}
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	temp := 0.5
	roundTrip(t, WorkTask{TaskID: "t1", Pool: "p", Kind: TaskSubagent, Place: place(), Trace: trace, Provider: "openai",
		Model: "m", SystemPrompt: "sys " + WorkDirMarker, Prompt: "do it", History: []ChatMessage{{Role: RoleUser, Content: "hi"}},
		Task: "brief", Tools: []string{"ls", "write_file", "execute_write_file"}, MaxIterations: 30, MaxDepth: 3,
		SubagentIterations: 30, SubagentTimeoutMs: 1000, ReasoningEffort: "low", Temperature: &temp,
		EnvAllowlist: []string{"GOPATH"}, Stream: true, TimeoutMs: 5000, Expires: now, Sent: now})
	roundTrip(t, WorkClaimed{TaskID: "t1", Worker: "UKEY", Name: "w1", Attempt: 2, LeaseMs: 2000, Version: "v1"})
	roundTrip(t, WorkBeat{TaskID: "t1", Attempt: 1, Usage: usage, UsageUnknown: true})
	roundTrip(t, WorkEvent{TaskID: "t1", Attempt: 1, Event: json.RawMessage(`{"type":"tool_call"}`), Trace: trace})
	roundTrip(t, WorkApproval{TaskID: "t1", Attempt: 1, Seq: 2, Required: ApprovalRequired{Place: place(), ToolCallID: "c",
		ToolName: "write_file", RiskLevel: LevelHighRisk, ExecuteToolName: "execute_write_file", ExecuteArgs: json.RawMessage(`{"path":"x"}`)}})
	roundTrip(t, WorkDecision{TaskID: "t1", Attempt: 1, Seq: 2, Decision: ApprovalDecided{Place: place(), ToolCallID: "c",
		Approved: true, DecidedBy: DecidedByBridge, Judgement: json.RawMessage(`{"by":"human"}`)}})
	roundTrip(t, WorkResult{TaskID: "t1", Attempt: 1, Finished: RunFinished{Place: place(), OK: true, Answer: "a",
		ToolCalls: []AgentCall{}}, Kind: "timeout", Reason: "r", Usage: usage, UsageUnknown: true,
		Calls: []AgentCall{{ToolCall: ToolCall{ID: "1", Name: "ls"}, AgentID: "x", Depth: 1}}, NotRetried: true})
	roundTrip(t, WorkCancel{TaskID: "t1", Reason: "stop", Kind: "cancelled", Below: 2})
	roundTrip(t, WorkGated{TaskID: "t1", Attempt: 1, Worker: "UKEY", Tool: "write_file", At: now})
	roundTrip(t, WorkerStatus{Worker: "UKEY", Name: "w", Pool: "p", Capacity: 4, Running: 1, Done: 9, Version: "v"})
}

func TestWorkSubjectsStayInTheirTokens(t *testing.T) {
	got := WorkerSubject("p.*", "W>", "run.1", "t 1", WorkKindResult)
	if got != "jazz.work.p__.w.W_.run_1.t_1.result" {
		t.Fatalf("subject %q", got)
	}
	if WorkRunWildcard("p", "r") != "jazz.work.p.w.*.r.>" || WorkDecisionSubject("p", "W", "t") != "jazz.work.p.to.W.t.decision" {
		t.Fatal("wildcards")
	}
}

package workerpool

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/jazz-run/jazz/actors"
	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/tools"
)

// A worker's approval request for the task's own agent is told to the
// person in the runner's words: the task and the persona the runner
// spawned it as, whatever the worker wrote; the tier is the runner's.
func TestCheckTellsTheRunnersPersona(t *testing.T) {
	h := func(context.Context, *tools.Env, json.RawMessage) tools.Result { return tools.OK("x") }
	reg, err := tools.NewRegistry(
		tools.Tool{Name: "write_file", Level: messages.LevelLowRisk, Twin: "execute_write_file", Handler: h},
		tools.Tool{Name: "execute_write_file", Level: messages.LevelLowRisk, Hidden: true, Handler: h})
	if err != nil {
		t.Fatal(err)
	}
	me := messages.Place{RunID: "r", AgentID: "subagent-1-1", AgentName: "Reviewer", Depth: 1, ParentAgentID: "top"}
	rt := &remote{cfg: actors.Config{Place: me, Registry: reg, Task: "review it", Persona: "researcher"}}
	req, why := rt.check(messages.ApprovalRequired{Place: me, ToolCallID: "c1", ToolName: "write_file", RiskLevel: messages.LevelReadOnly,
		ExecuteToolName: "execute_write_file", ExecuteArgs: json.RawMessage(`{}`), Task: "something else", Persona: "default"})
	if why != "" {
		t.Fatal(why)
	}
	if req.Persona != "researcher" || req.Task != "review it" || req.RiskLevel != messages.LevelLowRisk {
		t.Fatalf("request = persona %q task %q tier %q, want the runner's", req.Persona, req.Task, req.RiskLevel)
	}
}

// namesProtected finds a protected part in any string of a relayed
// call's arguments, nested, as written or cleaned, and nothing in
// arguments that name none.
func TestNamesProtected(t *testing.T) {
	for args, protected := range map[string]bool{
		`{"path":"/w/src/main.go","content":"package main\n// .git is ignored"}`: false,
		`{"command":"git status","workingDirectory":"/w"}`:                       false,
		`{"path":"/w/a.txt","content":"x"}`:                                      false,
		`{"path":"/w/.git/hooks/pre-commit"}`:                                    true,
		`{"source":"/w/a","destination":"/w/docs/agents.md"}`:                    true,
		`{"edits":[{"path":"/w/x"},{"path":"/w/.JAZZ/config.json"}]}`:            true,
		`{"path":"/w/x/../.agents/mcp.json"}`:                                    true,
		`not json`:                                                               true,
	} {
		if got := namesProtected(json.RawMessage(args)) != ""; got != protected {
			t.Errorf("namesProtected(%s) = %v, want %v", args, got, protected)
		}
	}
}

// A relayed request names the worker whose machine runs the call, as the
// runner heard it (the worker the task's current claim came from), never
// as the worker wrote it: a person approving it must not take it for a
// call on the run's own machine.
func TestCheckNamesTheWorker(t *testing.T) {
	h := func(context.Context, *tools.Env, json.RawMessage) tools.Result { return tools.OK("x") }
	reg, err := tools.NewRegistry(
		tools.Tool{Name: "write_file", Level: messages.LevelHighRisk, Twin: "execute_write_file", Handler: h},
		tools.Tool{Name: "execute_write_file", Level: messages.LevelHighRisk, Hidden: true, Handler: h})
	if err != nil {
		t.Fatal(err)
	}
	me := messages.Place{RunID: "r", AgentID: "subagent-1-1", AgentName: "Writer", Depth: 1, ParentAgentID: "top"}
	rt := &remote{cfg: actors.Config{Place: me, Registry: reg}, worker: "UWORKERKEY"}
	for _, claimed := range []string{"", "UOTHERWORKER"} {
		req, why := rt.check(messages.ApprovalRequired{Place: me, ToolCallID: "c1", ToolName: "write_file",
			ExecuteToolName: "execute_write_file", ExecuteArgs: json.RawMessage(`{}`), Worker: claimed})
		if why != "" {
			t.Fatal(why)
		}
		if req.Worker != "UWORKERKEY" {
			t.Errorf("worker claimed %q: request names worker %q, want the claiming worker UWORKERKEY", claimed, req.Worker)
		}
	}
}

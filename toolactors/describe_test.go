package toolactors_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/anthdm/hollywood/actor"

	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/supervisor"
	"github.com/jazz-run/jazz/toolactors"
	"github.com/jazz-run/jazz/tools"
)

// TestSinglePhaseToolDescribesItsApproval: a gated tool without a twin is
// gated before its handler with the message its Describe writes; a
// Describe error fails the call and nobody is asked.
func TestSinglePhaseToolDescribesItsApproval(t *testing.T) {
	ran := make(chan string, 2)
	tool := tools.Tool{Name: "send", Description: "d", Schema: json.RawMessage(`{"type":"object"}`), Level: messages.LevelHighRisk,
		Handler: func(context.Context, *tools.Env, json.RawMessage) tools.Result {
			ran <- "handler"
			return tools.OK("sent")
		},
		Describe: func(args json.RawMessage) (string, error) {
			if string(args) == `{"bad":true}` {
				return "", errors.New("Header names cannot be empty.")
			}
			return "POST https://example.com (1 header, masked)", nil
		}}
	reg, err := tools.NewRegistry(tool)
	if err != nil {
		t.Fatal(err)
	}
	e, err := actor.NewEngine(actor.NewEngineConfig())
	if err != nil {
		t.Fatal(err)
	}
	asked := make(chan string, 2)
	gate := e.SpawnFunc(func(ctx *actor.Context) {
		if m, ok := ctx.Message().(messages.ApprovalRequired); ok {
			asked <- m.Message
			ctx.Respond(messages.ApprovalDecided{ToolCallID: m.ToolCallID, Approved: true, DecidedBy: messages.DecidedByPolicy})
		}
	}, "gate")
	defer func() { <-e.Poison(gate).Done() }()
	call := func(id, args string) messages.ToolResultReady {
		done := make(chan messages.ToolResultReady, 1)
		place := messages.Place{RunID: "r", AgentID: "a", ToolCallID: id}
		deps := toolactors.Deps{Registry: reg, Env: &tools.Env{}, Gate: gate, Ctx: context.Background()}
		parent := e.SpawnFunc(func(ctx *actor.Context) {
			switch m := ctx.Message().(type) {
			case actor.Started:
				pid := ctx.SpawnChild(toolactors.New(deps), "call", actor.WithMiddleware(supervisor.Recover(place, nil)))
				ctx.Send(pid, messages.ToolCallRequested{Place: place, Call: messages.ToolCall{ID: id, Name: "send", Arguments: args}})
			case messages.ToolResultReady:
				done <- m
			}
		}, "parent-"+id)
		defer func() { <-e.Poison(parent).Done() }()
		select {
		case r := <-done:
			return r
		case <-time.After(5 * time.Second):
			t.Fatal("no result")
		}
		return messages.ToolResultReady{}
	}
	if r := call("c1", `{"bad":true}`); r.Result.Success || r.Result.Error != "Header names cannot be empty." {
		t.Fatalf("invalid: %+v", r.Result)
	}
	select {
	case m := <-asked:
		t.Fatalf("the gate was asked about an invalid call: %q", m)
	case h := <-ran:
		t.Fatalf("the %s ran", h)
	default:
	}
	if r := call("c2", `{}`); !r.Result.Success {
		t.Fatalf("valid: %+v", r.Result)
	}
	if m := <-asked; m != "POST https://example.com (1 header, masked)" {
		t.Errorf("the gate was asked %q", m)
	}
}

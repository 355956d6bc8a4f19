package toolactors_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/anthdm/hollywood/actor"

	"github.com/jazz-run/jazz/internal/faults"
	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/supervisor"
	"github.com/jazz-run/jazz/toolactors"
	"github.com/jazz-run/jazz/tools"
)

// unencodable panics when the call actor marshals the result.
type unencodable struct{}

func (unencodable) MarshalJSON() ([]byte, error) { panic("marshal exploded") }

// unappendable panics in its own encoder (tools.JSONAppender).
type unappendable struct{}

func (unappendable) AppendJSON([]byte) []byte { panic("append exploded") }

// TestCallActorPanics: a panic on the handler's goroutine, or in the
// encoding of its value, comes back as the call's failed result (the
// tool's bug); a panic inside the call actor's Receive (jazz's bug) is
// caught by the Recover middleware and reported to the agent as
// ActorFailed for that tool call. Either way the engine keeps running.
func TestCallActorPanics(t *testing.T) {
	reg, err := tools.NewRegistry(
		tools.Tool{Name: "handler_panics", Description: "d", Schema: json.RawMessage(`{"type":"object"}`), Level: messages.LevelReadOnly,
			Handler: func(context.Context, *tools.Env, json.RawMessage) tools.Result { panic("handler exploded") }},
		tools.Tool{Name: "receive_panics", Description: "d", Schema: json.RawMessage(`{"type":"object"}`), Level: messages.LevelReadOnly,
			Handler: func(context.Context, *tools.Env, json.RawMessage) tools.Result { return tools.OK(unencodable{}) }},
		tools.Tool{Name: "append_panics", Description: "d", Schema: json.RawMessage(`{"type":"object"}`), Level: messages.LevelReadOnly,
			Handler: func(context.Context, *tools.Env, json.RawMessage) tools.Result { return tools.OK(unappendable{}) }},
	)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, tool string
		crash      bool   // the call actor itself panics in Receive
		wantResult string // a ToolResultReady whose error contains this
		wantFailed string // or an ActorFailed whose reason contains this
	}{
		{name: "handler", tool: "handler_panics", wantResult: "Tool handler_panics failed unexpectedly: handler exploded"},
		{name: "encoding", tool: "receive_panics", wantResult: "tool result could not be encoded: marshal exploded"},
		{name: "own encoder", tool: "append_panics", wantResult: "tool result could not be encoded: append exploded"},
		{name: "receive", tool: "handler_panics", crash: true, wantFailed: "injected fault in the tool call actor"},
	}
	e, err := actor.NewEngine(actor.NewEngineConfig())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := make(chan any, 4)
			place := messages.Place{RunID: "r", AgentID: "a"}
			deps := toolactors.Deps{Registry: reg, Env: &tools.Env{WorkDir: t.TempDir()}, Ctx: context.Background()}
			parent := e.SpawnFunc(func(ctx *actor.Context) {
				switch m := ctx.Message().(type) {
				case actor.Started:
					p := place
					p.ToolCallID = "call_1"
					// As the agent does: on the engine, reporting to the agent.
					self := ctx.PID()
					report := func(rc *actor.Context, f supervisor.Failure) {
						rc.Send(self, messages.ActorFailed{Place: p, Actor: f.Actor, Reason: f.Reason})
					}
					producer := faults.Wrap[messages.ToolCallRequested](toolactors.New(deps), nil, c.crash, "tool call actor")
					pid := ctx.Engine().Spawn(producer, "call", actor.WithMiddleware(supervisor.Recover(p, report)))
					ctx.Send(pid, messages.ToolCallRequested{Place: p, Call: messages.ToolCall{ID: "call_1", Name: c.tool, Arguments: "{}"}})
				case messages.ToolResultReady, messages.ActorFailed:
					got <- m
				}
			}, "parent-"+c.name)
			defer func() { <-e.Poison(parent).Done() }()
			select {
			case m := <-got:
				switch m := m.(type) {
				case messages.ToolResultReady:
					if c.wantResult == "" || m.Result.Success || !strings.Contains(m.Result.Error, c.wantResult) || m.Call.ID != "call_1" {
						t.Fatalf("got result %+v, want failed with %q", m, c.wantResult)
					}
				case messages.ActorFailed:
					if c.wantFailed == "" || m.Place.ToolCallID != "call_1" || !strings.Contains(m.Reason, c.wantFailed) {
						t.Fatalf("got ActorFailed %+v, want reason with %q", m, c.wantFailed)
					}
				}
			case <-time.After(5 * time.Second):
				t.Fatal("the call actor reported nothing")
			}
		})
	}
}

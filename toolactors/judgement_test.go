package toolactors_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/anthdm/hollywood/actor"

	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/supervisor"
	"github.com/jazz-run/jazz/toolactors"
	"github.com/jazz-run/jazz/tools"
)

// TestTwinGetsTheGatesJudgement: the judgement in the gate's decision
// reaches the execute twin's context, beside its arguments; the propose
// half, which runs before any decision, sees none.
func TestTwinGetsTheGatesJudgement(t *testing.T) {
	seen := make(chan json.RawMessage, 2)
	schema := json.RawMessage(`{"type":"object"}`)
	pair := tools.Pair(tools.Tool{Name: "act", Description: "d", Schema: schema, Level: messages.LevelHighRisk,
		Handler: func(ctx context.Context, _ *tools.Env, _ json.RawMessage) tools.Result {
			seen <- tools.JudgementFrom(ctx)
			return tools.Result{Approval: &messages.ApprovalRequest{Message: "m", ExecuteToolName: "execute_act", ExecuteArgs: json.RawMessage(`{}`)}}
		}},
		func(ctx context.Context, _ *tools.Env, _ json.RawMessage) tools.Result {
			seen <- tools.JudgementFrom(ctx)
			return tools.OK("done")
		}, 0)
	reg, err := tools.NewRegistry(pair...)
	if err != nil {
		t.Fatal(err)
	}
	e, err := actor.NewEngine(actor.NewEngineConfig())
	if err != nil {
		t.Fatal(err)
	}
	judgement := json.RawMessage(`{"command":"make","by":"human"}`)
	gate := e.SpawnFunc(func(ctx *actor.Context) {
		if m, ok := ctx.Message().(messages.ApprovalRequired); ok {
			ctx.Respond(messages.ApprovalDecided{ToolCallID: m.ToolCallID, Approved: true, DecidedBy: messages.DecidedByPolicy, Judgement: judgement})
		}
	}, "gate")
	done := make(chan messages.ToolResultReady, 1)
	place := messages.Place{RunID: "r", AgentID: "a", ToolCallID: "call_1"}
	deps := toolactors.Deps{Registry: reg, Env: &tools.Env{WorkDir: t.TempDir()}, Gate: gate, Ctx: context.Background()}
	parent := e.SpawnFunc(func(ctx *actor.Context) {
		switch m := ctx.Message().(type) {
		case actor.Started:
			pid := ctx.SpawnChild(toolactors.New(deps), "call", actor.WithMiddleware(supervisor.Recover(place, nil)))
			ctx.Send(pid, messages.ToolCallRequested{Place: place, Call: messages.ToolCall{ID: "call_1", Name: "act", Arguments: "{}"}})
		case messages.ToolResultReady:
			done <- m
		}
	}, "parent")
	defer func() { <-e.Poison(parent).Done(); <-e.Poison(gate).Done() }()
	select {
	case r := <-done:
		if !r.Result.Success || r.Executed != "execute_act" {
			t.Fatalf("result %+v", r)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no result")
	}
	if got := <-seen; got != nil {
		t.Fatalf("the propose half saw a judgement: %s", got)
	}
	if got := <-seen; string(got) != string(judgement) {
		t.Fatalf("the twin saw %s, want %s", got, judgement)
	}
}

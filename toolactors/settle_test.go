package toolactors_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/anthdm/hollywood/actor"

	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/toolactors"
	"github.com/jazz-run/jazz/tools"
)

// TestTimedOutTwinReportsWhatItDid: when an approved twin's time runs
// out, the call reports what the twin says it did (stopped and undid, or
// finished anyway), not a bare "timed out" while the change goes on; a
// twin that does not stop within the grace makes the outcome "unknown",
// said as such.
func TestTimedOutTwinReportsWhatItDid(t *testing.T) {
	cases := []struct {
		name string
		twin tools.Handler
		want []string
		ok   bool
	}{
		{"stops and says so", func(ctx context.Context, _ *tools.Env, _ json.RawMessage) tools.Result {
			<-ctx.Done()
			return tools.Fail("w stopped because the tool's time limit was reached. Nothing was changed.")
		}, []string{"Operation timed out after", "Nothing was changed."}, false},
		{"finishes anyway", func(ctx context.Context, _ *tools.Env, _ json.RawMessage) tools.Result {
			<-ctx.Done()
			time.Sleep(20 * time.Millisecond)
			return tools.OK("File written: /x")
		}, []string{"File written: /x"}, true},
		{"does not stop", func(ctx context.Context, _ *tools.Env, _ json.RawMessage) tools.Result {
			<-ctx.Done()
			time.Sleep(2 * time.Second)
			return tools.OK("late")
		}, []string{"Operation timed out after", "may still complete"}, false},
	}
	e, err := actor.NewEngine(actor.NewEngineConfig())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pair := tools.Pair(tools.Tool{
				Name: "w", Description: "d", Schema: json.RawMessage(`{"type":"object"}`), Level: messages.LevelHighRisk,
				Handler: func(context.Context, *tools.Env, json.RawMessage) tools.Result {
					return tools.Result{Approval: &messages.ApprovalRequest{Message: "m", ExecuteToolName: "execute_w", ExecuteArgs: json.RawMessage(`{}`)}}
				},
			}, c.twin, 50*time.Millisecond)
			reg, err := tools.NewRegistry(pair...)
			if err != nil {
				t.Fatal(err)
			}
			gate := e.SpawnFunc(func(ctx *actor.Context) {
				if m, ok := ctx.Message().(messages.ApprovalRequired); ok {
					ctx.Send(ctx.Sender(), messages.ApprovalDecided{RequestID: m.RequestID, ToolCallID: m.ToolCallID, Approved: true})
				}
			}, "gate-"+strings.ReplaceAll(c.name, " ", "-"))
			defer func() { <-e.Poison(gate).Done() }()
			got := make(chan messages.ToolResultReady, 1)
			deps := toolactors.Deps{Registry: reg, Env: &tools.Env{WorkDir: t.TempDir()}, Ctx: context.Background(),
				Gate: gate, SettleGrace: 500 * time.Millisecond}
			parent := e.SpawnFunc(func(ctx *actor.Context) {
				switch m := ctx.Message().(type) {
				case actor.Started:
					pid := ctx.SpawnChild(toolactors.New(deps), "call")
					ctx.Send(pid, messages.ToolCallRequested{Place: messages.Place{RunID: "r", AgentID: "a", ToolCallID: "c1"},
						Call: messages.ToolCall{ID: "c1", Name: "w", Arguments: "{}"}})
				case messages.ToolResultReady:
					got <- m
				}
			}, "parent-"+strings.ReplaceAll(c.name, " ", "-"))
			defer func() { <-e.Poison(parent).Done() }()
			select {
			case m := <-got:
				text := m.Result.Error + string(m.Result.Result)
				if m.Result.Success != c.ok {
					t.Fatalf("success %v, want %v: %+v", m.Result.Success, c.ok, m.Result)
				}
				for _, w := range c.want {
					if !strings.Contains(text, w) {
						t.Fatalf("result %q lacks %q", text, w)
					}
				}
			case <-time.After(10 * time.Second):
				t.Fatal("no result")
			}
		})
	}
}

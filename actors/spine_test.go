package actors_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jazz-run/jazz/actors"
	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/provider"
	"github.com/jazz-run/jazz/tools"
)

// script is a ModelCaller playing answers in order and recording requests.
type script struct {
	mu    sync.Mutex
	turns []provider.Response
	reqs  []provider.Request
}

func (s *script) call(_ context.Context, req provider.Request, _ func(provider.Delta)) (provider.Response, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reqs = append(s.reqs, req)
	n := len(s.reqs) - 1
	if n >= len(s.turns) {
		return provider.Response{}, fmt.Errorf("script exhausted at request %d", n+1)
	}
	return s.turns[n], nil
}

func (s *script) requests() []provider.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]provider.Request(nil), s.reqs...)
}

func say(text string) provider.Response {
	return provider.Response{Message: messages.ChatMessage{Role: messages.RoleAssistant, Content: text},
		Usage: messages.Usage{PromptTokens: 10, CompletionTokens: 2, TotalTokens: 12}}
}

func ask(calls ...messages.ToolCall) provider.Response {
	return provider.Response{Message: messages.ChatMessage{Role: messages.RoleAssistant, ToolCalls: calls},
		Usage: messages.Usage{PromptTokens: 10, CompletionTokens: 2, TotalTokens: 12}}
}

func call(id, name string) messages.ToolCall {
	return messages.ToolCall{ID: id, Name: name, Arguments: "{}"}
}

const anyArgs = `{"type":"object"}`

func tool(name string, h tools.Handler) tools.Tool {
	return tools.Tool{Name: name, Description: name, Schema: json.RawMessage(anyArgs), Level: messages.LevelReadOnly, Handler: h}
}

// runAgent runs one agent on a real engine until it reports RunFinished.
func runAgent(tb testing.TB, reg *tools.Registry, s *script, maxIter int) messages.RunFinished {
	tb.Helper()
	return runPrompt(tb, actors.Config{Provider: "test", Model: "m", Call: s.call, Registry: reg, MaxIterations: maxIter}, "go")
}

func mustRegistry(tb testing.TB, ts ...tools.Tool) *tools.Registry {
	tb.Helper()
	reg, err := tools.NewRegistry(ts...)
	if err != nil {
		tb.Fatal(err)
	}
	return reg
}

// panicky's MarshalJSON panics, while the call actor encodes the result
// (encoding/json re-panics anything that is not its own error).
type panicky struct{}

func (panicky) MarshalJSON() ([]byte, error) { panic("cannot encode this value") }

// TestPanickingTools: a handler that panics on its goroutine, and a result
// whose encoding panics, are the tool's failures: each becomes a failed
// tool result the model sees, and the run goes on to its answer.
func TestPanickingTools(t *testing.T) {
	reg := mustRegistry(t,
		tool("boom", func(context.Context, *tools.Env, json.RawMessage) tools.Result { panic("handler exploded") }),
		tool("badvalue", func(context.Context, *tools.Env, json.RawMessage) tools.Result { return tools.OK(panicky{}) }),
		tool("fine", func(context.Context, *tools.Env, json.RawMessage) tools.Result { return tools.OK("fine result") }),
	)
	s := &script{turns: []provider.Response{
		ask(call("c1", "boom"), call("c2", "badvalue"), call("c3", "fine")),
		say("survived"),
	}}
	f := runAgent(t, reg, s, 5)
	if !f.OK || f.Answer != "survived" {
		t.Fatalf("run: ok=%v answer=%q error=%q", f.OK, f.Answer, f.Error)
	}
	reqs := s.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model calls, want 2", len(reqs))
	}
	var toolMsgs []messages.ChatMessage
	for _, m := range reqs[1].Messages {
		if m.Role == messages.RoleTool {
			toolMsgs = append(toolMsgs, m)
		}
	}
	want := []struct{ id, text string }{
		{"c1", "Tool boom failed unexpectedly: handler exploded"},
		{"c2", "tool result could not be encoded: cannot encode this value"},
		{"c3", "fine result"},
	}
	if len(toolMsgs) != len(want) {
		t.Fatalf("tool messages %+v", toolMsgs)
	}
	for i, w := range want {
		if toolMsgs[i].ToolCallID != w.id || !strings.Contains(toolMsgs[i].Content, w.text) {
			t.Errorf("tool message %d = %s %q, want %s containing %q", i, toolMsgs[i].ToolCallID, toolMsgs[i].Content, w.id, w.text)
		}
	}
}

// TestToolPanicsEveryTurn: five turns in a row whose tools all panic; the
// run ends normally.
func TestToolPanicsEveryTurn(t *testing.T) {
	reg := mustRegistry(t, tool("badvalue", func(context.Context, *tools.Env, json.RawMessage) tools.Result { return tools.OK(panicky{}) }))
	var turns []provider.Response
	for i := range 5 {
		turns = append(turns, ask(call(fmt.Sprintf("c%d", i), "badvalue"), call(fmt.Sprintf("d%d", i), "badvalue")))
	}
	turns = append(turns, say("still here"))
	s := &script{turns: turns}
	f := runAgent(t, reg, s, 10)
	if !f.OK || f.Answer != "still here" || f.Iterations != 6 {
		t.Fatalf("run: ok=%v answer=%q iterations=%d error=%q", f.OK, f.Answer, f.Iterations, f.Error)
	}
}

// TestToolTimeout: a handler that outlives its tool timeout becomes the
// spec's failed result and the run goes on.
func TestToolTimeout(t *testing.T) {
	slow := tool("slow", func(ctx context.Context, _ *tools.Env, _ json.RawMessage) tools.Result {
		<-ctx.Done()
		return tools.Fail("should not be seen")
	})
	slow.Timeout = 50 * time.Millisecond
	s := &script{turns: []provider.Response{ask(call("c1", "slow")), say("ok")}}
	f := runAgent(t, mustRegistry(t, slow), s, 5)
	if !f.OK {
		t.Fatalf("run failed: %s", f.Error)
	}
	got := s.requests()[1].Messages
	last := got[len(got)-1]
	if last.Role != messages.RoleTool || !strings.Contains(last.Content, "Operation timed out after '0m'") {
		t.Fatalf("tool message %+v", last)
	}
}

// TestConcurrencyCap counts handlers in flight: with 25 calls in one turn,
// never more than MaxConcurrentCalls run at once, and the cap is reached.
func TestConcurrencyCap(t *testing.T) {
	var cur, peak atomic.Int32
	counting := tool("count", func(ctx context.Context, _ *tools.Env, _ json.RawMessage) tools.Result {
		n := cur.Add(1)
		defer cur.Add(-1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		// Hold the slot long enough for the others to start.
		select {
		case <-time.After(40 * time.Millisecond):
		case <-ctx.Done():
		}
		return tools.OK(fmt.Sprintf("in flight: %d", n))
	})
	var cs []messages.ToolCall
	for i := range 25 {
		cs = append(cs, call(fmt.Sprintf("c%02d", i), "count"))
	}
	s := &script{turns: []provider.Response{ask(cs...), say("counted")}}
	f := runAgent(t, mustRegistry(t, counting), s, 5)
	if !f.OK {
		t.Fatalf("run failed: %s", f.Error)
	}
	if p := peak.Load(); p != actors.MaxConcurrentCalls {
		t.Fatalf("peak in flight %d, want %d", p, actors.MaxConcurrentCalls)
	}
	var ids []string
	for _, m := range s.requests()[1].Messages {
		if m.Role == messages.RoleTool {
			ids = append(ids, m.ToolCallID)
		}
	}
	for i, id := range ids {
		if id != cs[i].ID {
			t.Fatalf("tool results out of call order: %v", ids)
		}
	}
	if len(ids) != len(cs) {
		t.Fatalf("%d tool results, want %d", len(ids), len(cs))
	}
}

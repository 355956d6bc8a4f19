package replay

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/provider"
)

const demo = `{
  "conversations": [
    {"match": "go.mod", "turns": [
      {"reasoning": "Read it first.", "text": "Let me look.",
       "toolCalls": [{"name": "read_file", "arguments": {"path": "go.mod"}}, {"name": "ls", "arguments": "{broken"}],
       "usage": {"promptTokens": 10, "completionTokens": 5}},
      {"text": "It says: {{lastToolResult}} (first: {{toolResult:1}})"}
    ]},
    {"match": "flaky", "turns": [
      {"text": "recovered", "error": {"status": 503, "message": "overloaded"}},
      {"error": {"status": 400, "message": "bad", "times": -1}},
      {"text": "slow", "delayMs": 60000}
    ]},
    {"turns": [{"text": "default answer"}]}
  ]
}`

func user(s string) messages.ChatMessage {
	return messages.ChatMessage{Role: messages.RoleUser, Content: s}
}

func load(t *testing.T, script string) *Provider {
	t.Helper()
	path := filepath.Join(t.TempDir(), "demo.json")
	if err := os.WriteFile(path, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := Load(context.Background(), path)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return p
}

func TestConversationTurns(t *testing.T) {
	p := load(t, demo)
	ctx := context.Background()

	first := []messages.ChatMessage{{Role: messages.RoleSystem, Content: "sys"}, user("read go.mod please")}
	var deltas []provider.Delta
	r1, err := p.Chat(ctx, provider.Request{Messages: first, Stream: true}, func(d provider.Delta) { deltas = append(deltas, d) })
	if err != nil {
		t.Fatalf("turn 1: %v", err)
	}
	want1 := provider.Response{
		ID: "replay-1-1", Model: "replay/demo.json",
		Message: messages.ChatMessage{Role: "assistant", Content: "Let me look.", Reasoning: "Read it first.", ToolCalls: []messages.ToolCall{
			{ID: "call_0", Name: "read_file", Arguments: `{"path":"go.mod"}`},
			{ID: "call_1", Name: "ls", Arguments: `{broken`},
		}},
		Usage: messages.Usage{PromptTokens: 10, CompletionTokens: 5, TotalTokens: 15}, UsageReported: true,
	}
	if !reflect.DeepEqual(r1, want1) {
		t.Errorf("turn 1:\n%+v\nwant\n%+v", r1, want1)
	}
	var text, reasoning strings.Builder
	for _, d := range deltas {
		text.WriteString(d.Text)
		reasoning.WriteString(d.Reasoning)
	}
	if text.String() != "Let me look." || reasoning.String() != "Read it first." || len(deltas) < 3 {
		t.Errorf("deltas %q", deltas)
	}

	second := append(first, r1.Message,
		messages.ChatMessage{Role: messages.RoleTool, ToolCallID: "call_0", Content: "module x"},
		messages.ChatMessage{Role: messages.RoleTool, ToolCallID: "call_1", Content: "invalid arguments"})
	r2, err := p.Chat(ctx, provider.Request{Messages: second}, nil)
	if err != nil {
		t.Fatalf("turn 2: %v", err)
	}
	if want := "It says: invalid arguments (first: module x)"; r2.Message.Content != want || r2.UsageReported {
		t.Errorf("turn 2 = %q (usage %v), want %q", r2.Message.Content, r2.UsageReported, want)
	}

	third := append(second, r2.Message)
	if _, err := p.Chat(ctx, provider.Request{Messages: third}, nil); err == nil || !strings.Contains(err.Error(), "script ran out") {
		t.Errorf("past the end: %v", err)
	}

	// A new user message starts again at turn 1.
	again := append(third, user("and again"))
	r4, err := p.Chat(ctx, provider.Request{Messages: again}, nil)
	if err != nil || r4.Message.Content != "Let me look." {
		t.Errorf("new user turn: %q %v", r4.Message.Content, err)
	}
	if r4.Message.ToolCalls[0].ID != "call_2" {
		t.Errorf("ids restart: %q, want call_2 (unique within the conversation)", r4.Message.ToolCalls[0].ID)
	}
}

func TestPickConversation(t *testing.T) {
	p := load(t, demo)
	tests := []struct{ first, want string }{
		{"what is in go.mod?", "Let me look."},
		{"hello", "default answer"},
	}
	for _, tt := range tests {
		t.Run(tt.first, func(t *testing.T) {
			// The match reads the first user message, not the last.
			r, err := p.Chat(context.Background(), provider.Request{Messages: []messages.ChatMessage{user(tt.first), {Role: "assistant", Content: "x"}, user("go.mod flaky")}}, nil)
			if err != nil || r.Message.Content != tt.want {
				t.Errorf("got %q %v, want %q", r.Message.Content, err, tt.want)
			}
		})
	}
}

func TestScriptedErrors(t *testing.T) {
	p := load(t, demo)
	ctx := context.Background()
	msgs := []messages.ChatMessage{user("flaky task")}

	_, err := p.Chat(ctx, provider.Request{Messages: msgs}, nil)
	var pe *provider.Error
	if !errors.As(err, &pe) || pe.Status != 503 || !pe.Retryable {
		t.Fatalf("first call: %v, want a retryable 503", err)
	}
	r, err := p.Chat(ctx, provider.Request{Messages: msgs}, nil)
	if err != nil || r.Message.Content != "recovered" {
		t.Fatalf("retry: %q %v, want recovered", r.Message.Content, err)
	}

	msgs = append(msgs, r.Message)
	for range 3 {
		_, err = p.Chat(ctx, provider.Request{Messages: msgs}, nil)
		if !errors.As(err, &pe) || pe.Status != 400 || pe.Retryable {
			t.Fatalf("always-failing turn: %v", err)
		}
	}

	// delayMs honors ctx.
	msgs = append(msgs, messages.ChatMessage{Role: "assistant"})
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := p.Chat(cctx, provider.Request{Messages: msgs}, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("delayed turn with a cancelled ctx: %v", err)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct{ name, script, want string }{
		{"empty", `{}`, "no turns"},
		{"both forms", `{"turns":[{"text":"a"}],"conversations":[{"turns":[]}]}`, "not both"},
		{"misspelt field", `{"turns":[{"txt":"a"}]}`, `unknown field "txt"`},
		{"nameless tool call", `{"turns":[{"toolCalls":[{"arguments":{}}]}]}`, "has no name"},
		{"not JSON", `turns:`, "parse"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("x.json", []byte(tt.script))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestPlaceholders(t *testing.T) {
	p, err := Parse("s", []byte(`{"turns":[{"text":"{{toolResult:2}}"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Chat(context.Background(), provider.Request{Messages: []messages.ChatMessage{user("x")}}, nil)
	if err == nil || !strings.Contains(err.Error(), "has 0 tool results") {
		t.Errorf("missing tool result: %v", err)
	}
}

func TestResolve(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "demo.json"), []byte(`{"turns":[{"text":"a"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	abs := filepath.Join(dir, "demo.json")
	tests := []struct{ script, want string }{
		{abs, abs},
		{"demo.json", abs},
		{"demo", abs},
	}
	for _, tt := range tests {
		t.Run(tt.script, func(t *testing.T) {
			got, err := Resolve(tt.script, dir)
			if err != nil || got != tt.want {
				t.Errorf("Resolve(%q) = %q %v, want %q", tt.script, got, err, tt.want)
			}
		})
	}
	if _, err := Resolve("nope", dir); err == nil || !strings.Contains(err.Error(), "nope.json") {
		t.Errorf("missing script: %v", err)
	}
}

func TestRuntimeNoticesDoNotRestartTheScript(t *testing.T) {
	p, err := Parse("notice", []byte(`{"turns":[{"toolCalls":[{"name":"ls"}]},{"text":"second"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	req := provider.Request{Messages: []messages.ChatMessage{
		{Role: messages.RoleUser, Content: "go"},
		{Role: messages.RoleAssistant, ToolCalls: []messages.ToolCall{{ID: "call_0", Name: "ls", Arguments: "{}"}}},
		{Role: messages.RoleTool, ToolCallID: "call_0", Content: "[]"},
		{Role: messages.RoleUser, Content: "[BUDGET WARNING: Iteration 7/10 (70%). Consolidate.]"},
	}}
	resp, err := p.Chat(context.Background(), req, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Message.Content != "second" {
		t.Fatalf("a budget notice restarted the script: %q", resp.Message.Content)
	}
}

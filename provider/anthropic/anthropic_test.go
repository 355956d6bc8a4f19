package anthropic_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/pricing"
	"github.com/jazz-run/jazz/provider"
	"github.com/jazz-run/jazz/provider/anthropic"
	"github.com/jazz-run/jazz/provider/registry"
	"github.com/jazz-run/jazz/provider/retry"
)

// fake is an in-test Messages API: each request is recorded, and answered
// by the next reply.
type fake struct {
	t       *testing.T
	mu      sync.Mutex
	bodies  []map[string]any
	headers []http.Header
	paths   []string
	replies []func(w http.ResponseWriter)
}

func newFake(t *testing.T, replies ...func(w http.ResponseWriter)) (*fake, *httptest.Server) {
	f := &fake{t: t, replies: replies}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var body map[string]any
		if err := json.Unmarshal(raw, &body); err != nil {
			t.Errorf("request body is not JSON: %v\n%s", err, raw)
		}
		f.mu.Lock()
		n := len(f.bodies)
		f.bodies = append(f.bodies, body)
		f.headers = append(f.headers, r.Header.Clone())
		f.paths = append(f.paths, r.URL.Path)
		f.mu.Unlock()
		if n >= len(f.replies) {
			http.Error(w, "no more replies", 500)
			return
		}
		f.replies[n](w)
	}))
	t.Cleanup(srv.Close)
	return f, srv
}

func (f *fake) body(i int) map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.bodies[i]
}

// sse writes events in the Messages wire format: `event: <type>` and
// `data: <json>` lines, a blank line after each.
func sse(events ...string) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, e := range events {
			var probe struct {
				Type string `json:"type"`
			}
			_ = json.Unmarshal([]byte(e), &probe)
			fmt.Fprintf(w, "event: %s\ndata: %s\n\n", probe.Type, e)
			if fl, ok := w.(http.Flusher); ok {
				fl.Flush()
			}
		}
	}
}

func status(code int, body string) func(w http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		io.WriteString(w, body)
	}
}

const signature = "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds4Ff9N1j"

// toolTurn is a real-shaped stream: thinking with its signature, text, a
// tool_use whose input arrives in pieces, pings, cache usage.
var toolTurn = []string{
	`{"type":"message_start","message":{"id":"msg_01","type":"message","role":"assistant","content":[],"model":"claude-sonnet-4-5","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":25,"cache_creation_input_tokens":1000,"cache_read_input_tokens":2000,"output_tokens":1}}}`,
	`{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`,
	`{"type":"ping"}`,
	`{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Let me think"}}`,
	`{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":" about it."}}`,
	`{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"` + signature + `"}}`,
	`{"type":"content_block_stop","index":0}`,
	`{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}`,
	`{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"I'll list"}}`,
	`{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":" the files."}}`,
	`{"type":"content_block_stop","index":1}`,
	`{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_01","name":"ls","input":{}}}`,
	`{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":""}}`,
	`{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"path\": "}}`,
	`{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"\".\"}"}}`,
	`{"type":"content_block_stop","index":2}`,
	`{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":89}}`,
	`{"type":"message_stop"}`,
}

var answerTurn = []string{
	`{"type":"message_start","message":{"id":"msg_02","type":"message","role":"assistant","content":[],"model":"claude-sonnet-4-5","usage":{"input_tokens":40,"cache_read_input_tokens":3000,"output_tokens":1}}}`,
	`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
	`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Two files."}}`,
	`{"type":"content_block_stop","index":0}`,
	`{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":5}}`,
	`{"type":"message_stop"}`,
}

func client(srv *httptest.Server) *anthropic.Client {
	return anthropic.New(anthropic.Options{BaseURL: srv.URL, APIKey: "sk-ant-test"})
}

var lsTool = messages.ToolSpec{Name: "ls", Description: "List a directory.", Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)}

func TestStreamedToolTurnWithThinkingAndCache(t *testing.T) {
	f, srv := newFake(t, sse(toolTurn...))
	var deltas []provider.Delta
	temp := 0.5
	resp, err := client(srv).Chat(context.Background(), provider.Request{
		Model: "claude-sonnet-4-5", Stream: true, ReasoningEffort: "medium", Temperature: &temp, Tools: []messages.ToolSpec{lsTool},
		Messages: []messages.ChatMessage{{Role: messages.RoleSystem, Content: "Be brief."}, {Role: messages.RoleUser, Content: "What is here?"}},
	}, func(d provider.Delta) { deltas = append(deltas, d) })
	if err != nil {
		t.Fatal(err)
	}
	// The request, as the wire format has it.
	h := f.headers[0]
	if h.Get("X-Api-Key") != "sk-ant-test" || h.Get("Anthropic-Version") != "2023-06-01" || h.Get("Authorization") != "" || f.paths[0] != "/v1/messages" {
		t.Errorf("headers %v path %s", h, f.paths[0])
	}
	b := f.body(0)
	want := map[string]any{
		"model": "claude-sonnet-4-5", "stream": true, "max_tokens": float64(8192 + 8192),
		"thinking": map[string]any{"type": "enabled", "budget_tokens": float64(8192)},
		"system":   []any{map[string]any{"type": "text", "text": "Be brief.", "cache_control": map[string]any{"type": "ephemeral"}}},
		"messages": []any{map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "What is here?", "cache_control": map[string]any{"type": "ephemeral"}}}}},
		"tools": []any{map[string]any{"name": "ls", "description": "List a directory.", "cache_control": map[string]any{"type": "ephemeral"},
			"input_schema": map[string]any{"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}}}}},
	}
	if !jsonEqual(b, want) {
		t.Errorf("request body\n got %s\nwant %s", js(b), js(want))
	}
	// The answer.
	if resp.ID != "msg_01" || resp.StopReason != "tool_use" || resp.Message.Content != "I'll list the files." || resp.Message.Reasoning != "Let me think about it." {
		t.Errorf("response %+v", resp)
	}
	if len(resp.Message.Thinking) != 1 || resp.Message.Thinking[0] != (messages.ThinkingBlock{Thinking: "Let me think about it.", Signature: signature}) {
		t.Errorf("thinking %+v", resp.Message.Thinking)
	}
	if len(resp.Message.ToolCalls) != 1 || resp.Message.ToolCalls[0] != (messages.ToolCall{ID: "toolu_01", Name: "ls", Arguments: `{"path": "."}`}) {
		t.Errorf("tool calls %+v", resp.Message.ToolCalls)
	}
	wantUsage := messages.Usage{PromptTokens: 3025, CompletionTokens: 89, TotalTokens: 3114, CacheReadTokens: 2000, CacheWriteTokens: 1000}
	if !resp.UsageReported || resp.Usage != wantUsage {
		t.Errorf("usage %+v, want %+v", resp.Usage, wantUsage)
	}
	got := ""
	for _, d := range deltas {
		got += "[" + d.Reasoning + "|" + d.Text + "]"
	}
	if got != "[Let me think|][ about it.|][|I'll list][| the files.]" {
		t.Errorf("deltas %s", got)
	}
	// Cache-aware cost: the uncached, written and read parts each at their price.
	price, ok := pricing.Lookup("anthropic", "claude-sonnet-4-5", nil)
	if !ok {
		t.Fatal("no price for claude-sonnet-4-5")
	}
	cost, known := pricing.Cost(price, resp.Usage)
	if wantCost := pricing.Round8((25*3.0 + 2000*0.3 + 1000*3.75 + 89*15.0) / 1e6); !known || cost != wantCost {
		t.Errorf("cost %v (known %v), want %v", cost, known, wantCost)
	}
}

// TestThinkingSignatureRoundTrip: the next request carries the assistant
// turn back as it came, thinking block and signature first, and the tool
// result in the following user turn.
func TestThinkingSignatureRoundTrip(t *testing.T) {
	f, srv := newFake(t, sse(toolTurn...), sse(answerTurn...))
	c := client(srv)
	req := provider.Request{Model: "claude-sonnet-4-5", Stream: true, ReasoningEffort: "high", Tools: []messages.ToolSpec{lsTool},
		Messages: []messages.ChatMessage{{Role: messages.RoleUser, Content: "What is here?"}}}
	first, err := c.Chat(context.Background(), req, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Through the transcript store and back, as a conversation would go.
	raw, _ := json.Marshal(first.Message)
	var stored messages.ChatMessage
	if err := json.Unmarshal(raw, &stored); err != nil {
		t.Fatal(err)
	}
	req.Messages = append(req.Messages, stored,
		messages.ChatMessage{Role: messages.RoleTool, ToolCallID: "toolu_01", Name: "ls", Content: `["a.go","b.go"]`},
		messages.ChatMessage{Role: messages.RoleUser, Content: "Be quick."})
	second, err := c.Chat(context.Background(), req, nil)
	if err != nil {
		t.Fatal(err)
	}
	if second.Message.Content != "Two files." || second.StopReason != "end_turn" || second.Usage.CacheReadTokens != 3000 || second.Usage.PromptTokens != 3040 {
		t.Errorf("second %+v", second)
	}
	msgs := f.body(1)["messages"].([]any)
	wantAssistant := map[string]any{"role": "assistant", "content": []any{
		map[string]any{"type": "thinking", "thinking": "Let me think about it.", "signature": signature},
		map[string]any{"type": "text", "text": "I'll list the files."},
		map[string]any{"type": "tool_use", "id": "toolu_01", "name": "ls", "input": map[string]any{"path": "."}},
	}}
	wantUser := map[string]any{"role": "user", "content": []any{
		map[string]any{"type": "tool_result", "tool_use_id": "toolu_01", "content": `["a.go","b.go"]`},
		map[string]any{"type": "text", "text": "Be quick.", "cache_control": map[string]any{"type": "ephemeral"}},
	}}
	if len(msgs) != 3 || !jsonEqual(msgs[1], wantAssistant) || !jsonEqual(msgs[2], wantUser) {
		t.Errorf("second request's messages:\n%s", js(msgs))
	}
	if th := f.body(1)["thinking"]; !jsonEqual(th, map[string]any{"type": "enabled", "budget_tokens": 16384}) {
		t.Errorf("thinking %v", th)
	}
}

func TestRequestMapping(t *testing.T) {
	f, srv := newFake(t, sse(answerTurn...), sse(answerTurn...), sse(answerTurn...))
	c := client(srv)
	temp := 0.2
	// A tool loop begun without thinking: thinking stays off, temperature goes.
	_, err := c.Chat(context.Background(), provider.Request{Model: "claude-3-opus-20240229", Stream: true, ReasoningEffort: "low", Temperature: &temp,
		Messages: []messages.ChatMessage{
			{Role: messages.RoleUser, Content: "hi"},
			{Role: messages.RoleAssistant, ToolCalls: []messages.ToolCall{{ID: "t1", Name: "ls", Arguments: `{}`}, {ID: "t2", Name: "ls", Arguments: `not json`}}},
			{Role: messages.RoleTool, ToolCallID: "t1", Content: "r1"},
			{Role: messages.RoleTool, ToolCallID: "t2", Content: "r2"},
		}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	b := f.body(0)
	if b["thinking"] != nil || b["temperature"] != 0.2 || b["max_tokens"] != float64(4096) {
		t.Errorf("thinking %v temperature %v max_tokens %v", b["thinking"], b["temperature"], b["max_tokens"])
	}
	msgs := b["messages"].([]any)
	if len(msgs) != 3 {
		t.Fatalf("messages %s", js(msgs))
	}
	tools := msgs[2].(map[string]any)["content"].([]any)
	if len(tools) != 2 || tools[0].(map[string]any)["tool_use_id"] != "t1" || tools[1].(map[string]any)["tool_use_id"] != "t2" {
		t.Errorf("tool results in one user turn: %s", js(msgs[2]))
	}
	if in := msgs[1].(map[string]any)["content"].([]any)[1].(map[string]any)["input"]; !jsonEqual(in, map[string]any{}) {
		t.Errorf("arguments that are not an object go back as {}: %v", in)
	}
	// Redacted thinking goes back as it came.
	_, err = c.Chat(context.Background(), provider.Request{Model: "claude-sonnet-4-5", ReasoningEffort: "low", Stream: true,
		Messages: []messages.ChatMessage{
			{Role: messages.RoleUser, Content: "hi"},
			{Role: messages.RoleAssistant, Thinking: []messages.ThinkingBlock{{Redacted: "EmwKAhgBEgy3va3pzix"}}, ToolCalls: []messages.ToolCall{{ID: "t1", Name: "ls", Arguments: `{}`}}},
			{Role: messages.RoleTool, ToolCallID: "t1", Content: "r1"},
		}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	first := f.body(1)["messages"].([]any)[1].(map[string]any)["content"].([]any)[0]
	if !jsonEqual(first, map[string]any{"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix"}) || f.body(1)["thinking"] == nil {
		t.Errorf("redacted thinking: %s, thinking %v", js(first), f.body(1)["thinking"])
	}
	if _, err := c.Chat(context.Background(), provider.Request{Model: "m", Messages: []messages.ChatMessage{{Role: messages.RoleTool, Content: "x"}}}, nil); err == nil {
		t.Error("a tool result without an id was sent")
	}
}

func TestBatchAnswer(t *testing.T) {
	_, srv := newFake(t, status(200, `{"id":"msg_b","type":"message","role":"assistant","model":"claude-haiku-4-5","stop_reason":"tool_use",
"content":[{"type":"thinking","thinking":"hmm","signature":"sig"},{"type":"text","text":"Reading."},{"type":"tool_use","id":"toolu_9","name":"read_file","input":{"path":"go.mod"}}],
"usage":{"input_tokens":10,"output_tokens":7,"cache_read_input_tokens":0,"cache_creation_input_tokens":50}}`))
	resp, err := client(srv).Chat(context.Background(), provider.Request{Model: "claude-haiku-4-5", Messages: []messages.ChatMessage{{Role: messages.RoleUser, Content: "go"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Message.Content != "Reading." || resp.Message.Thinking[0].Signature != "sig" || resp.Message.ToolCalls[0].Arguments != `{"path":"go.mod"}` ||
		resp.Usage.PromptTokens != 60 || resp.Usage.CacheWriteTokens != 50 || resp.StopReason != "tool_use" {
		t.Errorf("%+v", resp)
	}
}

func TestErrorsAndRetries(t *testing.T) {
	overloaded := `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`
	cases := []struct {
		name      string
		reply     func(w http.ResponseWriter)
		retryable bool
		contains  string
	}{
		{"429", status(429, `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`), true, "rate_limit_error: slow down"},
		{"529 overloaded", status(529, overloaded), true, "Server error (529)"},
		{"500", status(500, `{"type":"error","error":{"type":"api_error","message":"boom"}}`), true, "api_error: boom"},
		{"400", status(400, `{"type":"error","error":{"type":"invalid_request_error","message":"messages: roles must alternate"}}`), false, "roles must alternate"},
		{"401", status(401, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`), false, "Authentication failed"},
		{"overloaded mid-stream", sse(answerTurn[0], answerTurn[1], overloaded), true, "overloaded_error"},
		{"invalid mid-stream", sse(answerTurn[0], `{"type":"error","error":{"type":"invalid_request_error","message":"bad"}}`), false, "invalid_request_error: bad"},
		{"cut before message_stop", sse(answerTurn[:4]...), true, "before message_stop"},
		{"bad JSON", sse(`{"type":"message_start","message":`), true, "bad JSON"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, srv := newFake(t, tc.reply)
			_, err := client(srv).Chat(context.Background(), provider.Request{Model: "claude-sonnet-4-5", Stream: true,
				Messages: []messages.ChatMessage{{Role: messages.RoleUser, Content: "hi"}}}, nil)
			var pe *provider.Error
			if !errors.As(err, &pe) || pe.Retryable != tc.retryable || !strings.Contains(err.Error(), tc.contains) {
				t.Fatalf("err %v (provider error %+v), want retryable=%v containing %q", err, pe, tc.retryable, tc.contains)
			}
		})
	}
	// Under the retry policy: overloaded twice, then an answer; a 400 once.
	f, srv := newFake(t, status(529, overloaded), sse(answerTurn[0], overloaded), sse(answerTurn...))
	var delays []time.Duration
	opts := retry.Options{Attempts: 5, StreamAttempts: 5, Sleep: func(_ context.Context, d time.Duration) error { delays = append(delays, d); return nil }}
	resp, err := retry.Chat(context.Background(), client(srv), provider.Request{Model: "claude-sonnet-4-5", Stream: true,
		Messages: []messages.ChatMessage{{Role: messages.RoleUser, Content: "hi"}}}, nil, opts)
	if err != nil || resp.Message.Content != "Two files." || len(f.bodies) != 3 || len(delays) != 2 {
		t.Fatalf("retried: %v %+v, %d requests, delays %v", err, resp, len(f.bodies), delays)
	}
	f, srv = newFake(t, status(400, `{"type":"error","error":{"type":"invalid_request_error","message":"no"}}`), sse(answerTurn...))
	if _, err := retry.Chat(context.Background(), client(srv), provider.Request{Model: "m", Stream: true,
		Messages: []messages.ChatMessage{{Role: messages.RoleUser, Content: "hi"}}}, nil, opts); err == nil || len(f.bodies) != 1 {
		t.Fatalf("a 400 was retried: %v, %d requests", err, len(f.bodies))
	}
}

func TestRegistryOpensTheNativeClient(t *testing.T) {
	for _, base := range []string{"", "/v1", "/v1/"} {
		f, srv := newFake(t, sse(answerTurn...))
		env := map[string]string{"ANTHROPIC_API_KEY": "sk-ant-env", "ANTHROPIC_BASE_URL": srv.URL + base}
		p, err := registry.Open(context.Background(), "anthropic", "claude-sonnet-4-5", registry.Settings{Getenv: func(k string) string { return env[k] }})
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := p.(*anthropic.Client); !ok {
			t.Fatalf("anthropic opened %T", p)
		}
		if _, err := p.Chat(context.Background(), provider.Request{Model: "claude-sonnet-4-5", Stream: true, Messages: []messages.ChatMessage{{Role: messages.RoleUser, Content: "hi"}}}, nil); err != nil {
			t.Fatal(err)
		}
		if f.paths[0] != "/v1/messages" || f.headers[0].Get("X-Api-Key") != "sk-ant-env" {
			t.Errorf("base %q: path %s key %q", base, f.paths[0], f.headers[0].Get("X-Api-Key"))
		}
	}
}

func jsonEqual(a, b any) bool {
	return js(a) == js(b)
}

func js(v any) string {
	b, _ := json.Marshal(v)
	var n any
	_ = json.Unmarshal(b, &n)
	b, _ = json.Marshal(n)
	return string(b)
}

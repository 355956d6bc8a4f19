package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/provider"
)

// fakeServer is a Chat Completions endpoint that records each request body
// and answers with the handler the test gives it.
type fakeServer struct {
	*httptest.Server
	mu     sync.Mutex
	bodies []map[string]any
	heads  []http.Header
}

func newFake(t *testing.T, answer func(w http.ResponseWriter, r *http.Request)) *fakeServer {
	t.Helper()
	f := &fakeServer{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" || r.Method != http.MethodPost {
			http.Error(w, "wrong endpoint "+r.Method+" "+r.URL.Path, http.StatusNotFound)
			return
		}
		raw, _ := io.ReadAll(r.Body)
		var body map[string]any
		if err := json.Unmarshal(raw, &body); err != nil {
			http.Error(w, "bad json: "+err.Error(), http.StatusBadRequest)
			return
		}
		f.mu.Lock()
		f.bodies = append(f.bodies, body)
		f.heads = append(f.heads, r.Header.Clone())
		f.mu.Unlock()
		answer(w, r)
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeServer) client(opts Options) *Client {
	opts.BaseURL = f.URL + "/v1"
	opts.HTTPClient = f.Client()
	return New(opts)
}

func (f *fakeServer) lastBody(t *testing.T) map[string]any {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.bodies) == 0 {
		t.Fatal("the server got no request")
	}
	return f.bodies[len(f.bodies)-1]
}

// sse writes events as a real server does: one `data:` event per chunk,
// flushed, then [DONE].
func sse(events ...string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		for _, e := range events {
			fmt.Fprint(w, e)
			fl.Flush()
		}
	}
}

func data(chunk string) string { return "data: " + chunk + "\n\n" }

func jsonAny(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("bad expectation JSON: %v\n%s", err, s)
	}
	return v
}

func batchOK(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprint(w, `{"id":"chatcmpl-1","object":"chat.completion","model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}`)
}

func TestRequestBody(t *testing.T) {
	temp := 0.2
	conversation := []messages.ChatMessage{
		{Role: messages.RoleSystem, Content: "You are jazz."},
		{Role: messages.RoleUser, Content: "list files"},
		{Role: messages.RoleAssistant, Content: "", Reasoning: "must look", ToolCalls: []messages.ToolCall{
			{ID: "call_a", Name: "ls", Arguments: `{"path":"."}`},
			{ID: "call_b", Name: "read_file", Arguments: `{"path":"go.mod"}`},
		}},
		{Role: messages.RoleTool, ToolCallID: "call_a", Name: "ls", Content: `{"entries":["go.mod"]}`},
		{Role: messages.RoleTool, ToolCallID: "call_b", Name: "read_file", Content: "module x"},
		{Role: messages.RoleAssistant, Content: "Done."},
	}
	wantMessages := `[
		{"role":"system","content":"You are jazz."},
		{"role":"user","content":"list files"},
		{"role":"assistant","content":null,"tool_calls":[
			{"id":"call_a","type":"function","function":{"name":"ls","arguments":"{\"path\":\".\"}"}},
			{"id":"call_b","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"go.mod\"}"}}]},
		{"role":"tool","content":"{\"entries\":[\"go.mod\"]}","tool_call_id":"call_a"},
		{"role":"tool","content":"module x","tool_call_id":"call_b"},
		{"role":"assistant","content":"Done."}]`
	tools := []messages.ToolSpec{{Name: "ls", Description: "List a directory", Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)}}
	wantTools := `[{"type":"function","function":{"name":"ls","description":"List a directory","parameters":{"type":"object","properties":{"path":{"type":"string"}}}}}]`

	tests := []struct {
		name string
		opts Options
		req  provider.Request
		want string // the whole expected body, messages and tools spliced in
	}{
		{
			name: "batch with tools and temperature",
			opts: Options{APIKey: "sk-test"},
			req:  provider.Request{Model: "gpt-4o-mini", Messages: conversation, Tools: tools, Temperature: &temp},
			want: `{"model":"gpt-4o-mini","stream":false,"temperature":0.2,"messages":MSGS,"tools":TOOLS}`,
		},
		{
			name: "stream asks for usage, reasoning effort",
			req:  provider.Request{Model: "o3", Messages: conversation, Stream: true, ReasoningEffort: "high"},
			want: `{"model":"o3","stream":true,"stream_options":{"include_usage":true},"reasoning_effort":"high","messages":MSGS}`,
		},
		{
			name: "disable sends no effort by default",
			req:  provider.Request{Model: "o3", Messages: conversation, ReasoningEffort: "disable"},
			want: `{"model":"o3","stream":false,"messages":MSGS}`,
		},
		{
			name: "extra body and custom reasoning mapping",
			opts: Options{
				ExtraBody: map[string]any{"keep_alive": "30m", "options": map[string]any{"num_ctx": 8192}},
				Reasoning: func(e string) map[string]any {
					if e == "disable" {
						return map[string]any{"reasoning_budget": 0}
					}
					return nil
				},
			},
			req:  provider.Request{Model: "qwen3", Messages: conversation, ReasoningEffort: "disable"},
			want: `{"model":"qwen3","stream":false,"reasoning_budget":0,"keep_alive":"30m","options":{"num_ctx":8192},"messages":MSGS}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, batchOK)
			if tt.req.Stream {
				f = newFake(t, sse(data(`{"id":"c","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}]}`), data("[DONE]")))
			}
			if _, err := f.client(tt.opts).Chat(context.Background(), tt.req, nil); err != nil {
				t.Fatalf("Chat: %v", err)
			}
			want := strings.NewReplacer("MSGS", wantMessages, "TOOLS", wantTools).Replace(tt.want)
			got := f.lastBody(t)
			if !reflect.DeepEqual(any(got), jsonAny(t, want)) {
				gb, _ := json.MarshalIndent(got, "", "  ")
				t.Errorf("request body:\n%s\nwant:\n%s", gb, want)
			}
			auth := f.heads[0].Get("Authorization")
			if wantAuth := map[bool]string{true: "Bearer " + tt.opts.APIKey, false: ""}[tt.opts.APIKey != ""]; auth != wantAuth {
				t.Errorf("Authorization = %q, want %q", auth, wantAuth)
			}
		})
	}
}

func TestRequestBuildErrorsAreNotRetryable(t *testing.T) {
	c := New(Options{BaseURL: "http://127.0.0.1:1/v1"})
	for _, req := range []provider.Request{
		{Model: "m", Messages: []messages.ChatMessage{{Role: "wizard", Content: "x"}}},
		{Model: "m", Messages: []messages.ChatMessage{{Role: messages.RoleTool, Content: "x"}}},
		{Messages: []messages.ChatMessage{{Role: messages.RoleUser, Content: "x"}}},
	} {
		_, err := c.Chat(context.Background(), req, nil)
		if err == nil || provider.IsRetryable(err) {
			t.Errorf("%+v: err = %v, want a non-retryable build error", req, err)
		}
	}
}

// A stream shaped like OpenAI's: a role chunk, text, two tool calls whose
// deltas interleave and split their arguments, a finish chunk, then the
// usage chunk with no choices, and keep-alive comments on the way.
var toolStream = []string{
	": OPENROUTER PROCESSING\n\n",
	data(`{"id":"chatcmpl-9","object":"chat.completion.chunk","created":1,"model":"gpt-4o-2024-08-06","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`),
	data(`{"id":"chatcmpl-9","object":"chat.completion.chunk","created":1,"model":"gpt-4o-2024-08-06","choices":[{"index":0,"delta":{"content":"Let me "},"finish_reason":null}]}`),
	// One event split over two data lines: joined with \n it is still JSON.
	"data: {\"id\":\"chatcmpl-9\",\"object\":\"chat.completion.chunk\",\"model\":\"gpt-4o-2024-08-06\",\n" +
		"data: \"choices\":[{\"index\":0,\"delta\":{\"content\":\"look.\"},\"finish_reason\":null}]}\n\n",
	data(`{"id":"chatcmpl-9","object":"chat.completion.chunk","model":"gpt-4o-2024-08-06","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_ls","type":"function","function":{"name":"ls","arguments":""}}]},"finish_reason":null}]}`),
	data(`{"id":"chatcmpl-9","object":"chat.completion.chunk","model":"gpt-4o-2024-08-06","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"pa"}}]},"finish_reason":null}]}`),
	data(`{"id":"chatcmpl-9","object":"chat.completion.chunk","model":"gpt-4o-2024-08-06","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_rd","type":"function","function":{"name":"read_file","arguments":"{\"path\":"}}]},"finish_reason":null}]}`),
	data(`{"id":"chatcmpl-9","object":"chat.completion.chunk","model":"gpt-4o-2024-08-06","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"th\":\".\"}"}}]},"finish_reason":null}]}`),
	": keep-alive\n",
	data(`{"id":"chatcmpl-9","object":"chat.completion.chunk","model":"gpt-4o-2024-08-06","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"\"go.mod\"}"}}]},"finish_reason":null}]}`),
	data(`{"id":"chatcmpl-9","object":"chat.completion.chunk","model":"gpt-4o-2024-08-06","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`),
	data(`{"id":"chatcmpl-9","object":"chat.completion.chunk","model":"gpt-4o-2024-08-06","choices":[],"usage":{"prompt_tokens":120,"completion_tokens":40,"total_tokens":160,"prompt_tokens_details":{"cached_tokens":100},"completion_tokens_details":{"reasoning_tokens":7}}}`),
	data("[DONE]"),
}

func TestStreamToolCalls(t *testing.T) {
	f := newFake(t, sse(toolStream...))
	var deltas []provider.Delta
	resp, err := f.client(Options{}).Chat(context.Background(),
		provider.Request{Model: "gpt-4o", Stream: true, Messages: []messages.ChatMessage{{Role: "user", Content: "hi"}}},
		func(d provider.Delta) { deltas = append(deltas, d) })
	if err != nil {
		t.Fatalf("Chat: %v", err)
	}
	want := provider.Response{
		ID: "chatcmpl-9", Model: "gpt-4o-2024-08-06",
		Message: messages.ChatMessage{Role: "assistant", Content: "Let me look.", ToolCalls: []messages.ToolCall{
			{ID: "call_ls", Name: "ls", Arguments: `{"path":"."}`},
			{ID: "call_rd", Name: "read_file", Arguments: `{"path":"go.mod"}`},
		}},
		Usage:         messages.Usage{PromptTokens: 120, CompletionTokens: 40, TotalTokens: 160, CacheReadTokens: 100, ReasoningTokens: 7},
		UsageReported: true,
	}
	if !reflect.DeepEqual(resp, want) {
		t.Errorf("response:\n%+v\nwant\n%+v", resp, want)
	}
	wantDeltas := []provider.Delta{{Text: "Let me "}, {Text: "look."}}
	if !reflect.DeepEqual(deltas, wantDeltas) {
		t.Errorf("deltas = %q, want %q", deltas, wantDeltas)
	}
}

func TestStreamReasoningFields(t *testing.T) {
	tests := []struct {
		name   string
		events []string
		want   []provider.Delta
		text   string
		reason string
	}{
		{
			name: "reasoning_content (DeepSeek, vLLM)",
			events: []string{
				data(`{"id":"a","choices":[{"index":0,"delta":{"reasoning_content":"Think "}}]}`),
				data(`{"id":"a","choices":[{"index":0,"delta":{"reasoning_content":"hard."}}]}`),
				data(`{"id":"a","choices":[{"index":0,"delta":{"content":"42"},"finish_reason":"stop"}]}`),
				data("[DONE]"),
			},
			want: []provider.Delta{{Reasoning: "Think "}, {Reasoning: "hard."}, {Text: "42"}},
			text: "42", reason: "Think hard.",
		},
		{
			name: "reasoning (OpenRouter, Ollama)",
			events: []string{
				data(`{"id":"a","choices":[{"index":0,"delta":{"reasoning":"Hmm."}}]}`),
				data(`{"id":"a","choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":"stop"}]}`),
				data("[DONE]"),
			},
			want: []provider.Delta{{Reasoning: "Hmm."}, {Text: "ok"}},
			text: "ok", reason: "Hmm.",
		},
		{
			name: "inline think split across chunks",
			events: []string{
				data(`{"id":"a","choices":[{"index":0,"delta":{"content":"<th"}}]}`),
				data(`{"id":"a","choices":[{"index":0,"delta":{"content":"ink>\nplan</th"}}]}`),
				data(`{"id":"a","choices":[{"index":0,"delta":{"content":"ink>\n\nAnswer"},"finish_reason":"stop"}]}`),
				data("[DONE]"),
			},
			want: []provider.Delta{{Reasoning: "plan"}, {Text: "Answer"}},
			text: "Answer", reason: "plan",
		},
		{
			name: "finish reason and no [DONE] is a complete answer",
			events: []string{
				data(`{"id":"a","choices":[{"index":0,"delta":{"content":"bye"},"finish_reason":"stop"}]}`),
			},
			want: []provider.Delta{{Text: "bye"}},
			text: "bye",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, sse(tt.events...))
			var got []provider.Delta
			resp, err := f.client(Options{}).Chat(context.Background(),
				provider.Request{Model: "m", Stream: true}, func(d provider.Delta) { got = append(got, d) })
			if err != nil {
				t.Fatalf("Chat: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("deltas = %q, want %q", got, tt.want)
			}
			if resp.Message.Content != tt.text || resp.Message.Reasoning != tt.reason {
				t.Errorf("content %q reasoning %q, want %q %q", resp.Message.Content, resp.Message.Reasoning, tt.text, tt.reason)
			}
			if resp.UsageReported {
				t.Error("UsageReported with no usage chunk")
			}
		})
	}
}

func TestBatch(t *testing.T) {
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"chatcmpl-2","object":"chat.completion","model":"deepseek-reasoner",
		  "choices":[{"index":0,"message":{"role":"assistant","content":"<think>why</think>Reading.",
		    "tool_calls":[{"id":"call_0","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"a\"}"}},
		                  {"type":"function","function":{"name":"ls","arguments":{"path":"."}}}]},
		    "finish_reason":"tool_calls"}],
		  "usage":{"prompt_tokens":10,"completion_tokens":5}}`)
	})
	called := false
	resp, err := f.client(Options{}).Chat(context.Background(), provider.Request{Model: "deepseek-reasoner"},
		func(provider.Delta) { called = true })
	if err != nil {
		t.Fatalf("Chat: %v", err)
	}
	want := provider.Response{
		ID: "chatcmpl-2", Model: "deepseek-reasoner",
		Message: messages.ChatMessage{Role: "assistant", Content: "Reading.", Reasoning: "why", ToolCalls: []messages.ToolCall{
			{ID: "call_0", Name: "read_file", Arguments: `{"path":"a"}`},
			{ID: "call_1", Name: "ls", Arguments: `{"path":"."}`},
		}},
		Usage:         messages.Usage{PromptTokens: 10, CompletionTokens: 5, TotalTokens: 15},
		UsageReported: true,
	}
	if !reflect.DeepEqual(resp, want) {
		t.Errorf("response:\n%+v\nwant\n%+v", resp, want)
	}
	if called {
		t.Error("batch mode called onDelta")
	}
	if b := f.lastBody(t); b["stream"] != false || b["stream_options"] != nil {
		t.Errorf("batch body stream=%v stream_options=%v", b["stream"], b["stream_options"])
	}
}

func TestStatusErrors(t *testing.T) {
	long := strings.Repeat("x", 2000)
	tests := []struct {
		name      string
		status    int
		body      string
		retryable bool
		reason    string
		msg       string // substring of the error text
	}{
		{"400 OpenAI error object", 400, `{"error":{"message":"Invalid 'messages[2].tool_calls': empty array.","type":"invalid_request_error","param":"messages","code":null}}`, false, "", "Invalid 'messages[2].tool_calls': empty array. (HTTP 400)"},
		{"401 bad key", 401, `{"error":{"message":"Incorrect API key provided: sk-xx.","type":"invalid_request_error","code":"invalid_api_key"}}`, false, "", "Authentication failed (HTTP 401): Incorrect API key provided: sk-xx."},
		{"429 rate limit", 429, `{"error":{"message":"Rate limit reached for gpt-4o","type":"requests","code":"rate_limit_exceeded"}}`, true, "rate limit", "Rate limit reached for gpt-4o"},
		{"500 raw text", 500, "upstream exploded\n", true, "server error (500)", "Server error (500): upstream exploded"},
		{"502 empty body", 502, "", true, "server error (502)", "Server error (502): Bad Gateway"},
		{"404 message field", 404, `{"message":"model \"nope\" not found"}`, false, "", `model "nope" not found`},
		{"503 huge body is cut", 503, long, true, "server error (503)", strings.Repeat("x", 500) + "…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tt.status)
				fmt.Fprint(w, tt.body)
			})
			for _, stream := range []bool{false, true} {
				_, err := f.client(Options{}).Chat(context.Background(), provider.Request{Model: "m", Stream: stream}, nil)
				var pe *provider.Error
				if !errors.As(err, &pe) {
					t.Fatalf("err = %v, want *provider.Error", err)
				}
				if pe.Status != tt.status || pe.Retryable != tt.retryable || pe.Reason != tt.reason {
					t.Errorf("got status %d retryable %v reason %q, want %d %v %q", pe.Status, pe.Retryable, pe.Reason, tt.status, tt.retryable, tt.reason)
				}
				if !strings.Contains(err.Error(), tt.msg) {
					t.Errorf("error %q does not contain %q", err, tt.msg)
				}
				if strings.Contains(err.Error(), strings.Repeat("x", 501)) {
					t.Errorf("error text not cut: %d bytes", len(err.Error()))
				}
			}
		})
	}
}

func TestBrokenStreams(t *testing.T) {
	first := data(`{"id":"a","choices":[{"index":0,"delta":{"content":"par"}}]}`)
	tests := []struct {
		name      string
		answer    func(w http.ResponseWriter, r *http.Request)
		retryable bool
		msg       string
	}{
		{
			name: "server closes the connection mid-stream",
			answer: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				fmt.Fprint(w, first)
				w.(http.Flusher).Flush()
				conn, buf, err := w.(http.Hijacker).Hijack()
				if err == nil {
					buf.Flush()
					conn.Close()
				}
			},
			retryable: true,
		},
		{
			name:      "stream ends with neither finish nor [DONE]",
			answer:    sse(first),
			retryable: true,
			msg:       "the stream ended before the answer was complete",
		},
		{
			name:      "bad JSON in a data line",
			answer:    sse(first, data(`{"id":"a","choices":[{"delta":`), data("[DONE]")),
			retryable: true,
			msg:       "bad JSON in a stream event",
		},
		{
			name:      "error event with a status code",
			answer:    sse(first, data(`{"error":{"message":"Provider returned error","code":429}}`)),
			retryable: true,
			msg:       "Provider returned error",
		},
		{
			name:      "error event rejecting the request",
			answer:    sse(data(`{"error":{"message":"context length exceeded","code":400}}`)),
			retryable: false,
			msg:       "context length exceeded",
		},
		{
			name:      "status-less error event retried",
			answer:    sse(first, data(`{"error":{"message":"upstream overloaded"}}`)),
			retryable: true,
			msg:       "upstream overloaded",
		},
		{
			name:      "status-less key complaint is not retried",
			answer:    sse(data(`{"error":{"message":"Invalid API key"}}`)),
			retryable: false,
			msg:       "Authentication failed: Invalid API key",
		},
		{
			name: "200 with an HTML page in batch mode",
			answer: func(w http.ResponseWriter, r *http.Request) {
				fmt.Fprint(w, "<html>captive portal</html>")
			},
			retryable: true,
			msg:       "malformed answer",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t, tt.answer)
			stream := !strings.Contains(tt.name, "batch")
			_, err := f.client(Options{Name: "openai"}).Chat(context.Background(), provider.Request{Model: "m", Stream: stream}, nil)
			if err == nil {
				t.Fatal("Chat succeeded on a broken answer")
			}
			if provider.IsRetryable(err) != tt.retryable {
				t.Errorf("retryable = %v, want %v (err %v)", provider.IsRetryable(err), tt.retryable, err)
			}
			if !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("error %q does not contain %q", err, tt.msg)
			}
		})
	}
}

func TestDeadPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	c := New(Options{BaseURL: "http://" + addr + "/v1", Name: "ollama", UnreachableHint: "Is Ollama running? Start it with `ollama serve`."})
	_, err = c.Chat(context.Background(), provider.Request{Model: "llama3", Stream: true}, nil)
	var pe *provider.Error
	if !errors.As(err, &pe) {
		t.Fatalf("err = %v, want *provider.Error", err)
	}
	if !pe.Retryable || pe.Reason != "network issue" || pe.Status != 0 {
		t.Errorf("got retryable %v reason %q status %d", pe.Retryable, pe.Reason, pe.Status)
	}
	for _, want := range []string{"cannot reach ollama at http://" + addr, "refused", "ollama serve"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

func TestCancelMidStream(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	f := newFake(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, data(`{"id":"a","choices":[{"index":0,"delta":{"content":"first"}}]}`))
		w.(http.Flusher).Flush()
		// Hang like a slow model until the test ends.
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		_, err := f.client(Options{}).Chat(ctx, provider.Request{Model: "m", Stream: true}, func(provider.Delta) { cancel() })
		errc <- err
	}()
	select {
	case err := <-errc:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v, want context.Canceled", err)
		}
		if provider.IsRetryable(err) {
			t.Error("a cancelled call must not be retryable")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Chat did not return after its ctx was cancelled")
	}
}

func BenchmarkSSEParse(b *testing.B) {
	var sb strings.Builder
	for i := range 1000 {
		switch {
		case i%10 == 9:
			fmt.Fprintf(&sb, "data: {\"id\":\"chatcmpl-b\",\"object\":\"chat.completion.chunk\",\"model\":\"gpt-4o\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":%d,\"function\":{\"arguments\":\"{\\\"k\\\":1}\"}}]},\"finish_reason\":null}]}\n\n", i/100)
		default:
			sb.WriteString("data: {\"id\":\"chatcmpl-b\",\"object\":\"chat.completion.chunk\",\"model\":\"gpt-4o\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"word \"},\"finish_reason\":null}]}\n\n")
		}
	}
	sb.WriteString("data: {\"id\":\"chatcmpl-b\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
	stream := sb.String()
	b.SetBytes(int64(len(stream)))
	b.ReportAllocs()
	for b.Loop() {
		n := 0
		if _, err := readStream(strings.NewReader(stream), func(provider.Delta) { n++ }); err != nil {
			b.Fatal(err)
		}
	}
}

// Package chatserver is a scripted Chat Completions server for tests and
// benchmarks of the built jazz binary: it answers POST /v1/chat/completions
// with the real wire shapes (an SSE stream of chat.completion.chunk events
// when the request asks to stream, a chat.completion object otherwise),
// can fail in the ways providers fail (4xx/5xx bodies, malformed streams,
// stalls), and records every request body so a test can assert what the
// runtime sent.
package chatserver

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"
)

// Call is one tool call the scripted model asks for. Arguments is sent
// verbatim as the function's argument string, so it may be invalid JSON.
type Call struct {
	ID        string
	Name      string
	Arguments string
}

// Turn is one scripted answer.
type Turn struct {
	// Text is the assistant's content.
	Text string
	// Calls are the tool calls, in order.
	Calls []Call
	// Status, when not 0 or 200, answers with that HTTP status and an
	// OpenAI-shaped error body carrying ErrorMessage.
	Status       int
	ErrorMessage string
	// Raw, when set, is written verbatim as the body (for malformed
	// streams), with Status if set; RawContentType defaults to
	// text/event-stream.
	Raw            string
	RawContentType string
	// Header is added to the response (Retry-After).
	Header map[string]string
	// Delay holds the answer back; a cancelled request ends the wait.
	Delay time.Duration
	// Stall sends the response headers (and, streaming, one chunk) then
	// blocks until the client goes away.
	Stall bool
	// Partial, when streaming, is sent as content chunks before a Stall:
	// a model cut off mid-answer.
	Partial string
	// Endless, on a stream, sends content chunks until the client goes
	// away (a model that never stops).
	Endless bool
	// Usage, when set, is sent verbatim as the response's usage object
	// (any figures, negative or absurd ones included); NoUsage sends none.
	Usage   map[string]any
	NoUsage bool
}

// Message is a recorded request message, in the wire shape.
type Message struct {
	Role       string         `json:"role"`
	Content    *string        `json:"content"`
	ToolCalls  []WireToolCall `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
	Name       string         `json:"name,omitempty"`
}

// WireToolCall is a tool call in the Chat Completions shape.
type WireToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// Request is one recorded request.
type Request struct {
	Model    string          `json:"model"`
	Stream   bool            `json:"stream"`
	Messages []Message       `json:"messages"`
	Tools    []WireTool      `json:"tools"`
	Raw      json.RawMessage `json:"-"`
	// Auth is the Authorization header as received.
	Auth string `json:"-"`
}

// WireTool is an offered tool.
type WireTool struct {
	Type     string `json:"type"`
	Function struct {
		Name string `json:"name"`
	} `json:"function"`
}

// Responder picks the answer to a request; n counts requests from 0.
type Responder func(n int, req Request) Turn

// Server is a running scripted server.
type Server struct {
	srv     *httptest.Server
	respond Responder

	mu   sync.Mutex
	reqs []Request
}

// New serves the turns in order; a request past the last turn gets a 500
// saying the script ran out, so an unexpected extra call is visible.
func New(turns ...Turn) *Server {
	return NewFunc(func(n int, _ Request) Turn {
		if n < len(turns) {
			return turns[n]
		}
		return Turn{Status: http.StatusInternalServerError, ErrorMessage: fmt.Sprintf("chatserver: script has %d turns, got request %d", len(turns), n+1)}
	})
}

// NewFunc serves whatever respond returns.
func NewFunc(respond Responder) *Server {
	s := &Server{respond: respond}
	s.srv = httptest.NewServer(http.HandlerFunc(s.handle))
	return s
}

// URL is the API root to put in OPENAI_BASE_URL (ends in /v1).
func (s *Server) URL() string { return s.srv.URL + "/v1" }

// Close stops the server, cutting open connections.
func (s *Server) Close() {
	s.srv.CloseClientConnections()
	s.srv.Close()
}

// Requests returns a copy of the requests received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// Forget drops the requests received so far (a long benchmark need not
// hold them all); n, the count passed to the Responder, starts again at 0.
func (s *Server) Forget() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reqs = nil
}

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	var req Request
	dec := json.NewDecoder(r.Body)
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		writeError(w, http.StatusBadRequest, "chatserver: request body is not JSON: "+err.Error())
		return
	}
	if err := json.Unmarshal(raw, &req); err != nil {
		writeError(w, http.StatusBadRequest, "chatserver: request body has the wrong shape: "+err.Error())
		return
	}
	req.Raw = raw
	req.Auth = r.Header.Get("Authorization")
	s.mu.Lock()
	n := len(s.reqs)
	s.reqs = append(s.reqs, req)
	s.mu.Unlock()

	t := s.respond(n, req)
	if t.Delay > 0 {
		select {
		case <-time.After(t.Delay):
		case <-r.Context().Done():
			return
		}
	}
	for k, v := range t.Header {
		w.Header().Set(k, v)
	}
	switch {
	case t.Raw != "":
		ct := t.RawContentType
		if ct == "" {
			ct = "text/event-stream"
		}
		w.Header().Set("Content-Type", ct)
		w.WriteHeader(cmp.Or(t.Status, http.StatusOK))
		_, _ = w.Write([]byte(t.Raw))
	case t.Status != 0 && t.Status != http.StatusOK:
		writeError(w, t.Status, t.ErrorMessage)
	case req.Stream:
		writeStream(w, r, req.Model, n, t)
	default:
		writeBatch(w, r, req.Model, n, t)
	}
}

func writeError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	typ := "invalid_request_error"
	if status >= 500 {
		typ = "server_error"
	}
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": nil}})
	_, _ = w.Write(b)
}

func callID(n, i int, c Call) string {
	if c.ID != "" {
		return c.ID
	}
	return fmt.Sprintf("call_%d_%d", n, i)
}

func usage(t Turn) map[string]any {
	if t.Usage != nil {
		return t.Usage
	}
	prompt, completion := 20, 5+len(t.Text)/4+3*len(t.Calls)
	return map[string]any{"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
}

func finishReason(t Turn) string {
	if len(t.Calls) > 0 {
		return "tool_calls"
	}
	return "stop"
}

func writeBatch(w http.ResponseWriter, r *http.Request, model string, n int, t Turn) {
	msg := map[string]any{"role": "assistant", "content": t.Text, "refusal": nil}
	if len(t.Calls) > 0 {
		if t.Text == "" {
			msg["content"] = nil
		}
		var tcs []map[string]any
		for i, c := range t.Calls {
			tcs = append(tcs, map[string]any{"id": callID(n, i, c), "type": "function",
				"function": map[string]any{"name": c.Name, "arguments": c.Arguments}})
		}
		msg["tool_calls"] = tcs
	}
	body := map[string]any{
		"id": fmt.Sprintf("chatcmpl-%d", n), "object": "chat.completion", "created": time.Now().Unix(), "model": model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "logprobs": nil, "finish_reason": finishReason(t)}},
	}
	if !t.NoUsage {
		body["usage"] = usage(t)
	}
	w.Header().Set("Content-Type", "application/json")
	if t.Stall {
		w.WriteHeader(http.StatusOK)
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
		<-r.Context().Done()
		return
	}
	b, _ := json.Marshal(body)
	_, _ = w.Write(b)
}

// writeStream sends the answer the way OpenAI streams it: a role chunk,
// content pieces, each tool call as a header chunk (id, type, name, empty
// arguments) followed by argument fragments addressed by index, a finish
// chunk, a usage chunk with no choices, then [DONE].
func writeStream(w http.ResponseWriter, r *http.Request, model string, n int, t Turn) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	flusher, _ := w.(http.Flusher)
	id, created := fmt.Sprintf("chatcmpl-%d", n), time.Now().Unix()
	frame := func(v map[string]any) []byte {
		v["id"], v["object"], v["created"], v["model"] = id, "chat.completion.chunk", created, model
		v["system_fingerprint"] = "fp_test"
		b, _ := json.Marshal(v)
		return fmt.Appendf(nil, "data: %s\n\n", b)
	}
	send := func(v map[string]any) {
		_, _ = w.Write(frame(v))
		if flusher != nil {
			flusher.Flush()
		}
	}
	choice := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{"choices": []any{map[string]any{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": finish}}}
	}
	send(choice(map[string]any{"role": "assistant", "content": "", "refusal": nil}, nil))
	if t.Endless {
		// Small deltas in full SSE frames, as a model streams tokens:
		// the byte cap fires long before the text grows large. The frame
		// is encoded once and written a block of them at a time: tens of
		// MiB frame by frame cost the test process (under -race) minutes.
		block := bytes.Repeat(frame(choice(map[string]any{"content": strings.Repeat("endless ", 4)}, nil)), 512)
		for r.Context().Err() == nil {
			if _, err := w.Write(block); err != nil {
				return
			}
			if flusher != nil {
				flusher.Flush()
			}
		}
		return
	}
	if t.Stall {
		for _, piece := range split(t.Partial, 3) {
			send(choice(map[string]any{"content": piece}, nil))
		}
		<-r.Context().Done()
		return
	}
	for _, piece := range split(t.Text, 3) {
		send(choice(map[string]any{"content": piece}, nil))
	}
	for i, c := range t.Calls {
		send(choice(map[string]any{"tool_calls": []any{map[string]any{"index": i, "id": callID(n, i, c), "type": "function",
			"function": map[string]any{"name": c.Name, "arguments": ""}}}}, nil))
		for _, frag := range split(c.Arguments, 2) {
			send(choice(map[string]any{"tool_calls": []any{map[string]any{"index": i, "function": map[string]any{"arguments": frag}}}}, nil))
		}
	}
	send(choice(map[string]any{}, finishReason(t)))
	if !t.NoUsage {
		send(map[string]any{"choices": []any{}, "usage": usage(t)})
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
	if flusher != nil {
		flusher.Flush()
	}
}

// split cuts s into up to n pieces, on byte boundaries that keep UTF-8
// runes whole, as a real stream would.
func split(s string, n int) []string {
	if s == "" {
		return nil
	}
	size := (len(s) + n - 1) / n
	var out []string
	for len(s) > 0 {
		k := min(size, len(s))
		for k < len(s) && !utf8Start(s[k]) {
			k++
		}
		out = append(out, s[:k])
		s = s[k:]
	}
	return out
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

// ToolMessages returns the tool messages of req, in order.
func (r Request) ToolMessages() []Message {
	var out []Message
	for _, m := range r.Messages {
		if m.Role == "tool" {
			out = append(out, m)
		}
	}
	return out
}

// LastUser returns the content of the last user message of req.
func (r Request) LastUser() string {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if m := r.Messages[i]; m.Role == "user" && m.Content != nil {
			return *m.Content
		}
	}
	return ""
}

// HasTool says whether req offered the named tool.
func (r Request) HasTool(name string) bool {
	for _, t := range r.Tools {
		if t.Function.Name == name {
			return true
		}
	}
	return false
}

// JSONArgs encodes v as a call's argument string.
func JSONArgs(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("chatserver.JSONArgs: %v", err))
	}
	return strings.TrimSpace(string(b))
}

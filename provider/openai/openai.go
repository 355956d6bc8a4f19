// Package openai is a Chat Completions client over plain net/http. It speaks
// the wire format that OpenAI and the OpenAI-compatible vendors (OpenRouter,
// Groq, DeepSeek, Ollama's /v1, llama.cpp's server, …) share: request
// building, the SSE stream and its tool-call deltas, the batch answer,
// reasoning fields and inline <think> blocks, and the mapping of HTTP and
// transport failures to provider.Error.
//
// It owns no retries: provider/retry does that, so one Chat is one request.
package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/provider"
	"github.com/jazz-run/jazz/provider/httpx"
)

// Options configures a Client.
type Options struct {
	// BaseURL is the API root, e.g. https://api.openai.com/v1; the client
	// posts to BaseURL + "/chat/completions".
	BaseURL string
	// APIKey is sent as a bearer token; empty sends no Authorization header
	// (local servers).
	APIKey string
	// Name is the provider name used in error messages ("openai", "ollama").
	Name string
	// HTTPClient defaults to an httpx client with the default bounds and
	// no proxy; it has no overall timeout, since a streamed answer may
	// legitimately take minutes, and ctx bounds every call.
	HTTPClient *http.Client
	// ExtraBody is merged into every request body, last, so it may add
	// vendor fields (keep_alive, options) or override ours.
	ExtraBody map[string]any
	// Reasoning maps a Request.ReasoningEffort to request-body fields. Nil
	// uses DefaultReasoning.
	Reasoning func(effort string) map[string]any
	// UnreachableHint is appended to transport errors, e.g. how to start a
	// local server.
	UnreachableHint string
	// Headers are added to every request (OpenRouter's attribution headers).
	Headers map[string]string
}

// DefaultReasoning sends OpenAI's `reasoning_effort` for low, medium and
// high, and nothing for "" or "disable" (OpenAI has no off switch for models
// that always reason; asking a non-reasoning model for an effort is the
// caller's mistake to surface).
func DefaultReasoning(effort string) map[string]any {
	switch effort {
	case "low", "medium", "high":
		return map[string]any{"reasoning_effort": effort}
	}
	return nil
}

// Client is one Chat Completions endpoint. It is safe for concurrent use.
type Client struct {
	opts Options
	ep   provider.Endpoint
}

// New builds a Client. It does no I/O.
func New(opts Options) *Client {
	if opts.HTTPClient == nil {
		opts.HTTPClient = httpx.New(httpx.Options{Limits: httpx.DefaultLimits()})
	}
	if opts.Reasoning == nil {
		opts.Reasoning = DefaultReasoning
	}
	if opts.Name == "" {
		opts.Name = "openai"
	}
	h := http.Header{}
	if opts.APIKey != "" {
		h.Set("Authorization", "Bearer "+opts.APIKey)
	}
	for k, v := range opts.Headers {
		h.Set(k, v)
	}
	return &Client{opts: opts, ep: provider.Endpoint{Name: opts.Name, BaseURL: opts.BaseURL,
		URL: strings.TrimRight(opts.BaseURL, "/") + "/chat/completions", Client: opts.HTTPClient, Header: h,
		Message: errorMessage, UnreachableHint: opts.UnreachableHint}}
}

var _ provider.Provider = (*Client)(nil)

// Chat sends one request. With req.Stream it reads the SSE stream and calls
// onDelta (if non-nil) for each text or reasoning piece, in order; in batch
// mode onDelta is never called. Errors are *provider.Error, except a
// cancelled ctx, which returns ctx.Err() wrapped.
func (c *Client) Chat(ctx context.Context, req provider.Request, onDelta func(provider.Delta)) (provider.Response, error) {
	body, err := c.requestBody(req)
	if err != nil {
		return provider.Response{}, err
	}
	return c.ep.Exchange(ctx, body, req.Stream, func(answer io.Reader) (provider.Response, error) {
		if req.Stream {
			return readStream(answer, onDelta)
		}
		return readBatch(answer)
	})
}

// requestBodyMarshal builds the JSON body with encoding/json. It is the
// reference requestBody must equal byte for byte (body_test.go), and what
// says why when a body cannot be built. Errors here are the caller's
// (never retried): they are plain errors, not provider.Error.
func (c *Client) requestBodyMarshal(req provider.Request) ([]byte, error) {
	if req.Model == "" {
		return nil, fmt.Errorf("%s: no model given", c.opts.Name)
	}
	msgs := make([]wireMessage, 0, len(req.Messages))
	for i, m := range req.Messages {
		wm, err := toWire(m)
		if err != nil {
			return nil, fmt.Errorf("%s: message %d: %w", c.opts.Name, i, err)
		}
		msgs = append(msgs, wm)
	}
	body := map[string]any{
		"model":    req.Model,
		"messages": msgs,
		"stream":   req.Stream,
	}
	if req.Stream {
		body["stream_options"] = map[string]any{"include_usage": true}
	}
	if len(req.Tools) > 0 {
		tools := make([]wireTool, len(req.Tools))
		for i, t := range req.Tools {
			params := t.Parameters
			if len(params) == 0 {
				params = json.RawMessage(`{"type":"object","properties":{}}`)
			}
			tools[i] = wireTool{Type: "function", Function: wireFunction{Name: t.Name, Description: t.Description, Parameters: params}}
		}
		body["tools"] = tools
	}
	if req.Temperature != nil {
		body["temperature"] = *req.Temperature
	}
	for k, v := range c.opts.Reasoning(req.ReasoningEffort) {
		body[k] = v
	}
	for k, v := range c.opts.ExtraBody {
		body[k] = v
	}
	b, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("%s: encode request: %w", c.opts.Name, err)
	}
	return b, nil
}

// toWire maps one ChatMessage to the Chat Completions shape.
func toWire(m messages.ChatMessage) (wireMessage, error) {
	content := m.Content
	wm := wireMessage{Role: m.Role, Content: &content}
	switch m.Role {
	case messages.RoleSystem, messages.RoleUser:
	case messages.RoleAssistant:
		for _, tc := range m.ToolCalls {
			wm.ToolCalls = append(wm.ToolCalls, wireToolCall{
				ID: tc.ID, Type: "function",
				Function: wireCall{Name: tc.Name, Arguments: tc.Arguments},
			})
		}
		// OpenAI wants null, not "", beside tool calls; some compatible
		// servers reject a null content on a plain message, so only then.
		if content == "" && len(wm.ToolCalls) > 0 {
			wm.Content = nil
		}
	case messages.RoleTool:
		if m.ToolCallID == "" {
			return wm, errors.New("tool message without a tool call id")
		}
		wm.ToolCallID = m.ToolCallID
	default:
		return wm, fmt.Errorf("unknown role %q", m.Role)
	}
	return wm, nil
}

// readBatch decodes a non-streamed answer.
func readBatch(r io.Reader) (provider.Response, error) {
	var cr wireCompletion
	if err := json.NewDecoder(r).Decode(&cr); err != nil {
		return provider.Response{}, &provider.MalformedAnswer{Err: fmt.Errorf("decode response: %w", err)}
	}
	if cr.Error != nil {
		return provider.Response{}, cr.Error.asError()
	}
	out := provider.Response{ID: cr.ID, Model: cr.Model, Message: messages.ChatMessage{Role: messages.RoleAssistant}}
	if cr.Usage != nil {
		out.Usage, out.UsageReported = cr.Usage.toUsage(), true
	}
	if len(cr.Choices) == 0 {
		return out, &provider.MalformedAnswer{Err: errors.New("response has no choices")}
	}
	msg := cr.Choices[0].Message
	var sp thinkSplitter
	var text, reasoning strings.Builder
	reasoning.WriteString(msg.ReasoningContent)
	if msg.ReasoningContent == "" {
		reasoning.WriteString(msg.Reasoning)
	}
	emit := func(d provider.Delta) {
		text.WriteString(d.Text)
		reasoning.WriteString(d.Reasoning)
	}
	sp.feed(msg.Content, emit)
	sp.flush(emit)
	out.Message.Content = text.String()
	out.Message.Reasoning = reasoning.String()
	for _, tc := range msg.ToolCalls {
		out.Message.ToolCalls = append(out.Message.ToolCalls, messages.ToolCall{
			ID: tc.ID, Name: tc.Function.Name, Arguments: argumentsText(tc.Function.Arguments),
		})
	}
	fillIDs(out.Message.ToolCalls)
	return out, nil
}

// fillIDs gives every call without an id (some local servers send none) a
// `call_<n>` id unique within the answer, since tool results are matched
// back by id.
func fillIDs(calls []messages.ToolCall) {
	used := map[string]bool{}
	for _, c := range calls {
		used[c.ID] = true
	}
	n := 0
	for i := range calls {
		if calls[i].ID != "" {
			continue
		}
		for used[fmt.Sprintf("call_%d", n)] {
			n++
		}
		calls[i].ID = fmt.Sprintf("call_%d", n)
		used[calls[i].ID] = true
	}
}

// argumentsText returns tool-call arguments as the raw string the model
// produced. OpenAI sends a JSON string; a few compatible servers send the
// object itself, which is kept as its JSON text.
func argumentsText(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s
		}
	}
	return string(raw)
}

// Package anthropic is a client of Anthropic's Messages API over plain
// net/http: request building (system prompt, tools, tool results,
// thinking blocks sent back with their signatures, prompt-cache
// breakpoints), the SSE stream (text, tool-use JSON, thinking and
// signature deltas, usage, stop reasons, error events), the batch answer,
// and the mapping of failures to provider.Error for the retry policy.
//
// Why not github.com/anthropics/anthropic-sdk-go: it adds about 13 MB to
// the binary for what is here a few hundred lines, it retries on its own
// (provider/retry owns that, agent-loop.md §6), and this package parses
// the stream the same way provider/openai does, so both are read and
// tested alike: against an in-test server speaking the wire format.
//
// It owns no retries: one Chat is one request.
package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/provider"
	"github.com/jazz-run/jazz/provider/httpx"
)

// Version is the anthropic-version header the client speaks.
const Version = "2023-06-01"

// DefaultBaseURL is the API root; ANTHROPIC_BASE_URL and
// llm.anthropic.base_url override it (with or without /v1).
const DefaultBaseURL = "https://api.anthropic.com"

// Thinking budgets per reasoning effort, in tokens.
var thinkingBudget = map[string]int{"low": 2048, "medium": 8192, "high": 16384}

// Options configures a Client.
type Options struct {
	BaseURL string
	APIKey  string
	// HTTPClient defaults to an httpx client with the default bounds
	// (connect, first byte, idle body, size); ctx bounds the whole call.
	HTTPClient *http.Client
	// MaxTokens caps the answer; 0 picks a default for the model.
	MaxTokens int
}

// Client is one Messages endpoint. It is safe for concurrent use.
type Client struct {
	opts Options
	ep   provider.Endpoint
}

// New builds a Client. It does no I/O.
func New(opts Options) *Client {
	if opts.HTTPClient == nil {
		opts.HTTPClient = httpx.New(httpx.Options{Limits: httpx.DefaultLimits()})
	}
	base := strings.TrimRight(strings.TrimSpace(opts.BaseURL), "/")
	if base == "" {
		base = DefaultBaseURL
	}
	opts.BaseURL = base
	if !strings.HasSuffix(base, "/v1") {
		base += "/v1"
	}
	h := http.Header{}
	h.Set("Anthropic-Version", Version)
	h.Set("X-Api-Key", opts.APIKey)
	return &Client{opts: opts, ep: provider.Endpoint{Name: "anthropic", BaseURL: opts.BaseURL, URL: base + "/messages",
		Client: opts.HTTPClient, Header: h, Message: errorMessage}}
}

var _ provider.Provider = (*Client)(nil)

// Chat sends one request. With req.Stream it reads the SSE stream and
// calls onDelta for each text or thinking piece, in order. Errors are
// *provider.Error, except a cancelled ctx (returned wrapped) and a
// request that cannot be built (a plain error, never retried).
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

// maxTokens is the answer cap: the option, else 8192 (4096 for the
// Claude 3 models, whose limit it is), plus the thinking budget.
func (c *Client) maxTokens(model string, budget int) int {
	n := c.opts.MaxTokens
	if n <= 0 {
		n = 8192
		if strings.HasPrefix(model, "claude-3-") && !strings.HasPrefix(model, "claude-3-5") && !strings.HasPrefix(model, "claude-3-7") {
			n = 4096
		}
	}
	return n + budget
}

// requestBody builds the JSON body.
func (c *Client) requestBody(req provider.Request) ([]byte, error) {
	if req.Model == "" {
		return nil, errors.New("anthropic: no model given")
	}
	w := wireRequest{Model: req.Model, Stream: req.Stream}
	var system []string
	var convo []messages.ChatMessage
	for _, m := range req.Messages {
		if m.Role == messages.RoleSystem {
			if strings.TrimSpace(m.Content) != "" {
				system = append(system, m.Content)
			}
			continue
		}
		convo = append(convo, m)
	}
	if len(system) > 0 {
		text := strings.Join(system, "\n\n")
		w.System = []wireBlock{{Type: "text", Text: &text, CacheControl: ephemeral()}}
	}
	msgs, err := toWire(convo)
	if err != nil {
		return nil, err
	}
	if len(msgs) == 0 {
		return nil, errors.New("anthropic: a request needs at least one user message")
	}
	// Cache the conversation so far: the next request, which repeats it,
	// reads it from the cache.
	last := &msgs[len(msgs)-1].Content
	(*last)[len(*last)-1].CacheControl = ephemeral()
	w.Messages = msgs
	for _, t := range req.Tools {
		schema := t.Parameters
		if len(schema) == 0 {
			schema = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		w.Tools = append(w.Tools, wireTool{Name: t.Name, Description: t.Description, InputSchema: schema})
	}
	if len(w.Tools) > 0 {
		w.Tools[len(w.Tools)-1].CacheControl = ephemeral()
	}
	budget := thinkingBudget[req.ReasoningEffort]
	if budget > 0 && !thinkingContinues(convo) {
		// A tool-use loop begun without thinking cannot turn it on: the
		// API wants the turn being continued to start with a thinking
		// block.
		budget = 0
	}
	if budget > 0 {
		w.Thinking = &wireThinking{Type: "enabled", BudgetTokens: budget}
	} else if req.Temperature != nil {
		// With thinking the API takes no temperature.
		w.Temperature = req.Temperature
	}
	w.MaxTokens = c.maxTokens(req.Model, budget)
	b, err := json.Marshal(w)
	if err != nil {
		return nil, fmt.Errorf("anthropic: encode request: %w", err)
	}
	return b, nil
}

func ephemeral() *wireCache { return &wireCache{Type: "ephemeral"} }

// thinkingContinues says whether thinking may be on for this request: no
// tool-use loop is open, or the assistant turn it continues has thinking.
func thinkingContinues(convo []messages.ChatMessage) bool {
	for i := len(convo) - 1; i >= 0; i-- {
		switch m := convo[i]; m.Role {
		case messages.RoleUser:
			return true
		case messages.RoleAssistant:
			return len(m.ToolCalls) == 0 || len(m.Thinking) > 0
		}
	}
	return true
}

// toWire maps the conversation: tool results become the user turn's
// tool_result blocks, and consecutive turns of one role are merged (the
// API wants them alternating).
func toWire(convo []messages.ChatMessage) ([]wireMessage, error) {
	var out []wireMessage
	add := func(role string, blocks ...wireBlock) {
		if len(blocks) == 0 {
			return
		}
		if n := len(out); n > 0 && out[n-1].Role == role {
			out[n-1].Content = append(out[n-1].Content, blocks...)
			return
		}
		out = append(out, wireMessage{Role: role, Content: blocks})
	}
	for i, m := range convo {
		switch m.Role {
		case messages.RoleUser:
			add("user", textBlock(m.Content))
		case messages.RoleTool:
			if m.ToolCallID == "" {
				return nil, fmt.Errorf("anthropic: message %d: tool result without a tool call id", i)
			}
			content := m.Content
			add("user", wireBlock{Type: "tool_result", ToolUseID: m.ToolCallID, Content: &content})
		case messages.RoleAssistant:
			var blocks []wireBlock
			for _, t := range m.Thinking {
				if t.Redacted != "" {
					blocks = append(blocks, wireBlock{Type: "redacted_thinking", Data: t.Redacted})
					continue
				}
				text, sig := t.Thinking, t.Signature
				blocks = append(blocks, wireBlock{Type: "thinking", Thinking: &text, Signature: &sig})
			}
			if strings.TrimSpace(m.Content) != "" {
				blocks = append(blocks, textBlock(m.Content))
			}
			for _, tc := range m.ToolCalls {
				blocks = append(blocks, wireBlock{Type: "tool_use", ID: tc.ID, Name: tc.Name, Input: toolInput(tc.Arguments)})
			}
			if len(blocks) == 0 {
				blocks = append(blocks, textBlock("(no answer)"))
			}
			add("assistant", blocks...)
		default:
			return nil, fmt.Errorf("anthropic: message %d: unknown role %q", i, m.Role)
		}
	}
	return out, nil
}

func textBlock(s string) wireBlock {
	if strings.TrimSpace(s) == "" {
		s = "(empty)" // the API refuses blank text blocks
	}
	return wireBlock{Type: "text", Text: &s}
}

// toolInput is a tool call's arguments as the object the API wants; what
// the model sent that is not an object (a cut stream) goes back as {}.
func toolInput(args string) json.RawMessage {
	var v map[string]json.RawMessage
	if json.Unmarshal([]byte(args), &v) != nil || v == nil {
		return json.RawMessage(`{}`)
	}
	return json.RawMessage(args)
}

// readBatch decodes a non-streamed answer.
func readBatch(r io.Reader) (provider.Response, error) {
	var wr wireResponse
	if err := json.NewDecoder(r).Decode(&wr); err != nil {
		return provider.Response{}, &provider.MalformedAnswer{Err: fmt.Errorf("decode response: %w", err)}
	}
	if wr.Error != nil {
		return provider.Response{}, eventError(wr.Error)
	}
	var a assembler
	a.start(&wr)
	for i, b := range wr.Content {
		b := b
		a.blockStart(i, &b)
	}
	a.stopReason = wr.StopReason
	a.done = true
	return a.response(), nil
}

// errorMessage extracts the message of an error body
// ({"type":"error","error":{"type","message"}}), else the raw text.
func errorMessage(status int, raw []byte) string {
	var body struct {
		Error *wireError `json:"error"`
	}
	msg := ""
	if json.Unmarshal(raw, &body) == nil && body.Error != nil && body.Error.Message != "" {
		msg = body.Error.Message
		if body.Error.Type != "" {
			msg = body.Error.Type + ": " + msg
		}
	}
	if msg == "" {
		msg = strings.TrimSpace(string(raw))
	}
	if msg == "" {
		msg = http.StatusText(status)
	}
	return cut(msg, 500)
}

func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// errorStatus is the HTTP status an error event's type stands for.
var errorStatus = map[string]int{
	"invalid_request_error": 400, "authentication_error": 401, "permission_error": 403, "not_found_error": 404,
	"request_too_large": 413, "rate_limit_error": 429, "api_error": 500, "timeout_error": 504, "overloaded_error": 529,
}

// eventError classifies an error sent inside a 200 answer (an SSE error
// event) as if it were the status it stands for: overloaded and API
// errors are retried, an invalid request is not.
func eventError(e *wireError) error {
	status, ok := errorStatus[e.Type]
	if !ok {
		status = 500 // an unknown failure of the server's
	}
	msg := e.Message
	if e.Type != "" {
		msg = e.Type + ": " + msg
	}
	return provider.ClassifyStatus(status, cut(msg, 500))
}

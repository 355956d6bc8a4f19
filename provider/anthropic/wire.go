package anthropic

import (
	"encoding/json"
	"math"

	"github.com/jazz-run/jazz/messages"
)

// The Messages API wire format (https://docs.anthropic.com/en/api/messages).

type wireRequest struct {
	Model       string        `json:"model"`
	MaxTokens   int           `json:"max_tokens"`
	System      []wireBlock   `json:"system,omitempty"`
	Messages    []wireMessage `json:"messages"`
	Tools       []wireTool    `json:"tools,omitempty"`
	Stream      bool          `json:"stream,omitempty"`
	Temperature *float64      `json:"temperature,omitempty"`
	Thinking    *wireThinking `json:"thinking,omitempty"`
}

type wireThinking struct {
	Type         string `json:"type"` // "enabled"
	BudgetTokens int    `json:"budget_tokens"`
}

type wireCache struct {
	Type string `json:"type"` // "ephemeral"
}

type wireMessage struct {
	Role    string      `json:"role"` // user | assistant
	Content []wireBlock `json:"content"`
}

// wireBlock is any content block; which fields are set follows Type.
type wireBlock struct {
	Type string `json:"type"`
	// text
	Text *string `json:"text,omitempty"`
	// thinking / redacted_thinking
	Thinking  *string `json:"thinking,omitempty"`
	Signature *string `json:"signature,omitempty"`
	Data      string  `json:"data,omitempty"`
	// tool_use
	ID    string          `json:"id,omitempty"`
	Name  string          `json:"name,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`
	// tool_result
	ToolUseID string  `json:"tool_use_id,omitempty"`
	Content   *string `json:"content,omitempty"`

	CacheControl *wireCache `json:"cache_control,omitempty"`
}

type wireTool struct {
	Name         string          `json:"name"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"input_schema"`
	CacheControl *wireCache      `json:"cache_control,omitempty"`
}

// wireUsage is the usage of a message. In a stream, message_start carries
// the input side and message_delta the output (and, on newer servers, the
// input counts again); a count that is absent is nil, not 0.
type wireUsage struct {
	InputTokens              *int `json:"input_tokens"`
	OutputTokens             *int `json:"output_tokens"`
	CacheCreationInputTokens *int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     *int `json:"cache_read_input_tokens"`
}

// merge lays the counts o has over u.
func (u *wireUsage) merge(o *wireUsage) {
	if o == nil {
		return
	}
	for _, f := range []struct{ dst, src **int }{
		{&u.InputTokens, &o.InputTokens}, {&u.OutputTokens, &o.OutputTokens},
		{&u.CacheCreationInputTokens, &o.CacheCreationInputTokens}, {&u.CacheReadInputTokens, &o.CacheReadInputTokens},
	} {
		if *f.src != nil {
			*f.dst = *f.src
		}
	}
}

// toUsage maps the counts to jazz's: the prompt is everything read, cache
// reads and writes included (Anthropic's input_tokens counts neither), so
// the cost formula prices each part at its own rate.
func (u *wireUsage) toUsage() messages.Usage {
	v := func(p *int) int {
		if p == nil {
			return 0
		}
		return *p
	}
	out := messages.Usage{
		PromptTokens:     sum(v(u.InputTokens), v(u.CacheCreationInputTokens), v(u.CacheReadInputTokens)),
		CompletionTokens: v(u.OutputTokens),
		CacheReadTokens:  v(u.CacheReadInputTokens),
		CacheWriteTokens: v(u.CacheCreationInputTokens),
	}
	out.TotalTokens = sum(out.PromptTokens, out.CompletionTokens)
	return out
}

// sum adds counts without wrapping: a server's absurd figures saturate
// (and the ledger refuses them) instead of adding up to a small number.
func sum(ns ...int) int {
	t := 0
	for _, n := range ns {
		if n < 0 {
			return n // refused downstream as negative
		}
		if t > math.MaxInt-n {
			return math.MaxInt
		}
		t += n
	}
	return t
}

func (u *wireUsage) reported() bool {
	return u.InputTokens != nil || u.OutputTokens != nil
}

// wireResponse is a non-streamed answer (and message_start's message).
type wireResponse struct {
	ID         string      `json:"id"`
	Type       string      `json:"type"`
	Model      string      `json:"model"`
	Content    []wireBlock `json:"content"`
	StopReason string      `json:"stop_reason"`
	Usage      *wireUsage  `json:"usage"`
	Error      *wireError  `json:"error"`
}

type wireError struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// wireEvent is one SSE event's data.
type wireEvent struct {
	Type         string        `json:"type"`
	Message      *wireResponse `json:"message"`
	Index        int           `json:"index"`
	ContentBlock *wireBlock    `json:"content_block"`
	Delta        *wireDelta    `json:"delta"`
	Usage        *wireUsage    `json:"usage"`
	Error        *wireError    `json:"error"`
}

type wireDelta struct {
	Type        string `json:"type"`
	Text        string `json:"text"`
	PartialJSON string `json:"partial_json"`
	Thinking    string `json:"thinking"`
	Signature   string `json:"signature"`
	StopReason  string `json:"stop_reason"`
}

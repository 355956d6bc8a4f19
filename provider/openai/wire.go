package openai

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/provider"
)

// The Chat Completions wire shapes, only the fields jazz reads or writes.

type wireMessage struct {
	Role string `json:"role"`
	// Content is a pointer so an assistant turn made only of tool calls
	// encodes as null.
	Content    *string        `json:"content"`
	ToolCalls  []wireToolCall `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
}

type wireToolCall struct {
	ID       string   `json:"id"`
	Type     string   `json:"type"`
	Function wireCall `json:"function"`
}

type wireCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type wireTool struct {
	Type     string       `json:"type"`
	Function wireFunction `json:"function"`
}

type wireFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
}

// wireCompletion is a batch answer.
type wireCompletion struct {
	ID      string `json:"id"`
	Model   string `json:"model"`
	Choices []struct {
		Message struct {
			Content          string `json:"content"`
			ReasoningContent string `json:"reasoning_content"`
			Reasoning        string `json:"reasoning"`
			ToolCalls        []struct {
				ID       string `json:"id"`
				Function struct {
					Name      string          `json:"name"`
					Arguments json.RawMessage `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Usage *wireUsage     `json:"usage"`
	Error *wireErrorBody `json:"error"`
}

// wireChunk is one streamed chunk.
type wireChunk struct {
	ID      string `json:"id"`
	Model   string `json:"model"`
	Choices []struct {
		Delta struct {
			Content          string          `json:"content"`
			ReasoningContent string          `json:"reasoning_content"`
			Reasoning        string          `json:"reasoning"`
			ToolCalls        []wireToolDelta `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *wireUsage     `json:"usage"`
	Error *wireErrorBody `json:"error"`
}

type wireToolDelta struct {
	// Index is a pointer: a few servers omit it, and 0 must not merge two
	// distinct calls.
	Index    *int   `json:"index"`
	ID       string `json:"id"`
	Function struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

type wireUsage struct {
	PromptTokens        wireCount `json:"prompt_tokens"`
	CompletionTokens    wireCount `json:"completion_tokens"`
	TotalTokens         wireCount `json:"total_tokens"`
	PromptTokensDetails *struct {
		CachedTokens wireCount `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails *struct {
		ReasoningTokens wireCount `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
}

// wireCount is a token count as a server sent it. Any JSON number is
// accepted so a wild figure never fails the whole response; one that is
// not a whole number an int holds decodes as -1, which the run's account
// refuses (ledger.Validate), making the cost unknown.
type wireCount int

func (c *wireCount) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*c = 0
		return nil
	}
	var n json.Number
	if err := json.Unmarshal(b, &n); err != nil {
		return err
	}
	i, err := strconv.ParseInt(string(n), 10, 0)
	if err != nil {
		i = -1
	}
	*c = wireCount(i)
	return nil
}

func (u *wireUsage) toUsage() messages.Usage {
	out := messages.Usage{PromptTokens: int(u.PromptTokens), CompletionTokens: int(u.CompletionTokens), TotalTokens: int(u.TotalTokens)}
	if out.TotalTokens == 0 && out.PromptTokens >= 0 && out.CompletionTokens >= 0 && out.PromptTokens <= math.MaxInt-out.CompletionTokens {
		out.TotalTokens = out.PromptTokens + out.CompletionTokens
	}
	if u.PromptTokensDetails != nil {
		out.CacheReadTokens = int(u.PromptTokensDetails.CachedTokens)
	}
	if u.CompletionTokensDetails != nil {
		out.ReasoningTokens = int(u.CompletionTokensDetails.ReasoningTokens)
	}
	return out
}

// wireErrorBody is `{"error":{...}}`; some servers put a bare string there.
type wireErrorBody struct {
	Message string
	Code    int
}

func (e *wireErrorBody) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		e.Message = s
		return nil
	}
	var o struct {
		Message string          `json:"message"`
		Code    json.RawMessage `json:"code"`
	}
	if err := json.Unmarshal(b, &o); err != nil {
		return err
	}
	e.Message = o.Message
	// code is a number on OpenRouter, a string ("rate_limit_exceeded") on
	// OpenAI; only a number is an HTTP status.
	var n int
	if json.Unmarshal(o.Code, &n) == nil {
		e.Code = n
	}
	return nil
}

// asError turns an error object inside a 200 answer (a mid-stream failure)
// into a provider.Error. With an HTTP-like code it is classified like that
// status; without one it is a status-less failure, retryable as a "network
// issue" (agent-loop.md §6): the request itself was accepted and the
// failure happened on the way back.
func (e *wireErrorBody) asError() error {
	msg := cut(e.Message)
	if msg == "" {
		msg = "unknown error"
	}
	if e.Code >= 400 && e.Code <= 599 {
		return provider.ClassifyStatus(e.Code, msg)
	}
	// A status-less complaint about the key is an auth failure: retrying
	// cannot fix it (agent-loop.md §6).
	if low := strings.ToLower(msg); strings.Contains(low, "authentication") || strings.Contains(low, "api key") {
		return &provider.Error{Message: fmt.Sprintf("Authentication failed: %s. Check the API key for this provider.", msg)}
	}
	return &provider.Error{
		Message:   fmt.Sprintf("the server reported an error mid-answer: %s", msg),
		Retryable: true,
		Reason:    provider.ReasonNetwork,
		Cause:     provider.Brief(msg),
	}
}

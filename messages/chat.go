package messages

import "encoding/json"

// Roles of a ChatMessage.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// ChatMessage is one entry of a conversation as the model sees it.
type ChatMessage struct {
	Role       string     `json:"role"`
	Content    string     `json:"content"`
	Reasoning  string     `json:"reasoning,omitempty"`
	ToolCalls  []ToolCall `json:"toolCalls,omitempty"`
	ToolCallID string     `json:"toolCallId,omitempty"`
	// Name is the tool name on a RoleTool message.
	Name string `json:"name,omitempty"`
	// Kind marks a message jazz wrote rather than the user or the model
	// (KindSummary, KindMeltdown, KindPreamble); "" is an ordinary one.
	// Providers never see it.
	Kind string `json:"kind,omitempty"`
	// Thinking are an assistant turn's thinking blocks as the provider
	// sent them (Anthropic's extended thinking). They go back with the
	// turn, signatures untouched: a tool-use loop with thinking on
	// fails without them.
	Thinking []ThinkingBlock `json:"thinking,omitempty"`
}

// ThinkingBlock is one block of a model's thinking. Signature proves the
// text unaltered; Redacted holds a redacted block's encrypted data
// instead of text.
type ThinkingBlock struct {
	Thinking  string `json:"thinking,omitempty"`
	Signature string `json:"signature,omitempty"`
	Redacted  string `json:"redacted,omitempty"`
}

// Kinds of a ChatMessage jazz wrote itself.
const (
	// KindSummary is a compaction's summary, standing in for the messages
	// it replaced; a later compaction merges into it.
	KindSummary = "summary"
	// KindMeltdown is the stored notice that the agent is looping.
	KindMeltdown = "meltdown"
	// KindPreamble is the work-state preamble of a resumed conversation.
	KindPreamble = "preamble"
)

// ToolCall is a call exactly as the model emitted it: Arguments is the raw
// string, which may not even be JSON.
type ToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// ToolSpec is what the model is told about one tool.
type ToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// Usage counts the tokens of one or more model calls.
type Usage struct {
	PromptTokens     int `json:"promptTokens"`
	CompletionTokens int `json:"completionTokens"`
	TotalTokens      int `json:"totalTokens"`
	ReasoningTokens  int `json:"reasoningTokens,omitempty"`
	CacheReadTokens  int `json:"cacheReadTokens,omitempty"`
	CacheWriteTokens int `json:"cacheWriteTokens,omitempty"`
}

// Add sums two usages.
func (u Usage) Add(o Usage) Usage {
	return Usage{
		PromptTokens:     u.PromptTokens + o.PromptTokens,
		CompletionTokens: u.CompletionTokens + o.CompletionTokens,
		TotalTokens:      u.TotalTokens + o.TotalTokens,
		ReasoningTokens:  u.ReasoningTokens + o.ReasoningTokens,
		CacheReadTokens:  u.CacheReadTokens + o.CacheReadTokens,
		CacheWriteTokens: u.CacheWriteTokens + o.CacheWriteTokens,
	}
}

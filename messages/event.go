package messages

import "encoding/json"

// Event types of the `--events` NDJSON stream.
const (
	EventStreamStart           = "stream_start"
	EventThinkingStart         = "thinking_start"
	EventThinkingChunk         = "thinking_chunk"
	EventThinkingComplete      = "thinking_complete"
	EventTextStart             = "text_start"
	EventTextChunk             = "text_chunk"
	EventToolCall              = "tool_call"
	EventToolsDetected         = "tools_detected"
	EventToolExecutionStart    = "tool_execution_start"
	EventToolExecutionComplete = "tool_execution_complete"
	EventUsageUpdate           = "usage_update"
	EventComplete              = "complete"
	EventApprovalRequired      = "approval_required"
	EventApprovalResolved      = "approval_resolved"
	EventSubagentStart         = "subagent_start"
	EventSubagentComplete      = "subagent_complete"
	EventErrorType             = "error"
	EventUserInputRequired     = "user_input_required"
	EventWarning               = "warning"
	// EventContextManaged: a rung of context management changed the
	// agent's history (agent-loop.md §4).
	EventContextManaged = "context_managed"
	EventStatus         = "status"
	// EventRunStart and EventRunEnd bracket every run's stream: a reader
	// knows the run's id, agent, model and policy from the first line and
	// that nothing follows the last one.
	EventRunStart = "run_start"
	EventRunEnd   = "run_end"
	// EventDropped stands for an event that could not be published on
	// the bus (larger than the server takes): a watcher of the bus knows
	// it missed one, which one (Dropped, its call or request) and why.
	EventDropped = "event_dropped"
)

// Event categories selectable with --events.
const (
	CategoryTools     = "tools"
	CategoryReasoning = "reasoning"
	CategoryText      = "text"
	CategoryUsage     = "usage"
	CategoryApproval  = "approval"
	CategorySubagent  = "subagent"
	CategoryAll       = "all"
	// CategoryAlways marks events sent whatever was selected.
	CategoryAlways = "always"
)

// CategoryOf says which --events category an event type belongs to.
func CategoryOf(eventType string) string {
	switch eventType {
	case EventToolsDetected, EventToolCall, EventToolExecutionStart, EventToolExecutionComplete:
		return CategoryTools
	case EventThinkingStart, EventThinkingChunk, EventThinkingComplete:
		return CategoryReasoning
	case EventTextStart, EventTextChunk:
		return CategoryText
	case EventStreamStart, EventUsageUpdate, EventComplete, EventContextManaged:
		return CategoryUsage
	case EventApprovalRequired, EventApprovalResolved:
		return CategoryApproval
	case EventSubagentStart, EventSubagentComplete:
		return CategorySubagent
	}
	return CategoryAlways
}

// EventToolCallBody is the OpenAI-shaped call inside a tool_call event.
type EventToolCallBody struct {
	ID       string            `json:"id"`
	Type     string            `json:"type"`
	Function EventFunctionBody `json:"function"`
}

// EventFunctionBody is the function part of EventToolCallBody.
type EventFunctionBody struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// EventContext is one context-management step: the rung (clear, warn,
// compact, trim), the estimated prompt tokens and message counts before
// and after, the budget, and the results a clear replaced.
type EventContext struct {
	Rung           string         `json:"rung"`
	TokensBefore   int            `json:"tokensBefore"`
	TokensAfter    int            `json:"tokensAfter"`
	TokensSaved    int            `json:"tokensSaved"`
	MessagesBefore int            `json:"messagesBefore"`
	MessagesAfter  int            `json:"messagesAfter"`
	Budget         int            `json:"budget"`
	Cleared        []EventCleared `json:"cleared,omitempty"`
}

// EventCleared is one tool result a clear replaced.
type EventCleared struct {
	ToolCallID string `json:"toolCallId"`
	ToolName   string `json:"toolName"`
	Tokens     int    `json:"tokens"`
}

// EventError is the serialized form of an error.
type EventError struct {
	Name    string `json:"name"`
	Message string `json:"message"`
	Stack   string `json:"stack,omitempty"`
}

// EventResponse is the body of a complete event.
type EventResponse struct {
	ID        string              `json:"id"`
	Model     string              `json:"model"`
	Content   string              `json:"content"`
	Reasoning string              `json:"reasoning,omitempty"`
	ToolCalls []EventToolCallBody `json:"toolCalls,omitempty"`
	Usage     *Usage              `json:"usage,omitempty"`
}

// EventMetrics is the metrics part of a complete event.
type EventMetrics struct {
	FirstTokenLatencyMs     int64   `json:"firstTokenLatencyMs"`
	FirstTextLatencyMs      int64   `json:"firstTextLatencyMs,omitempty"`
	FirstReasoningLatencyMs int64   `json:"firstReasoningLatencyMs,omitempty"`
	TokensPerSecond         float64 `json:"tokensPerSecond,omitempty"`
	TotalTokens             int     `json:"totalTokens,omitempty"`
}

// Event is one progress event. It is the single source of the NDJSON
// stream: the renderer writes Type and the set fields, nothing else. Fields
// that may legitimately be false or zero are pointers.
type Event struct {
	Type string `json:"type"`
	Place
	Trace Trace `json:"-"`

	Provider            string             `json:"provider,omitempty"`
	Model               string             `json:"model,omitempty"`
	Timestamp           int64              `json:"timestamp,omitempty"`
	PinnedContextWindow int                `json:"pinnedContextWindow,omitempty"`
	Content             string             `json:"content,omitempty"`
	Delta               string             `json:"delta,omitempty"`
	Accumulated         string             `json:"accumulated,omitempty"`
	Sequence            *int               `json:"sequence,omitempty"`
	TotalTokens         int                `json:"totalTokens,omitempty"`
	ToolCall            *EventToolCallBody `json:"toolCall,omitempty"`
	ToolNames           []string           `json:"toolNames,omitempty"`
	ToolsRequiringAppr  []string           `json:"toolsRequiringApproval,omitzero"` // nil omitted, empty sent as []
	ToolName            string             `json:"toolName,omitempty"`
	Arguments           json.RawMessage    `json:"arguments,omitempty"`
	Metadata            json.RawMessage    `json:"metadata,omitempty"`
	LongRunning         bool               `json:"longRunning,omitempty"`
	Result              *string            `json:"result,omitempty"`
	DurationMs          *int64             `json:"durationMs,omitempty"`
	Summary             string             `json:"summary,omitempty"`
	Success             *bool              `json:"success,omitempty"`
	ErrorText           string             `json:"-"`
	Usage               *Usage             `json:"usage,omitempty"`
	Response            *EventResponse     `json:"response,omitempty"`
	TotalDurationMs     *int64             `json:"totalDurationMs,omitempty"`
	Metrics             *EventMetrics      `json:"metrics,omitempty"`
	// Context (context_managed) is what a context rung did.
	Context           *EventContext `json:"context,omitempty"`
	Message           string        `json:"message,omitempty"`
	PreviewDiff       string        `json:"previewDiff,omitempty"`
	RiskLevel         string        `json:"riskLevel,omitempty"`
	AutoApprovePolicy string        `json:"autoApprovePolicy,omitempty"`
	Approved          *bool         `json:"approved,omitempty"`
	Auto              *bool         `json:"auto,omitempty"`
	// Asked is set on approval events: true when a person was asked (the
	// event then carries the RequestID a decision must echo), false when
	// policy, an allowlist, the unattended rule or a cancel settled it.
	Asked     *bool  `json:"asked,omitempty"`
	DecidedBy string `json:"decidedBy,omitempty"`
	Task      string `json:"task,omitempty"`
	// RememberScope, on an asked approval, is how far "always" reaches:
	// "run" (the whole tree) or "agent" (this sub-agent only).
	RememberScope string `json:"rememberScope,omitempty"`
	// CommandKeys, on an asked execute_command approval, are the
	// allowlist keys "remember":"command" adds (ApprovalRequired's): the
	// key of `npm -v` is "npm", which approves every later npm command,
	// more than the command shown, and a bridge must say so.
	CommandKeys []string `json:"commandKeys,omitempty"`
	// ActionHash, on a bridge's approval_required line, is the digest of
	// exactly what will run (approvals.ActionHash): a decision that echoes
	// it is taken only for that action.
	ActionHash  string       `json:"actionHash,omitempty"`
	Persona     string       `json:"persona,omitempty"`
	Level       string       `json:"level,omitempty"`
	Err         *EventError  `json:"-"`
	Recoverable *bool        `json:"recoverable,omitempty"`
	RequestID   string       `json:"requestId,omitempty"`
	Question    string       `json:"question,omitempty"`
	Suggestions []Suggestion `json:"suggestions,omitempty"`
	AllowCustom *bool        `json:"allowCustom,omitempty"`
	CostUSD     *float64     `json:"costUSD,omitempty"`
	// Policy (run_start) is the approval policy the run started with,
	// "none" when it has none.
	Policy string `json:"policy,omitempty"`
	// ConversationID (run_start) is the run's memory key, when it has one.
	ConversationID string `json:"conversationId,omitempty"`
	// OK, StopReason and CostKnown (run_end) are how the run ended; its
	// error, when it failed, is the event's "error" string.
	OK         *bool  `json:"ok,omitempty"`
	StopReason string `json:"stopReason,omitempty"`
	CostKnown  *bool  `json:"costKnown,omitempty"`
	// Dropped (event_dropped) is the type of the event that did not
	// reach the bus.
	Dropped string `json:"dropped,omitempty"`
}

// MarshalJSON writes `error` as a string for tool_execution_complete and as
// an {name,message,stack} object for error events, as the protocol has it.
func (e Event) MarshalJSON() ([]byte, error) {
	type plain Event
	var errField any
	if e.Err != nil {
		errField = e.Err
	} else if e.ErrorText != "" {
		errField = e.ErrorText
	}
	if errField == nil {
		return json.Marshal(plain(e))
	}
	return json.Marshal(struct {
		plain
		Error any `json:"error"`
	}{plain(e), errField})
}

// UnmarshalJSON reverses MarshalJSON.
func (e *Event) UnmarshalJSON(data []byte) error {
	type plain Event
	var aux struct {
		plain
		Error json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(data, &aux); err != nil {
		return err
	}
	*e = Event(aux.plain)
	if len(aux.Error) > 0 && string(aux.Error) != "null" {
		if aux.Error[0] == '"' {
			return json.Unmarshal(aux.Error, &e.ErrorText)
		}
		e.Err = &EventError{}
		return json.Unmarshal(aux.Error, e.Err)
	}
	return nil
}

// Ptr returns a pointer to v, for the optional fields of Event.
func Ptr[T any](v T) *T { return &v }

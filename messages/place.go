package messages

// Place says where a message belongs: which run, which agent inside that run
// (the top-level agent or a subagent), and which tool call, when there is one.
type Place struct {
	RunID     string `json:"runId"`
	AgentID   string `json:"agentId,omitempty"`
	AgentName string `json:"agentName,omitempty"`
	Depth     int    `json:"depth,omitempty"`
	// ParentAgentID is the agent that spawned this one (subagents only).
	ParentAgentID string `json:"parentAgentId,omitempty"`
	ToolCallID    string `json:"toolCallId,omitempty"`
}

// Trace is a W3C trace-context carrier (traceparent, tracestate). It is a
// plain map so it crosses NATS as JSON and maps onto NATS headers unchanged.
type Trace map[string]string

// Clone returns a copy so a carrier is never shared between messages.
func (t Trace) Clone() Trace {
	if t == nil {
		return nil
	}
	c := make(Trace, len(t))
	for k, v := range t {
		c[k] = v
	}
	return c
}

// Get implements the OpenTelemetry TextMapCarrier read side.
func (t Trace) Get(key string) string { return t[key] }

// Set implements the OpenTelemetry TextMapCarrier write side.
func (t Trace) Set(key, value string) { t[key] = value }

// Keys implements the OpenTelemetry TextMapCarrier key listing.
func (t Trace) Keys() []string {
	keys := make([]string, 0, len(t))
	for k := range t {
		keys = append(keys, k)
	}
	return keys
}

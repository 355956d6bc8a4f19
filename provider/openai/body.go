package openai

import (
	"encoding/json"
	"github.com/jazz-run/jazz/internal/jsonstr"
	"slices"

	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/provider"
)

// requestBody builds the JSON body: exactly the bytes requestBodyMarshal
// writes (body_test.go compares them), without encoding/json's reflection
// for the conversation. The conversation is almost all of a request, and
// all of its growth: a turn of 100 tool calls sends 100 results back,
// each a JSON text escaped once more as a string, and reflection over the
// message structs cost about as much again as the escaping itself.
// Anything this path does not build itself (tools, temperature, vendor
// fields) is encoded by encoding/json as before; on any failure the
// reference runs instead, so an error reads exactly as it always did.
func (c *Client) requestBody(req provider.Request) ([]byte, error) {
	if b, ok := c.appendBody(nil, req); ok {
		return b, nil
	}
	return c.requestBodyMarshal(req)
}

// ownMessages and ownTools stand in the body's map for the values
// requestBody writes itself; a vendor field of the same name (ExtraBody,
// Reasoning) replaces them, as it replaced the real values before.
type (
	ownMessages struct{}
	ownTools    struct{}
)

// appendBody writes the body of req after b; false when it cannot, in
// which case requestBodyMarshal says why.
func (c *Client) appendBody(b []byte, req provider.Request) ([]byte, bool) {
	if req.Model == "" {
		return nil, false
	}
	// The map requestBodyMarshal builds, with the same keys in the same
	// order of precedence: ours, then Reasoning's, then ExtraBody's.
	body := map[string]any{
		"model":    req.Model,
		"messages": ownMessages{},
		"stream":   req.Stream,
	}
	if req.Stream {
		body["stream_options"] = map[string]any{"include_usage": true}
	}
	if len(req.Tools) > 0 {
		body["tools"] = ownTools{}
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
	if _, own := body["messages"].(ownMessages); !own && !wireable(req.Messages) {
		// Replaced, yet toWire refuses them all the same.
		return nil, false
	}
	// encoding/json writes a map's keys sorted by strings.Compare.
	keys := make([]string, 0, len(body))
	for k := range body {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if b == nil {
		b = make([]byte, 0, bodySize(req))
	}
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonstr.Append(b, k)
		b = append(b, ':')
		var ok bool
		switch v := body[k].(type) {
		case ownMessages:
			if b, ok = appendMessages(b, req.Messages); !ok {
				return nil, false
			}
		case ownTools:
			enc, err := json.Marshal(wireTools(req.Tools))
			if err != nil {
				return nil, false
			}
			b = append(b, enc...)
		case string:
			b = jsonstr.Append(b, v)
		case bool:
			b = appendBool(b, v)
		default:
			// A map's value is encoded as json.Marshal encodes it alone.
			enc, err := json.Marshal(v)
			if err != nil {
				return nil, false
			}
			b = append(b, enc...)
		}
	}
	return append(b, '}'), true
}

// wireTools is the request's tools as requestBodyMarshal sends them.
func wireTools(ts []messages.ToolSpec) []wireTool {
	tools := make([]wireTool, len(ts))
	for i, t := range ts {
		params := t.Parameters
		if len(params) == 0 {
			params = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		tools[i] = wireTool{Type: "function", Function: wireFunction{Name: t.Name, Description: t.Description, Parameters: params}}
	}
	return tools
}

// bodySize is a guess at the body's length, so the buffer is sized once:
// the messages' text, their escapes and the fields around them.
func bodySize(req provider.Request) int {
	n := 512
	for _, m := range req.Messages {
		n += 64 + len(m.Content) + len(m.Content)/8
		for _, tc := range m.ToolCalls {
			n += 80 + len(tc.ID) + len(tc.Name) + len(tc.Arguments) + len(tc.Arguments)/4
		}
	}
	return n
}

func appendBool(b []byte, v bool) []byte {
	if v {
		return append(b, "true"...)
	}
	return append(b, "false"...)
}

// wireable reports whether toWire takes every message.
func wireable(ms []messages.ChatMessage) bool {
	for i := range ms {
		switch ms[i].Role {
		case messages.RoleSystem, messages.RoleUser, messages.RoleAssistant:
		case messages.RoleTool:
			if ms[i].ToolCallID == "" {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// appendMessages writes the messages as encoding/json writes the
// []wireMessage that toWire maps them to; false where toWire fails.
func appendMessages(b []byte, ms []messages.ChatMessage) ([]byte, bool) {
	b = append(b, '[')
	for i := range ms {
		m := &ms[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"role":`...)
		b = jsonstr.Append(b, m.Role)
		b = append(b, `,"content":`...)
		switch m.Role {
		case messages.RoleSystem, messages.RoleUser:
			b = jsonstr.Append(b, m.Content)
		case messages.RoleAssistant:
			// toWire: null, not "", beside tool calls.
			if m.Content == "" && len(m.ToolCalls) > 0 {
				b = append(b, "null"...)
			} else {
				b = jsonstr.Append(b, m.Content)
			}
			if len(m.ToolCalls) > 0 {
				b = append(b, `,"tool_calls":[`...)
				for j := range m.ToolCalls {
					tc := &m.ToolCalls[j]
					if j > 0 {
						b = append(b, ',')
					}
					b = append(b, `{"id":`...)
					b = jsonstr.Append(b, tc.ID)
					b = append(b, `,"type":"function","function":{"name":`...)
					b = jsonstr.Append(b, tc.Name)
					b = append(b, `,"arguments":`...)
					b = jsonstr.Append(b, tc.Arguments)
					b = append(b, "}}"...)
				}
				b = append(b, ']')
			}
		case messages.RoleTool:
			if m.ToolCallID == "" {
				return nil, false
			}
			b = jsonstr.Append(b, m.Content)
			b = append(b, `,"tool_call_id":`...)
			b = jsonstr.Append(b, m.ToolCallID)
		default:
			return nil, false
		}
		b = append(b, '}')
	}
	return append(b, ']'), true
}

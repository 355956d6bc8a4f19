package cli

import (
	"encoding/json"
	"errors"
	"github.com/jazz-run/jazz/internal/jsonstr"
	"math"
	"strconv"
)

// The run's envelopes are written by hand, byte for byte as
// encoding/json.Marshal writes their structs (TestEnvelopeEncodersAreMarshal
// compares the two): Marshal would build its reflection caches for these
// types in every process only to write one line.

// appendJSON writes e as Marshal does.
func (e successEnvelope) appendJSON(b []byte) ([]byte, error) {
	b = append(b, `{"ok":`...)
	b = strconv.AppendBool(b, e.OK)
	b = append(b, `,"answer":`...)
	b = jsonstr.Append(b, e.Answer)
	b = append(b, `,"stopReason":`...)
	b = jsonstr.Append(b, e.StopReason)
	b = append(b, `,"costUSD":`...)
	b, err := appendJSONFloat(b, e.CostUSD)
	if err != nil {
		return nil, err
	}
	b = append(b, `,"costKnown":`...)
	b = strconv.AppendBool(b, e.CostKnown)
	b = append(b, `,"tokenUsage":`...)
	b = e.TokenUsage.appendJSON(b)
	b = append(b, `,"toolCalls":`...)
	b = appendCalls(b, e.ToolCalls)
	b = append(b, `,"declinedToolCalls":`...)
	b = appendCalls(b, e.Declined)
	if len(e.Messages) > 0 {
		// Only --ephemeral has them: its transcript is worth the reflection.
		m, err := json.Marshal(e.Messages)
		if err != nil {
			return nil, err
		}
		b = append(b, `,"messages":`...)
		b = append(b, m...)
	}
	return append(b, '}'), nil
}

// appendJSON writes e as Marshal does.
func (e runFailureEnvelope) appendJSON(b []byte) ([]byte, error) {
	b = append(b, `{"ok":`...)
	b = strconv.AppendBool(b, e.OK)
	b = append(b, `,"error":`...)
	b = jsonstr.Append(b, e.Error)
	b = append(b, `,"stopReason":`...)
	b = jsonstr.Append(b, e.StopReason)
	if e.Answer != "" {
		b = append(b, `,"answer":`...)
		b = jsonstr.Append(b, e.Answer)
	}
	b = append(b, `,"costUSD":`...)
	b, err := appendJSONFloat(b, e.CostUSD)
	if err != nil {
		return nil, err
	}
	b = append(b, `,"tokenUsage":`...)
	b = e.TokenUsage.appendJSON(b)
	b = append(b, `,"toolCalls":`...)
	b = appendCalls(b, e.ToolCalls)
	b = append(b, `,"declinedToolCalls":`...)
	b = appendCalls(b, e.Declined)
	return append(b, '}'), nil
}

func (u usageView) appendJSON(b []byte) []byte {
	b = append(b, `{"promptTokens":`...)
	b = strconv.AppendInt(b, int64(u.PromptTokens), 10)
	b = append(b, `,"completionTokens":`...)
	b = strconv.AppendInt(b, int64(u.CompletionTokens), 10)
	b = append(b, `,"totalTokens":`...)
	b = strconv.AppendInt(b, int64(u.TotalTokens), 10)
	if u.CacheReadTokens != 0 {
		b = append(b, `,"cacheReadTokens":`...)
		b = strconv.AppendInt(b, int64(u.CacheReadTokens), 10)
	}
	return append(b, '}')
}

// appendCalls writes a list of calls; nil is null, as Marshal has it.
func appendCalls(b []byte, calls []toolCallView) []byte {
	if calls == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, c := range calls {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"id":`...)
		b = jsonstr.Append(b, c.ID)
		b = append(b, `,"name":`...)
		b = jsonstr.Append(b, c.Name)
		b = append(b, `,"arguments":`...)
		b = jsonstr.Append(b, c.Arguments)
		if c.AgentID != "" {
			b = append(b, `,"agentId":`...)
			b = jsonstr.Append(b, c.AgentID)
		}
		if c.AgentName != "" {
			b = append(b, `,"agentName":`...)
			b = jsonstr.Append(b, c.AgentName)
		}
		b = append(b, `,"depth":`...)
		b = strconv.AppendInt(b, int64(c.Depth), 10)
		if c.DecidedBy != "" {
			b = append(b, `,"decidedBy":`...)
			b = jsonstr.Append(b, c.DecidedBy)
		}
		b = append(b, '}')
	}
	return append(b, ']')
}

// appendJSONFloat writes f as Marshal writes a float64: the shortest
// decimal that reads back as f, in exponent form below 1e-6 and from
// 1e21 on, the exponent without a leading zero.
func appendJSONFloat(b []byte, f float64) ([]byte, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		// Marshal's UnsupportedValueError, word for word.
		return nil, errors.New("json: unsupported value: " + strconv.FormatFloat(f, 'g', -1, 64))
	}
	format := byte('f')
	if a := math.Abs(f); a != 0 && (a < 1e-6 || a >= 1e21) {
		format = 'e'
	}
	start := len(b)
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// 5e-07 is written 5e-7.
		if n := len(b); n-start >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, nil
}

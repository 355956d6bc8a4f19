package openai

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/provider"
	evstream "github.com/jazz-run/jazz/provider/sse"
)

// maxSSELine bounds one SSE line; a chunk carrying a whole tool-call
// argument blob can be large, but not this large.
const maxSSELine = 16 << 20

// readStream parses a Chat Completions SSE stream (package sse): each
// event's data is one chunk JSON, `[DONE]` ends the stream.
func readStream(r io.Reader, onDelta func(provider.Delta)) (provider.Response, error) {
	a := assembler{onDelta: onDelta}
	done := false
	err := evstream.Read(r, maxSSELine, func(d []byte) (bool, error) {
		if string(bytes.TrimSpace(d)) == "[DONE]" {
			done = true
			return true, nil
		}
		return false, a.chunk(d)
	})
	if err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return provider.Response{}, &provider.MalformedAnswer{Err: fmt.Errorf("an SSE line is longer than %d bytes", maxSSELine)}
		}
		return provider.Response{}, err
	}
	if !done && !a.finished {
		return provider.Response{}, fmt.Errorf("the stream ended before the answer was complete (no finish reason, no [DONE]): %w", io.ErrUnexpectedEOF)
	}
	return a.response(), nil
}

// assembler accumulates chunks into one Response.
type assembler struct {
	onDelta   func(provider.Delta)
	id, model string
	text      strings.Builder
	reasoning strings.Builder
	split     thinkSplitter
	calls     []*callAcc
	byIndex   map[int]int
	usage     *wireUsage
	finished  bool
}

type callAcc struct {
	id, name string
	args     strings.Builder
}

func (a *assembler) emit(d provider.Delta) {
	a.text.WriteString(d.Text)
	a.reasoning.WriteString(d.Reasoning)
	if a.onDelta != nil {
		a.onDelta(d)
	}
}

func (a *assembler) chunk(data []byte) error {
	var c wireChunk
	if err := json.Unmarshal(data, &c); err != nil {
		return &provider.MalformedAnswer{Err: fmt.Errorf("bad JSON in a stream event (%v): %s", err, cut(string(data)))}
	}
	if c.Error != nil {
		return c.Error.asError()
	}
	if a.id == "" {
		a.id = c.ID
	}
	if a.model == "" {
		a.model = c.Model
	}
	if c.Usage != nil {
		a.usage = c.Usage
	}
	for _, ch := range c.Choices {
		d := ch.Delta
		r := d.ReasoningContent
		if r == "" {
			r = d.Reasoning
		}
		if r != "" {
			a.emit(provider.Delta{Reasoning: r})
		}
		a.split.feed(d.Content, a.emit)
		for _, td := range d.ToolCalls {
			a.toolDelta(td)
		}
		if ch.FinishReason != nil && *ch.FinishReason != "" {
			a.finished = true
		}
	}
	return nil
}

// toolDelta merges one tool-call fragment. Fragments of a call share its
// index; the id and name come once, the arguments in pieces.
func (a *assembler) toolDelta(td wireToolDelta) {
	var acc *callAcc
	switch {
	case td.Index != nil:
		if a.byIndex == nil {
			a.byIndex = map[int]int{}
		}
		i, ok := a.byIndex[*td.Index]
		if !ok {
			i = len(a.calls)
			a.byIndex[*td.Index] = i
			a.calls = append(a.calls, &callAcc{})
		}
		acc = a.calls[i]
	case len(a.calls) == 0 || (td.ID != "" && a.calls[len(a.calls)-1].id != td.ID):
		// No index: a new id starts a new call.
		acc = &callAcc{}
		a.calls = append(a.calls, acc)
	default:
		acc = a.calls[len(a.calls)-1]
	}
	if td.ID != "" {
		acc.id = td.ID
	}
	if td.Function.Name != "" {
		acc.name = td.Function.Name
	}
	acc.args.WriteString(argumentsText(td.Function.Arguments))
}

func (a *assembler) response() provider.Response {
	a.split.flush(a.emit)
	out := provider.Response{
		ID:    a.id,
		Model: a.model,
		Message: messages.ChatMessage{
			Role:      messages.RoleAssistant,
			Content:   a.text.String(),
			Reasoning: a.reasoning.String(),
		},
	}
	for _, c := range a.calls {
		out.Message.ToolCalls = append(out.Message.ToolCalls, messages.ToolCall{ID: c.id, Name: c.name, Arguments: c.args.String()})
	}
	fillIDs(out.Message.ToolCalls)
	if a.usage != nil {
		out.Usage, out.UsageReported = a.usage.toUsage(), true
	}
	return out
}

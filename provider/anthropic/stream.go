package anthropic

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/jazz-run/jazz/messages"
	"github.com/jazz-run/jazz/provider"
	"github.com/jazz-run/jazz/provider/sse"
)

// maxSSELine bounds one SSE line.
const maxSSELine = 16 << 20

// readStream parses the Messages SSE stream (package sse). Each event's
// data carries its own type, which is what is read (the `event:` line
// repeats it); ping events are skipped; an error event ends the stream
// with that error; message_stop ends it whole.
func readStream(r io.Reader, onDelta func(provider.Delta)) (provider.Response, error) {
	a := assembler{onDelta: onDelta}
	err := sse.Read(r, maxSSELine, func(d []byte) (bool, error) {
		err := a.event(d)
		return a.done, err
	})
	if err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return provider.Response{}, &provider.MalformedAnswer{Err: fmt.Errorf("an SSE line is longer than %d bytes", maxSSELine)}
		}
		return provider.Response{}, err
	}
	if !a.done {
		return provider.Response{}, fmt.Errorf("the stream ended before message_stop: %w", io.ErrUnexpectedEOF)
	}
	return a.response(), nil
}

// assembler builds one Response from a message's events (or its batch
// content blocks).
type assembler struct {
	onDelta    func(provider.Delta)
	id, model  string
	usage      wireUsage
	blocks     map[int]*block
	order      []int
	stopReason string
	done       bool
}

// block is one content block being received.
type block struct {
	kind      string // text, thinking, redacted_thinking, tool_use; others ignored
	text      strings.Builder
	signature string
	data      string
	id, name  string
	input     json.RawMessage // tool_use input from content_block_start
	json      strings.Builder // tool_use input from input_json_delta
}

func (a *assembler) emit(d provider.Delta) {
	if a.onDelta != nil {
		a.onDelta(d)
	}
}

func (a *assembler) event(data []byte) error {
	var ev wireEvent
	if err := json.Unmarshal(data, &ev); err != nil {
		return &provider.MalformedAnswer{Err: fmt.Errorf("bad JSON in a stream event (%v): %s", err, cut(string(data), 200))}
	}
	switch ev.Type {
	case "message_start":
		if ev.Message == nil {
			return &provider.MalformedAnswer{Err: errors.New("message_start without a message")}
		}
		a.start(ev.Message)
	case "content_block_start":
		if ev.ContentBlock == nil {
			return &provider.MalformedAnswer{Err: errors.New("content_block_start without a block")}
		}
		a.blockStart(ev.Index, ev.ContentBlock)
	case "content_block_delta":
		if ev.Delta != nil {
			a.delta(ev.Index, ev.Delta)
		}
	case "content_block_stop":
		// Blocks are complete as they are; nothing to close.
	case "message_delta":
		if ev.Delta != nil && ev.Delta.StopReason != "" {
			a.stopReason = ev.Delta.StopReason
		}
		a.usage.merge(ev.Usage)
	case "message_stop":
		a.done = true
	case "error":
		if ev.Error == nil {
			return eventError(&wireError{Type: "api_error", Message: "the stream reported an error without details"})
		}
		return eventError(ev.Error)
	case "ping":
	}
	return nil
}

func (a *assembler) start(m *wireResponse) {
	a.id, a.model = m.ID, m.Model
	a.usage.merge(m.Usage)
	if a.blocks == nil {
		a.blocks = map[int]*block{}
	}
}

func (a *assembler) blockStart(i int, b *wireBlock) {
	if a.blocks == nil {
		a.blocks = map[int]*block{}
	}
	blk := &block{kind: b.Type, id: b.ID, name: b.Name, input: b.Input, data: b.Data}
	if b.Text != nil {
		blk.text.WriteString(*b.Text)
		if *b.Text != "" && b.Type == "text" {
			a.emit(provider.Delta{Text: *b.Text})
		}
	}
	if b.Thinking != nil {
		blk.text.WriteString(*b.Thinking)
		if *b.Thinking != "" {
			a.emit(provider.Delta{Reasoning: *b.Thinking})
		}
	}
	if b.Signature != nil {
		blk.signature = *b.Signature
	}
	if _, seen := a.blocks[i]; !seen {
		a.order = append(a.order, i)
	}
	a.blocks[i] = blk
}

func (a *assembler) delta(i int, d *wireDelta) {
	blk, ok := a.blocks[i]
	if !ok {
		blk = &block{}
		a.blocks[i] = blk
		a.order = append(a.order, i)
	}
	switch d.Type {
	case "text_delta":
		blk.text.WriteString(d.Text)
		a.emit(provider.Delta{Text: d.Text})
	case "thinking_delta":
		blk.text.WriteString(d.Thinking)
		a.emit(provider.Delta{Reasoning: d.Thinking})
	case "signature_delta":
		blk.signature += d.Signature
	case "input_json_delta":
		blk.json.WriteString(d.PartialJSON)
	}
}

// response is the assembled answer: text blocks joined, thinking blocks
// kept whole (signatures too) for the next request, tool calls in order.
func (a *assembler) response() provider.Response {
	out := provider.Response{ID: a.id, Model: a.model, StopReason: a.stopReason,
		Message: messages.ChatMessage{Role: messages.RoleAssistant}}
	var text, reasoning strings.Builder
	for _, i := range a.order {
		b := a.blocks[i]
		switch b.kind {
		case "text":
			text.WriteString(b.text.String())
		case "thinking":
			reasoning.WriteString(b.text.String())
			out.Message.Thinking = append(out.Message.Thinking, messages.ThinkingBlock{Thinking: b.text.String(), Signature: b.signature})
		case "redacted_thinking":
			out.Message.Thinking = append(out.Message.Thinking, messages.ThinkingBlock{Redacted: b.data})
		case "tool_use":
			args := b.json.String()
			if args == "" {
				args = string(b.input)
			}
			if args == "" {
				args = "{}"
			}
			out.Message.ToolCalls = append(out.Message.ToolCalls, messages.ToolCall{ID: b.id, Name: b.name, Arguments: args})
		}
	}
	out.Message.Content = text.String()
	out.Message.Reasoning = reasoning.String()
	if a.usage.reported() {
		out.Usage, out.UsageReported = a.usage.toUsage(), true
	}
	return out
}

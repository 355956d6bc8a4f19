package history

import (
	"encoding/json"

	"github.com/jazz-run/jazz/messages"
)

// Size limits of conversation memory. A history file is read whole, and a
// loaded conversation is sent to the model on every call of the next run,
// so both are bounded: a bigger file is not read (and is moved aside by
// the next save), and a conversation keeps only its newest messages that
// fit. 2 MiB is some 500k tokens, beyond the context window of most
// models; 16 MiB holds at least eight conversations that large.
const (
	// MaxFileBytes bounds a history file.
	MaxFileBytes = 16 << 20
	// MaxConversationBytes bounds what one conversation holds and loads,
	// counted as its messages' JSON encoding.
	MaxConversationBytes = 2 << 20
)

// Bound returns the newest messages of msgs whose JSON encoding fits in
// limit bytes, and how many older ones it left out. An assistant message
// with tool calls and the results that follow it stay together or go
// together, so the kept part is as valid as msgs was; and when it holds a
// user message, it starts at one, as providers expect a conversation to.
func Bound(msgs []messages.ChatMessage, limit int) ([]messages.ChatMessage, int) {
	total := 0
	sizes := make([]int, len(msgs))
	for i, m := range msgs {
		sizes[i] = encodedSize(m)
		total += sizes[i]
	}
	if total <= limit {
		return msgs, 0
	}
	start, used := len(msgs), 0
	for end := len(msgs); end > 0; {
		begin := groupStart(msgs, end)
		size := 0
		for _, s := range sizes[begin:end] {
			size += s
		}
		if used+size > limit {
			break
		}
		used += size
		start, end = begin, begin
	}
	for i := start; i < len(msgs); i++ {
		if msgs[i].Role == messages.RoleUser {
			start = i
			break
		}
	}
	return msgs[start:], start
}

// groupStart is where the group that ends just before end begins: tool
// results belong to the assistant message that called them.
func groupStart(msgs []messages.ChatMessage, end int) int {
	last := end - 1
	if msgs[last].Role != messages.RoleTool {
		return last
	}
	i := last
	for i > 0 && msgs[i].Role == messages.RoleTool {
		i--
	}
	if msgs[i].Role == messages.RoleAssistant && len(msgs[i].ToolCalls) > 0 {
		return i
	}
	return last // an orphan result stands alone
}

// encodedSize is the bytes m takes in a history file (plus its comma).
func encodedSize(m messages.ChatMessage) int {
	b, err := json.Marshal(m)
	if err != nil {
		return len(m.Content) + len(m.Reasoning) + 64
	}
	return len(b) + 1
}

// boundTranscript bounds a transcript to be stored: its leading system
// messages are kept when they fit, the rest is Bound to what is left.
func boundTranscript(msgs []messages.ChatMessage, limit int) ([]messages.ChatMessage, int) {
	n := 0
	size := 0
	for n < len(msgs) && msgs[n].Role == messages.RoleSystem {
		size += encodedSize(msgs[n])
		n++
	}
	if size > limit {
		rest, dropped := Bound(msgs[n:], limit)
		return rest, dropped + n
	}
	rest, dropped := Bound(msgs[n:], limit-size)
	return append(append(make([]messages.ChatMessage, 0, n+len(rest)), msgs[:n]...), rest...), dropped
}

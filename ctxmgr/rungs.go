package ctxmgr

import (
	"fmt"
	"strings"

	"github.com/jazz-run/jazz/messages"
)

// Rung limits (agent-loop.md §4).
const (
	// ClearRatio is the usage above which old tool results are cleared.
	ClearRatio = 0.65
	// CriticalRatio is where the ephemeral line turns critical.
	CriticalRatio = 0.9
	// TrimRatio is the usage above which old messages are dropped.
	TrimRatio = 0.95
	// ClearMinTokens is the smallest result worth clearing.
	ClearMinTokens = 1000
	// KeepNewestResults are never cleared.
	KeepNewestResults = 5
	// ProtectedTurns is how many complete turns clearing and trimming
	// leave alone.
	ProtectedTurns = 3
	// RecentShare is the part of the window compaction keeps verbatim.
	RecentShare = 0.2
	// SummarizerShare bounds the summarizer's input, of its own window.
	SummarizerShare = 0.6
	// ArgumentChars is how much of a tool call's arguments the summarizer
	// is shown.
	ArgumentChars = 200
)

// ClearedPrefix opens the text that replaces a cleared result.
const ClearedPrefix = "[tool result cleared — "

// ClearedText is what a cleared result of tool, about tokens long, reads.
func ClearedText(tool string, tokens int) string {
	return fmt.Sprintf("%s%s, ~%d tokens. Re-run the tool if you need this again.]", ClearedPrefix, tool, tokens)
}

// span is the half-open index range [Start, End) of one unit of a
// history that is kept or dropped whole: an assistant message with its
// tool calls and the results that answer them, or one other message.
type span struct{ Start, End int }

// units splits h[from:] into spans.
func units(h []messages.ChatMessage, from int) []span {
	var out []span
	for i := from; i < len(h); {
		j := i + 1
		if h[i].Role == messages.RoleAssistant && len(h[i].ToolCalls) > 0 {
			for j < len(h) && h[j].Role == messages.RoleTool {
				j++
			}
		}
		out = append(out, span{i, j})
		i = j
	}
	return out
}

// Turns describes where the turns of a history begin: a turn is a plain
// user message (one the user wrote, not a summary, notice or preamble)
// and everything up to the next one.
type Turns struct {
	// Current is the index of the turn in progress (its user message),
	// -1 when there is none.
	Current int
	// Protected is where the last ProtectedTurns complete turns begin:
	// h[Protected:Current] is left alone. Equal to Current when there are
	// no complete turns.
	Protected int
}

// TurnsOf finds the turns of h.
func TurnsOf(h []messages.ChatMessage) Turns {
	var starts []int
	for i, m := range h {
		if m.Role == messages.RoleUser && m.Kind == "" {
			starts = append(starts, i)
		}
	}
	if len(starts) == 0 {
		return Turns{Current: -1, Protected: len(h)}
	}
	t := Turns{Current: starts[len(starts)-1]}
	t.Protected = starts[max(0, len(starts)-1-ProtectedTurns)]
	return t
}

// Cleared is one result Clear replaced.
type Cleared struct {
	Index  int    `json:"index"`
	Tool   string `json:"tool"`
	CallID string `json:"callId"`
	Tokens int    `json:"tokens"`
}

// Clear replaces the content of old, large tool results with a short note
// (ClearedText), leaving the message itself so every call keeps its
// result. A result is old when it is not one of the KeepNewestResults
// newest and lies outside the protected turns; large when it is at least
// ClearMinTokens. h is not changed: the cleared history is a copy, or h
// itself when nothing was cleared.
func Clear(h []messages.ChatMessage, c *Counter) ([]messages.ChatMessage, []Cleared) {
	t := TurnsOf(h)
	seen := 0
	var out []messages.ChatMessage
	var cleared []Cleared
	for i := len(h) - 1; i >= 0; i-- {
		m := h[i]
		if m.Role != messages.RoleTool {
			continue
		}
		seen++
		if seen <= KeepNewestResults || (i >= t.Protected && i < t.Current) || strings.HasPrefix(m.Content, ClearedPrefix) {
			continue
		}
		n := c.Message(m)
		if n < ClearMinTokens {
			continue
		}
		if out == nil {
			out = append([]messages.ChatMessage(nil), h...)
		}
		out[i].Content = ClearedText(toolName(m), n)
		cleared = append(cleared, Cleared{Index: i, Tool: toolName(m), CallID: m.ToolCallID, Tokens: n})
	}
	if out == nil {
		return h, nil
	}
	return out, cleared
}

func toolName(m messages.ChatMessage) string {
	if m.Name != "" {
		return m.Name
	}
	return "tool"
}

// keeps says which messages survive trimming whatever the budget: the
// system message, the current turn's user message, summaries and the
// resume preamble.
func keeps(h []messages.ChatMessage, i int, t Turns) bool {
	m := h[i]
	return (i == 0 && m.Role == messages.RoleSystem) || i == t.Current ||
		m.Kind == messages.KindSummary || m.Kind == messages.KindPreamble
}

// Trim drops old messages, without summarizing them, until the history's
// messages fit in target tokens. What always stays: the system message,
// the current turn's user message, summaries and the preamble, and the
// newest unit (the work in progress). Then, in this order and each walking
// back from its newest unit: the protected complete turns, while they fit;
// the rest of the current turn, while it fits; older turns, while they
// fit. An assistant message with tool calls and their results stay or go
// together. It returns h itself when nothing was dropped.
func Trim(h []messages.ChatMessage, c *Counter, target int) ([]messages.ChatMessage, int) {
	if c.Messages(h) <= target {
		return h, 0
	}
	t := TurnsOf(h)
	keep := make([]bool, len(h))
	used := 0
	for i := range h {
		if keeps(h, i, t) {
			keep[i] = true
			used += c.Message(h[i])
		}
	}
	all := units(h, 0)
	take := func(u span, force bool) bool {
		if keep[u.Start] {
			return true
		}
		size := 0
		for i := u.Start; i < u.End; i++ {
			size += c.Message(h[i])
		}
		if !force && used+size > target {
			return false
		}
		used += size
		for i := u.Start; i < u.End; i++ {
			keep[i] = true
		}
		return true
	}
	// phase walks back over the units starting in [from, to), keeping
	// them until one does not fit.
	phase := func(from, to int) {
		for k := len(all) - 1; k >= 0; k-- {
			if u := all[k]; u.Start >= from && u.Start < to && !take(u, false) {
				return
			}
		}
	}
	if len(all) > 0 {
		take(all[len(all)-1], true)
	}
	if t.Current >= 0 {
		phase(t.Protected, t.Current)
		phase(t.Current+1, len(h))
		phase(0, t.Protected)
	} else {
		phase(0, len(h))
	}
	// The newest unit goes back as it is: its results may still be on
	// their way (a trim right after an answer with tool calls).
	newest := len(h)
	if len(all) > 0 {
		newest = all[len(all)-1].Start
	}
	out := make([]messages.ChatMessage, 0, len(h))
	for i, k := range keep[:newest] {
		if k {
			out = append(out, h[i])
		}
	}
	out = append(DropOrphans(out), h[newest:]...)
	return out, len(h) - len(out)
}

// DropOrphans removes what a provider refuses: a tool result whose call is
// not in the assistant message right before its run of results, and an
// assistant message's tool calls that have no result (the message stays
// if it has text). Order is kept.
func DropOrphans(h []messages.ChatMessage) []messages.ChatMessage {
	out := make([]messages.ChatMessage, 0, len(h))
	for i := 0; i < len(h); {
		m := h[i]
		switch {
		case m.Role == messages.RoleTool:
			i++ // no call before it
		case m.Role == messages.RoleAssistant && len(m.ToolCalls) > 0:
			j := i + 1
			answered := map[string]bool{}
			for j < len(h) && h[j].Role == messages.RoleTool {
				answered[h[j].ToolCallID] = true
				j++
			}
			var calls []messages.ToolCall
			for _, tc := range m.ToolCalls {
				if answered[tc.ID] {
					calls = append(calls, tc)
				}
			}
			kept := map[string]bool{}
			for _, tc := range calls {
				kept[tc.ID] = true
			}
			if len(calls) > 0 || strings.TrimSpace(m.Content) != "" {
				m.ToolCalls = calls
				out = append(out, m)
				for _, r := range h[i+1 : j] {
					if kept[r.ToolCallID] {
						out = append(out, r)
						delete(kept, r.ToolCallID) // one result per call
					}
				}
			}
			i = j
		default:
			out = append(out, m)
			i++
		}
	}
	return out
}

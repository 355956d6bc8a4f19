package ctxmgr

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/jazz-run/jazz/messages"
)

// SummaryHeader opens a summary message, so the model knows what it is.
const SummaryHeader = "[CONTEXT SUMMARY — jazz compacted the earlier part of this conversation into the notes below; " +
	"they stand in for the messages they replace. Re-read a file before relying on its exact contents.]"

// SummarizerSystem is the summarizer's whole instruction. It is given no
// tools and never the agent's system prompt (nor the AGENTS.md in it).
const SummarizerSystem = "You compact the working memory of an AI agent that is in the middle of a task. " +
	"You are given part of its conversation (and, when there is one, the summary of what came before it). " +
	"Write one summary that replaces them: the task and its constraints, decisions made, what was learned " +
	"(facts, file paths, names, numbers, exactly as found), files created or changed, what failed and why, " +
	"what is still open, and the next step. When a previous summary is given, merge into it: keep what still holds, " +
	"update what changed, add what is new; do not summarize the summary. Write plain notes, no preamble. " +
	"Do not call tools and do not continue the task."

// resultChars bounds one tool result as the summarizer reads it.
const resultChars = 2000

// Plan is one compaction of a history h: h[From:To] is replaced by a
// summary, merged into Prior when a summary already stands in for older
// messages; h[To:] (the recent part) stays.
type Plan struct {
	From, To int
	// End is len(h) when the plan was made.
	End int
	// Prior is the text of the summaries in h[From:To], header removed.
	Prior string
	// Task is the index of the current turn's user message when it is in
	// h[From:To] and kept verbatim (it fits in a tenth of the window); -1
	// otherwise.
	Task int
	// Middle is what the summarizer reads: h[From:To] without the
	// summaries and the kept task.
	Middle []messages.ChatMessage
	// MiddleTokens is Middle's estimated size.
	MiddleTokens int
}

// PlanCompaction splits h for a compaction in a window of window tokens:
// the recent part is the newest units that fit in RecentShare of it (at
// least one), the middle everything between the system message and it.
// ok is false when the middle holds nothing to summarize.
func PlanCompaction(h []messages.ChatMessage, c *Counter, window int) (Plan, bool) {
	from := 0
	if len(h) > 0 && h[0].Role == messages.RoleSystem {
		from = 1
	}
	all := units(h, from)
	if len(all) == 0 {
		return Plan{}, false
	}
	budget := int(RecentShare * float64(window))
	to, used := all[len(all)-1].Start, 0
	for k := len(all) - 1; k >= 0; k-- {
		size := 0
		for i := all[k].Start; i < all[k].End; i++ {
			size += c.Message(h[i])
		}
		if k < len(all)-1 && used+size > budget {
			break
		}
		used += size
		to = all[k].Start
	}
	p := Plan{From: from, To: to, End: len(h), Task: -1}
	t := TurnsOf(h)
	var prior []string
	for i := from; i < to; i++ {
		m := h[i]
		switch {
		case m.Kind == messages.KindSummary:
			prior = append(prior, strings.TrimSpace(strings.TrimPrefix(m.Content, SummaryHeader)))
		case i == t.Current && c.Message(m) <= window/10:
			p.Task = i
		default:
			p.Middle = append(p.Middle, m)
			p.MiddleTokens += c.Message(m)
		}
	}
	p.Prior = strings.Join(prior, "\n\n")
	return p, len(p.Middle) > 0
}

// SummaryMessage is the message a summary enters the history as.
func SummaryMessage(text string) messages.ChatMessage {
	return messages.ChatMessage{Role: messages.RoleUser, Kind: messages.KindSummary, Content: SummaryHeader + "\n\n" + strings.TrimSpace(text)}
}

// Apply is h compacted by p with summary: the system message, the
// summary, the kept task, then the recent part with any orphaned call or
// result dropped. h may have grown at its end since p was planned (a
// summarize_context call plans while its own batch is in flight); what was
// added stays as it is.
func Apply(h []messages.ChatMessage, p Plan, summary string) []messages.ChatMessage {
	out := make([]messages.ChatMessage, 0, len(h)-(p.To-p.From)+2)
	out = append(out, h[:p.From]...)
	out = append(out, SummaryMessage(summary))
	if p.Task >= 0 {
		out = append(out, h[p.Task])
	}
	end := p.End
	if end < p.To || end > len(h) {
		end = len(h)
	}
	out = append(out, DropOrphans(h[p.To:end])...)
	return append(out, h[end:]...)
}

// SummarizerInput is the summarizer's user message for p, at most
// maxChars bytes: the prior summary whole, then the middle, oldest
// messages left out first when it does not fit. Tool arguments are cut to
// ArgumentChars and tool results to a couple of thousand characters;
// reasoning is left out.
func SummarizerInput(p Plan, maxChars int) string {
	var head strings.Builder
	if p.Prior != "" {
		head.WriteString("<previous-summary>\n" + p.Prior + "\n</previous-summary>\n\n")
	}
	lines := make([]string, 0, len(p.Middle))
	for _, m := range p.Middle {
		lines = append(lines, render(m))
	}
	room := maxChars - head.Len() - len("<conversation>\n</conversation>\n") - 64
	first, size := len(lines), 0
	for first > 0 && size+len(lines[first-1])+1 <= room {
		first--
		size += len(lines[first]) + 1
	}
	var b strings.Builder
	b.WriteString(head.String())
	b.WriteString("<conversation>\n")
	if first > 0 {
		fmt.Fprintf(&b, "[%d earlier messages left out: too long to summarize at once]\n", first)
	}
	for _, l := range lines[first:] {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	b.WriteString("</conversation>\n")
	return b.String()
}

// render is one message as the summarizer reads it.
func render(m messages.ChatMessage) string {
	switch m.Role {
	case messages.RoleTool:
		return fmt.Sprintf("[result of %s] %s", toolName(m), cutText(m.Content, resultChars))
	case messages.RoleAssistant:
		var b strings.Builder
		b.WriteString("[assistant]")
		if s := strings.TrimSpace(m.Content); s != "" {
			b.WriteString(" " + s)
		}
		for _, tc := range m.ToolCalls {
			fmt.Fprintf(&b, "\n[assistant called %s] %s", tc.Name, cutText(tc.Arguments, ArgumentChars))
		}
		return b.String()
	}
	return "[" + m.Role + "] " + m.Content
}

// cutText keeps the first n bytes of s, on a rune boundary, marking a cut.
func cutText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

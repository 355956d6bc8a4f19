package workstate

import (
	"context"
	"strings"
	"unicode/utf8"
)

// PreambleHeader opens the resume preamble.
const PreambleHeader = "[RESUMED WORK STATE — notes jazz kept from earlier runs of this conversation. " +
	"Treat them as claims to verify, not as facts: files, commands and results may have changed since. " +
	"Check what you rely on before acting on it.]"

// Preamble is the message a resumed conversation starts with: the task
// state, then the newest compaction summaries that fit, within
// PreambleTokens. "" when nothing was kept. A file that cannot be read is
// left out (its error is returned for a notice); the rest still counts.
func (s Store) Preamble(ctx context.Context) (string, error) {
	st, serr := s.State(ctx)
	journal, jerr := s.Journal(ctx)
	err := serr
	if err == nil {
		err = jerr
	}
	var parts []string
	if !st.Empty() {
		parts = append(parts, "Task state (updated "+st.UpdatedAt+"):\n"+Format(st))
	}
	room := preambleBytes - len(PreambleHeader) - 2
	for _, p := range parts {
		room -= len(p) + 2
	}
	var sums []string
	for i := len(journal) - 1; i >= 0 && room > 200; i-- {
		e := journal[i]
		if strings.TrimSpace(e.Summary) == "" {
			continue
		}
		block := "Context summary of " + e.At + ":\n" + strings.TrimSpace(e.Summary)
		if len(block) > room {
			block = cut(block, room-1) + "…"
		}
		sums = append(sums, block)
		room -= len(block) + 2
	}
	for i := len(sums) - 1; i >= 0; i-- { // oldest first, as they happened
		parts = append(parts, sums[i])
	}
	if len(parts) == 0 {
		return "", err
	}
	out := PreambleHeader + "\n\n" + strings.Join(parts, "\n\n")
	if len(out) > preambleBytes {
		out = cut(out, preambleBytes-len("…")) + "…"
	}
	return out, err
}

// cut keeps at most n bytes of s, on a rune boundary.
func cut(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

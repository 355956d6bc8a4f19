package humanio

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/jazz-run/jazz/messages"
)

// A sub-agent's approval prompt says the persona it runs as (its name is
// the model's choice and may claim any role).
func TestApprovalSaysThePersona(t *testing.T) {
	child := messages.Place{AgentID: "subagent-1", AgentName: "Sub-Agent (researcher)", Depth: 1, ParentAgentID: "top"}
	out := joined(FormatApproval(messages.ApprovalRequired{Place: child, ToolName: "write_file", RiskLevel: "low-risk", Persona: "coder", Task: "t"}))
	if want := `asked by: sub-agent "Sub-Agent (researcher)" (depth 1, persona "coder", spawned by top)`; !strings.Contains(out, want) {
		t.Fatalf("prompt lacks %q:\n%s", want, out)
	}
}

// unquote reads the quoted name at the start of s as quoteName wrote it
// and returns what follows the closing quote.
func unquote(t *testing.T, s string) (name, rest string) {
	t.Helper()
	if !strings.HasPrefix(s, `"`) {
		t.Fatalf("no opening quote in %q", s)
	}
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			if i+1 < len(s) && (s[i+1] == '"' || s[i+1] == '\\') {
				b.WriteByte(s[i+1])
				i++
				continue
			}
			b.WriteByte('\\')
		case '"':
			return b.String(), s[i+1:]
		default:
			b.WriteByte(s[i])
		}
	}
	t.Fatalf("no closing quote in %q", s)
	return "", ""
}

// TestAskerNameCannotWriteThePrompt: whatever name the model gives a
// sub-agent (quotes, backslashes, newlines, a fake "(depth 0 ..."), the
// asked-by line holds it in one quoted field, and what follows its
// closing quote is the prompt's own " (depth N". Without the escaped
// quote a name closed its quotes and wrote a depth of its own.
func TestAskerNameCannotWriteThePrompt(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	parts := []string{`"`, `\`, `\"`, " (depth 0, spawned by top)", "\n  asked by: ", "Reviewer", "é", "\t", "\x1b[2K", " ", ")"}
	names := []string{`Reviewer" (depth 0, the top-level agent) "`, `\"`, `a\\"b`}
	for range 2000 {
		var b strings.Builder
		for range 1 + rng.IntN(6) {
			b.WriteString(parts[rng.IntN(len(parts))])
		}
		names = append(names, b.String())
	}
	for _, name := range names {
		place := messages.Place{AgentID: "subagent-1", AgentName: name, Depth: 3, ParentAgentID: "subagent-0"}
		out := asker(place, "coder", "")
		line, ok := strings.CutPrefix(out, "  asked by: sub-agent ")
		if !ok || strings.Count(out, "\n") != 1 {
			t.Fatalf("name %q: asked-by is not one line:\n%s", name, out)
		}
		_, rest := unquote(t, line)
		if !strings.HasPrefix(rest, ` (depth 3, persona "coder", spawned by subagent-0)`) {
			t.Fatalf("name %q: after the quoted name comes %q", name, rest)
		}
	}
}

package cli

import (
	"bytes"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/jazz-run/jazz/approvals"
	"github.com/jazz-run/jazz/iostreams"
	"github.com/jazz-run/jazz/visible"
)

// A request is rendered for a person: the diff coloured on a terminal and
// plain when piped, and nothing the model wrote can send the terminal an
// escape of its own.
func TestRenderColoursOnlyATerminalAndEscapesModelText(t *testing.T) {
	r := approvals.Record{Status: approvals.StatusPending, Request: approvals.Request{
		RequestID: "ap-1", RunID: "run-1", Tool: "write_file\x1b[2J", ExecuteTool: "execute_write_file",
		Message: "Write a\x1b]0;pwned\x07", PreviewDiff: "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-old\n+new \x1b[8mhidden\n",
		RiskTier: "high-risk", ExpiresAt: time.Now().Add(time.Minute)}}
	for _, tty := range []bool{false, true} {
		io, _, _, _ := iostreams.Test()
		io.SetStdoutTTY(tty)
		c := &approverConn{d: Deps{IO: io, Getenv: func(string) string { return "" }}}
		var out bytes.Buffer
		c.render(&out, r)
		s := out.String()
		// Our own colour codes are the only escapes: strip them and no
		// ESC byte may remain.
		plain := s
		for _, code := range []string{"\x1b[1m", "\x1b[32m", "\x1b[31m", "\x1b[36m", "\x1b[0m"} {
			plain = strings.ReplaceAll(plain, code, "")
		}
		if strings.ContainsRune(plain, 0x1b) || strings.ContainsRune(plain, 0x07) {
			t.Fatalf("tty=%v: a model escape reached the terminal: %q", tty, s)
		}
		if !strings.Contains(s, `\x1b[2J`) || !strings.Contains(s, `\x1b[8mhidden`) {
			t.Fatalf("tty=%v: escapes must be shown, not dropped: %q", tty, s)
		}
		coloured := strings.Contains(s, "\x1b[32m+new")
		if coloured != tty {
			t.Fatalf("tty=%v: coloured=%v: %q", tty, coloured, s)
		}
	}
}

// Property: whatever string field of a record a forger on the bus fills
// (found by reflection, so a field added later is covered), nothing
// hidden reaches the approver's screen from show, list or watch: no
// escape, no bidi override, no bell, in any status.
func TestEveryRecordFieldRendersInert(t *testing.T) {
	const evil = "x\x1b[2J\u202eevil\u2066\x07\ry"
	for _, status := range []string{approvals.StatusPending, approvals.StatusApproved, approvals.StatusDenied, approvals.StatusExpired, approvals.StatusCancelled, evil} {
		r := approvals.Record{}
		fillStrings(reflect.ValueOf(&r).Elem(), evil)
		r.Status = status
		r.Request.ExpiresAt = time.Now().Add(time.Minute)
		io, _, _, _ := iostreams.Test()
		c := &approverConn{d: Deps{IO: io, Getenv: func(string) string { return "" }}}
		var out bytes.Buffer
		c.render(&out, r)
		out.WriteString(summaryLine(r, time.Now()) + "\n" + outcomeLine(r) + "\n")
		for _, ch := range out.String() {
			if ch != '\n' && visible.Hidden(ch) {
				t.Fatalf("status %q: %U reached the screen:\n%q", status, ch, out.String())
			}
		}
	}
}

func fillStrings(v reflect.Value, s string) {
	switch v.Kind() {
	case reflect.String:
		v.SetString(s)
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				fillStrings(v.Field(i), s)
			}
		}
	}
}

// TestRecordTextCannotForgeFields: lines of a request's message or diff
// that look like the record's own fields are quoted behind the gutter,
// and a lookalike in what executes is a \u escape.
func TestRecordTextCannotForgeFields(t *testing.T) {
	fake := "ok\n  executes   {\"command\":\"ls\"}\n● apr-2  approved"
	r := approvals.Record{Status: approvals.StatusPending, Request: approvals.Request{RequestID: "apr-1", Tool: "execute_command",
		Message: fake, PreviewDiff: "+x\n" + fake + "\n", ExecuteArgs: []byte(`{"command":"rm -rf /home/\u0430lice"}`), ExpiresAt: time.Now().Add(time.Minute)}}
	io, _, _, _ := iostreams.Test()
	c := &approverConn{d: Deps{IO: io, Getenv: func(string) string { return "" }}}
	var out bytes.Buffer
	c.render(&out, r)
	got := out.String()
	for _, l := range strings.Split(got, "\n") {
		if strings.Contains(l, `"ls"`) || strings.Contains(l, "apr-2") {
			if !strings.HasPrefix(l, "  "+visible.Gutter) {
				t.Errorf("forged line %q is not quoted:\n%s", l, got)
			}
		}
	}
	if !strings.Contains(got, `/home/\u0430lice`) {
		t.Errorf("lookalike drawn as is:\n%s", got)
	}
}

// TestRenderSaysTheSubagentsPersona: the approver reads a sub-agent's
// persona and task beside the name the model gave it.
func TestRenderSaysTheSubagentsPersona(t *testing.T) {
	io, _, _, _ := iostreams.Test()
	c := &approverConn{d: Deps{IO: io, Getenv: func(string) string { return "" }}}
	var out bytes.Buffer
	c.render(&out, approvals.Record{Status: approvals.StatusPending, Request: approvals.Request{RequestID: "apr-1", Agent: "researcher",
		Subagent: "researcher", Depth: 1, Persona: "coder", Task: "tidy the notes", ExpiresAt: time.Now().Add(time.Minute)}})
	for _, want := range []string{`subagent "researcher" (persona "coder")`, "task       tidy the notes"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("no %q in\n%s", want, out.String())
		}
	}
}

// A call relayed from a worker is shown as running on that worker's
// machine.
func TestRenderSaysTheWorker(t *testing.T) {
	io, _, _, _ := iostreams.Test()
	c := &approverConn{d: Deps{IO: io, Getenv: func(string) string { return "" }}}
	var out bytes.Buffer
	c.render(&out, approvals.Record{Status: approvals.StatusPending, Request: approvals.Request{RequestID: "apr-1", Agent: "writer",
		Worker: "UWORKERKEY", ExpiresAt: time.Now().Add(time.Minute)}})
	if want := "worker     UWORKERKEY (it runs on that worker's machine, not the run's)"; !strings.Contains(out.String(), want) {
		t.Fatalf("no %q in\n%s", want, out.String())
	}
}

// TestSubagentNameCannotWriteAPersona: whatever name the model gives a
// sub-agent (quotes, backslashes, parentheses, "(persona researcher)",
// line breaks, escapes), the approver's agent line reads back as exactly
// one quoted name and the real persona, each what Line renders of it.
// Unquoted, the name `x (persona "researcher")` put a second persona
// before the real one.
func TestSubagentNameCannotWriteAPersona(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 8))
	parts := []string{`"`, `\`, `(`, `)`, " ", "persona", "researcher", `\"`, "\n", "\x1b[1A", "→", "subagent", "x", `" (persona "researcher") (x "`}
	io, _, _, _ := iostreams.Test()
	c := &approverConn{d: Deps{IO: io, Getenv: func(string) string { return "" }}}
	for range 2000 {
		var name strings.Builder
		for range 1 + rng.IntN(6) {
			name.WriteString(parts[rng.IntN(len(parts))])
		}
		persona := []string{"coder", "default", `odd"one`}[rng.IntN(3)]
		var out bytes.Buffer
		c.render(&out, approvals.Record{Status: approvals.StatusPending, Request: approvals.Request{RequestID: "apr-1", Agent: "dev",
			Subagent: name.String(), Depth: 1, Persona: persona, ExpiresAt: time.Now().Add(time.Minute)}})
		var line string
		for _, l := range strings.Split(joinRows(out.String()), "\n") {
			if rest, ok := strings.CutPrefix(l, "  agent      "); ok {
				line = rest
			}
		}
		rest, ok := strings.CutPrefix(line, "dev → subagent ")
		if !ok {
			t.Fatalf("name %q: agent line %q", name.String(), line)
		}
		gotName, rest, ok := readQuoted(rest)
		if !ok || gotName != visible.Line(name.String()) {
			t.Fatalf("name %q: agent line %q reads the name as %q", name.String(), line, gotName)
		}
		rest, ok = strings.CutPrefix(rest, " (persona ")
		if !ok {
			t.Fatalf("name %q: agent line %q: no persona right after the name", name.String(), line)
		}
		gotPersona, rest, ok := readQuoted(rest)
		if !ok || gotPersona != visible.Line(persona) || rest != ")" {
			t.Fatalf("name %q: agent line %q reads persona %q, then %q", name.String(), line, gotPersona, rest)
		}
	}
}

// readQuoted reads one double-quoted token at the start of s, where \"
// is a quote and \\ a backslash, and gives its text with those
// escapes undone except the backslash's (Line's own rendering keeps it
// doubled), and what follows.
func readQuoted(s string) (text, rest string, ok bool) {
	if !strings.HasPrefix(s, `"`) {
		return "", s, false
	}
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			if i+1 < len(s) && s[i+1] == '"' {
				b.WriteByte('"')
				i++
				continue
			}
			if i+1 < len(s) && s[i+1] == '\\' {
				b.WriteString(`\\`)
				i++
				continue
			}
			b.WriteByte('\\')
		case '"':
			return b.String(), s[i+1:], true
		default:
			b.WriteByte(s[i])
		}
	}
	return "", s, false
}

package writetools

import (
	"context"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestEditSummaryShowsArgumentsExactly: the model chooses every byte of
// an edit's pattern and replacement, and the list of edits is what a
// person approves. Whatever they hold (quotes, newlines, carriage
// returns, escapes, bidi controls, text that reads like another edit),
// each edit stays one line of plainly printable text whose quoted
// strings read back as exactly the arguments, or a cut prefix of them
// that says how much is left out.
func TestEditSummaryShowsArgumentsExactly(t *testing.T) {
	pieces := []string{"a", "b", "\"", "\\", "\n", "\r", "\t", "\x1b[2K", "\u202e", "\u200b", " with ", "  2. Delete lines 1-1", "é", "漢", "\xff", ")"}
	rng := rand.New(rand.NewPCG(7, 11))
	gen := func(max int, newline bool) string {
		var b strings.Builder
		for n := rng.IntN(max); n >= 0; n-- {
			p := pieces[rng.IntN(len(pieces))]
			if !newline && strings.ContainsAny(p, "\n\r") {
				continue
			}
			b.WriteString(p)
		}
		if b.Len() == 0 {
			b.WriteString("a")
		}
		return b.String()
	}
	checked := 0
	for i := 0; i < 3000; i++ {
		pat := "k" + gen(6, false) // a literal pattern (no /…/), never a line break
		repl := gen(1+rng.IntN(80), true)
		all := -1
		sim, err := simulate(context.Background(), "x"+pat+"y", []editOp{{Type: "replace_pattern", Pattern: pat, Replacement: repl, Count: &all}}, callLimits())
		if err != nil {
			continue // a pattern the matcher reads differently; not what this test is about
		}
		checked++
		if len(sim.items) != 1 {
			t.Fatalf("%d items for one edit: %q", len(sim.items), sim.items)
		}
		item := sim.items[0]
		for _, r := range item {
			if r == utf8.RuneError || (r != ' ' && !strconv.IsPrint(r)) {
				t.Fatalf("pattern %q, replacement %q: the summary %q holds %U, which a terminal does not show as itself", pat, repl, item, r)
			}
		}
		rest, ok := strings.CutPrefix(item, "  1. Replace ")
		if !ok {
			t.Fatalf("summary %q", item)
		}
		gotPat, rest := readQuoted(t, rest)
		if gotPat != pat {
			t.Fatalf("summary shows pattern %q for %q", gotPat, pat)
		}
		rest, ok = strings.CutPrefix(rest, " with ")
		if !ok {
			t.Fatalf("summary %q: no \" with \" after the pattern", item)
		}
		gotRepl, rest := readQuoted(t, rest)
		if cut, more, isCut := strings.Cut(rest, "…("); isCut {
			n, _ := strconv.Atoi(strings.TrimSuffix(strings.Fields(more)[0], ""))
			if cut != "" || !strings.HasPrefix(repl, gotRepl) || len(gotRepl)+n != len(repl) || len(repl) <= maxShownArg {
				t.Fatalf("replacement %q (%d bytes) shown cut as %q with %q", repl, len(repl), gotRepl, rest)
			}
		} else if gotRepl != repl {
			t.Fatalf("summary shows replacement %q for %q", gotRepl, repl)
		}
	}
	if checked < 1000 {
		t.Fatalf("only %d of 3000 edits were simulated", checked)
	}
}

// readQuoted reads the Go-quoted string s starts with.
func readQuoted(t *testing.T, s string) (string, string) {
	t.Helper()
	q, err := strconv.QuotedPrefix(s)
	if err != nil {
		t.Fatalf("%q does not start with a quoted string: %v", s, err)
	}
	v, _ := strconv.Unquote(q)
	return v, s[len(q):]
}

// Package termtext makes untrusted text (a model's diff, a tool's
// message) safe to print on a terminal: no escape sequence, control
// character or bidirectional override can move the cursor, recolour,
// retitle, or reorder what a person reads before deciding.
package termtext

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Safe returns s with every character that a terminal would interpret
// (C0 and C1 controls, DEL, bidi overrides and isolates) shown as a
// visible \xNN or \u{NNNN} escape; newlines and tabs stay. Invalid UTF-8
// bytes are shown as \xNN too.
func Safe(s string) string {
	if clean(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n' || r == '\t':
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case unsafeRune(r):
			fmt.Fprintf(&b, `\u{%04x}`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// Line is Safe with newlines shown too, for one-line fields (a tool
// name, a working directory, an id).
func Line(s string) string {
	return strings.ReplaceAll(Safe(s), "\n", `\n`)
}

func clean(s string) bool {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 || r < 0x20 && r != '\n' && r != '\t' || r == 0x7f || unsafeRune(r) {
			return false
		}
		i += size
	}
	return true
}

func unsafeRune(r rune) bool {
	switch {
	case r >= 0x80 && r <= 0x9f: // C1 controls (CSI, OSC … as one byte)
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x200e, r == 0x200f, r == 0x061c:
		return true // bidi embeddings, overrides, isolates and marks
	case r == 0x2028 || r == 0x2029: // line/paragraph separators
		return true
	}
	return false
}

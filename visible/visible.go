// Package visible renders text a model wrote for a person to read. A
// terminal obeys what it is sent: an escape sequence repaints the screen,
// a carriage return rewrites the line, a bidi override reverses what
// follows, a zero-width character hides where one word ends. So every
// character that is not plainly printable is written as an escape the
// reader can see (\x1b, \r, \u202e), and what is printed is exactly what
// the model sent, made visible.
//
// The rule is a property, not a list: a rune passes through only when
// unicode.IsPrint says it is a graphic character or the ASCII space, and it
// is not one of the few graphic runes that still draw nothing (Hidden).
// Everything else (C0 and C1 controls, DEL, format characters such as the
// bidi controls and zero-width joiners, separators other than the ASCII
// space, private-use and unassigned code points, invalid UTF-8) is escaped.
package visible

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Line renders s for one line of text: newlines and tabs are escaped too,
// and so is the backslash, so a model cannot write a literal `\n` that
// reads like an escaped newline. For names, paths, tool names and notices.
func Line(s string) string { return render(s, false) }

// Block renders s for a block of text that may span lines (a command, a
// diff, a question): newlines and tabs are kept, backslashes are left as
// they are (commands are full of them), everything else not printable is
// escaped.
func Block(s string) string { return render(s, true) }

// Hidden reports whether r must be escaped before a person reads it.
func Hidden(r rune) bool {
	if !unicode.IsPrint(r) {
		return true
	}
	switch r {
	case '\u034f', // combining grapheme joiner
		'\u115f', '\u1160', '\u3164', '\uffa0', // Hangul fillers: letters that draw nothing
		'\u2800': // braille blank
		return true
	}
	// Variation selectors 17-256 only select ideograph variants; they are
	// invisible and can carry hidden data.
	return r >= 0xE0100 && r <= 0xE01EF
}

func render(s string, block bool) string {
	if clean(s, block) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n' || r == '\t':
			if block {
				b.WriteRune(r)
			} else {
				b.WriteString(escape(r))
			}
		case r == '\\' && !block:
			b.WriteString(`\\`)
		case Hidden(r):
			b.WriteString(escape(r))
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// clean is the fast path: nothing in s needs an escape.
func clean(s string, block bool) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= utf8.RuneSelf {
			return cleanRunes(s[i:], block)
		}
		if c == '\\' && !block {
			return false
		}
		if c < 0x20 || c == 0x7f {
			if !block || (c != '\n' && c != '\t') {
				return false
			}
		}
	}
	return true
}

func cleanRunes(s string, block bool) bool {
	for i, r := range s {
		if r == utf8.RuneError {
			if _, size := utf8.DecodeRuneInString(s[i:]); size == 1 {
				return false
			}
		}
		if (r == '\n' || r == '\t') && block {
			continue
		}
		if (r == '\\' && !block) || Hidden(r) {
			return false
		}
	}
	return true
}

// escape is the visible form of one hidden rune.
func escape(r rune) string {
	switch r {
	case '\n':
		return `\n`
	case '\r':
		return `\r`
	case '\t':
		return `\t`
	}
	switch {
	case r < 0x80:
		return fmt.Sprintf(`\x%02x`, r)
	case r <= 0xFFFF:
		return fmt.Sprintf(`\u%04x`, r)
	}
	return fmt.Sprintf(`\U%08x`, r)
}

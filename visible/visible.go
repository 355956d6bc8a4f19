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
// A combining mark is drawn only where it cannot draw over anything it
// should not (markState); else it is escaped too.
package visible

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"golang.org/x/text/width"
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
	var m markState
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		invalid := r == utf8.RuneError && size == 1
		raw := false
		switch {
		case invalid:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n' || r == '\t':
			if block {
				b.WriteRune(r)
				raw = true
			} else {
				b.WriteString(escape(r))
			}
		case r == '\\' && !block:
			b.WriteString(`\\`)
		case Hidden(r) || !m.drawn(r):
			b.WriteString(escape(r))
		default:
			b.WriteString(s[i : i+size])
			raw = true
		}
		if invalid {
			r = utf8.RuneError
		}
		m.next(r, raw)
		i += size
	}
	return b.String()
}

// maxMarks is how many combining marks in a row one base character may
// carry and still be drawn: enough for the accents and tone marks of the
// world's scripts, too few to stack a column of marks over the lines
// around it.
const maxMarks = 2

// markState follows the combining marks after a base character. A
// combining mark draws over what comes before it, so one is drawn as is
// only on a non-ASCII character that was itself drawn as is, at most
// maxMarks in a row, and never an enclosing mark (a circle or a box drawn
// round what comes before). Every other mark is an escape: a strike-
// through or an accent over a command's ASCII ("rm" made a lookalike), a
// mark over an escape's last character or over the gutter, a stack that
// overwrites the lines around it.
type markState struct {
	base  bool // the base and the marks after it so far were drawn as is, and the base is not ASCII
	marks int  // combining marks since the base
}

// drawn reports whether r may be written as is after what m has seen.
func (m *markState) drawn(r rune) bool {
	if !unicode.Is(unicode.M, r) {
		return true
	}
	return m.base && m.marks < maxMarks && !unicode.Is(unicode.Me, r)
}

// next records r, written as is or not.
func (m *markState) next(r rune, raw bool) {
	if unicode.Is(unicode.M, r) {
		m.base = m.base && raw
		m.marks++
		return
	}
	m.base = raw && r >= utf8.RuneSelf
	m.marks = 0
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

// cleanRunes is clean from the first non-ASCII byte of s on; what came
// before it was ASCII, so a mark right at the start would sit on ASCII.
func cleanRunes(s string, block bool) bool {
	var m markState
	for i, r := range s {
		if r == utf8.RuneError {
			if _, size := utf8.DecodeRuneInString(s[i:]); size == 1 {
				return false
			}
		}
		if (r == '\n' || r == '\t') && block {
			m.next(r, true)
			continue
		}
		if (r == '\\' && !block) || Hidden(r) || !m.drawn(r) {
			return false
		}
		m.next(r, true)
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

// Gutter starts every line of a model's text inside a prompt (Quote): no
// line the model wrote can start like a line of the prompt itself (an
// option, an "Approve?" line, a field), however it breaks its lines.
const Gutter = "│ "

// Quote renders s, which may span lines, as a quoted block: each line is
// prefix, the Gutter, then the line as Block renders it. There is no
// newline after the last line.
func Quote(prefix, s string) string {
	lines := strings.Split(Block(s), "\n")
	for i, l := range lines {
		lines[i] = prefix + Gutter + l
	}
	return strings.Join(lines, "\n")
}

// Name renders a name someone else chose (a sub-agent's, which the
// model picks, or a persona's) for one line, between double quotes: Line's
// rendering with every double quote in it escaped, so no name can close
// its quotes and write on as if it were the text around it (a name
// `x" (persona "researcher` cannot pass for a persona). Line has already
// doubled every backslash, so the quotes read back unambiguously.
func Name(s string) string {
	return "\"" + strings.ReplaceAll(Line(s), "\"", "\\\"") + "\""
}

// Code renders s, a command, a path or a name that is acted on, for one
// line, with every rune outside printable ASCII written as an escape: a
// Cyrillic "а" in a path, a combining accent on a command, a no-break
// space are not what they look like, and in Code they do not look like
// it. Like Line it is lossless: a backslash is written `\\`.
func Code(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\\':
			b.WriteString(`\\`)
		case r >= 0x20 && r < 0x7f:
			b.WriteByte(byte(r))
		default:
			b.WriteString(escape(r))
		}
		i += size
	}
	return b.String()
}

// JSON renders a JSON value for a person to read what runs: indented
// under prefix, and with every rune outside printable ASCII in its
// strings written as a JSON \u escape, so the text is still exactly the
// JSON that runs, and a lookalike or an invisible character in an
// argument is plain to see. raw that is not JSON is shown as Code.
func JSON(raw []byte, prefix string) string {
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if dec.Decode(&v) != nil || dec.More() {
		return Code(string(raw))
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent(prefix, "  ")
	if enc.Encode(v) != nil {
		return Code(string(raw))
	}
	out := strings.TrimSuffix(buf.String(), "\n")
	var b strings.Builder
	b.Grow(len(out))
	for _, r := range out {
		switch {
		case r == 0x7f:
			b.WriteString(`\u007f`) // the encoder keeps DEL
		case r < utf8.RuneSelf:
			b.WriteRune(r) // the encoder escaped every other control
		case r > 0xFFFF:
			r1, r2 := utf16.EncodeRune(r)
			fmt.Fprintf(&b, `\u%04x\u%04x`, r1, r2)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
	}
	return b.String()
}

// Continued starts every row after the first of a line Wrap breaks. A
// terminal wraps a line wider than itself on its own, and the row it
// starts begins at the left edge with whatever the line held there: in a
// prompt that is the model's text, free to read as a line of the prompt
// (an "Approve?" line, a field, a numbered option, a diff's "-" line),
// with spaces or any printable padding to put it there. Broken here
// instead, each such row starts with the prefix and this mark, which no
// line of the prompt starts with.
const Continued = "┆ "

// DefaultWidth is the width Wrap is given where the screen's is unknown:
// the narrowest common terminal.
const DefaultWidth = 80

// minWidth keeps a continued row room for text on the narrowest screen.
const minWidth = 20

// Wrap breaks each line of s wider than width columns into rows of at
// most width columns; every row after a line's first starts with prefix
// and Continued. Nothing is dropped or added but the breaks and marks, so
// the rows read back as the line. No row ends in a blank the next row
// does not start with: a blank at the end of a row is not seen, and
// "rm -rf ~ " above "┆ /tmp/x" would read as one path; the blank goes on
// to the next row, where it shows after the mark. Columns are counted as
// a terminal draws them (Columns); an SGR colour sequence (ESC [ ... m),
// which only the caller's own colouring can hold in text made visible
// first, takes none.
func Wrap(s string, width int, prefix string) string {
	width = max(width, minWidth)
	cont := prefix + Continued
	contCols := stringColumns(cont)
	if contCols > width-minWidth/2 {
		cont, contCols = Continued, stringColumns(Continued)
	}
	var b bytes.Buffer
	b.Grow(len(s))
	for n, l := range strings.Split(s, "\n") {
		if n > 0 {
			b.WriteByte('\n')
		}
		col := 0
		blank := -1 // where the blank written last starts in b, if it was written last
		var blankRune rune
		for i := 0; i < len(l); {
			if j := sgrEnd(l, i); j > i {
				b.WriteString(l[i:j]) // a blank before it is still the last drawn
				i = j
				continue
			}
			r, size := utf8.DecodeRuneInString(l[i:])
			w := Columns(r, col)
			if col+w > width && col > contCols {
				if blank >= 0 && r != ' ' && r != '\t' {
					// Carry the blank over (with any colour after it):
					// it starts the next row.
					tail := string(b.Bytes()[blank:])
					b.Truncate(blank)
					b.WriteString("\n" + cont + tail)
					col = contCols + Columns(blankRune, contCols)
				} else {
					b.WriteString("\n" + cont)
					col = contCols
				}
				w = Columns(r, col)
			}
			blank = -1
			if r == ' ' || r == '\t' {
				blank, blankRune = b.Len(), r
			}
			b.WriteString(l[i : i+size])
			col += w
			i += size
		}
	}
	return b.String()
}

// sgrEnd is the end of the SGR sequence at s[i:], or i if none starts there.
func sgrEnd(s string, i int) int {
	if !strings.HasPrefix(s[i:], "\x1b[") {
		return i
	}
	for j := i + 2; j < len(s); j++ {
		switch c := s[j]; {
		case c == 'm':
			return j + 1
		case c != ';' && (c < '0' || c > '9'):
			return i
		}
	}
	return i
}

// Columns is how many columns a terminal gives r drawn at column col: a
// tab runs to the next stop of eight, a combining mark and a zero-width
// character take none, a wide or fullwidth character (CJK, most emoji)
// two. Overcounting is the safe side: a row broken early wraps nowhere.
func Columns(r rune, col int) int {
	switch {
	case r == '\t':
		return 8 - col%8
	case unicode.Is(unicode.Mn, r) || unicode.Is(unicode.Me, r) || unicode.Is(unicode.Cf, r):
		return 0
	}
	switch width.LookupRune(r).Kind() {
	case width.EastAsianWide, width.EastAsianFullwidth:
		return 2
	}
	if r >= 0x1F000 && r <= 0x1FAFF {
		return 2 // emoji, drawn wide by terminals whatever their class
	}
	return 1
}

func stringColumns(s string) int {
	col := 0
	for _, r := range s {
		col += Columns(r, col)
	}
	return col
}

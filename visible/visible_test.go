package visible

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestLineAndBlock(t *testing.T) {
	for _, tc := range []struct {
		in, line, block string
	}{
		{"plain text, é and 漢字 and 🙂", "plain text, é and 漢字 and 🙂", "plain text, é and 漢字 and 🙂"},
		{"a\nb\tc", `a\nb\tc`, "a\nb\tc"},
		{"echo ok\r\x1b[2Kecho repainted", `echo ok\r\x1b[2Kecho repainted`, `echo ok\r\x1b[2Kecho repainted`},
		{`grep 'a\.b'`, `grep 'a\\.b'`, `grep 'a\.b'`},
		{"rm -rf \u202e/ txt.exe", `rm -rf \u202e/ txt.exe`, `rm -rf \u202e/ txt.exe`},
		{"a\u200bb\u2066c\u00add", `a\u200bb\u2066c\u00add`, `a\u200bb\u2066c\u00add`},
		{"del\x7f c1\u009b nel\u0085", `del\x7f c1\u009b nel\u0085`, `del\x7f c1\u009b nel\u0085`},
		{"nbsp\u00a0ls", `nbsp\u00a0ls`, `nbsp\u00a0ls`},
		{"line\u2028sep", `line\u2028sep`, `line\u2028sep`},
		{"tag\U000e0041", `tag\U000e0041`, `tag\U000e0041`},
		{"filler\u3164x", `filler\u3164x`, `filler\u3164x`},
		{"bad \xff byte", `bad \xff byte`, `bad \xff byte`},
	} {
		if got := Line(tc.in); got != tc.line {
			t.Errorf("Line(%q) = %q, want %q", tc.in, got, tc.line)
		}
		if got := Block(tc.in); got != tc.block {
			t.Errorf("Block(%q) = %q, want %q", tc.in, got, tc.block)
		}
	}
}

// unescape reverses Line, to prove it loses nothing: two different
// strings never read the same.
func unescape(t *testing.T, s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			b.WriteByte(s[i])
			continue
		}
		i++
		switch s[i] {
		case '\\':
			b.WriteByte('\\')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'x':
			n, err := strconv.ParseUint(s[i+1:i+3], 16, 8)
			if err != nil {
				t.Fatalf("bad escape in %q", s)
			}
			b.WriteByte(byte(n))
			i += 2
		case 'u', 'U':
			w := 4
			if s[i] == 'U' {
				w = 8
			}
			n, err := strconv.ParseUint(s[i+1:i+1+w], 16, 32)
			if err != nil {
				t.Fatalf("bad escape in %q", s)
			}
			b.WriteRune(rune(n))
			i += w
		default:
			t.Fatalf("unknown escape \\%c in %q", s[i], s)
		}
	}
	return b.String()
}

// FuzzVisible checks the property for any input: what comes out is valid
// UTF-8 made of printable runes only (plus newline and tab in a block),
// and a line is a lossless encoding of its input.
func FuzzVisible(f *testing.F) {
	for _, s := range []string{"", "ok", "a\r\nb", "\x1b]0;title\x07", "\u202ereversed", "\xc3", `a\x1b`, "🙂\u200d🙂"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, out := range []string{Line(s), Block(s)} {
			if !utf8.ValidString(out) {
				t.Fatalf("invalid UTF-8 out of %q: %q", s, out)
			}
		}
		line := Line(s)
		for _, r := range line {
			if Hidden(r) {
				t.Fatalf("Line(%q) keeps hidden rune %U", s, r)
			}
		}
		for _, r := range Block(s) {
			if Hidden(r) && r != '\n' && r != '\t' {
				t.Fatalf("Block(%q) keeps hidden rune %U", s, r)
			}
		}
		if back := unescape(t, line); back != s {
			t.Fatalf("Line(%q) = %q reads back as %q", s, line, back)
		}
	})
}

// TestMarksAndLookalikes: a combining mark that draws over ASCII (a
// strike-through on a command), an enclosing mark, or a stack of them is
// an escape; accents on non-ASCII letters stay. Code escapes every
// non-ASCII rune, JSON every one inside a string, so a lookalike in what
// runs is plain.
func TestMarksAndLookalikes(t *testing.T) {
	for _, tc := range []struct{ in, block string }{
		{"rm\u0336 -rf", `rm\u0336 -rf`},
		{"é and ё", "é and ё"},
		{"ё\u0301", "ё\u0301"},
		{"ё\u0301\u0301\u0301", "ё\u0301\u0301" + `\u0301`},
		{"ж\u20dd", `ж\u20dd`},
		{"\u200b\u0301", `\u200b\u0301`},
		{"\u0301", `\u0301`},
	} {
		if got := Block(tc.in); got != tc.block {
			t.Errorf("Block(%q) = %q, want %q", tc.in, got, tc.block)
		}
	}
	if got := Code("/home/\u0430lice\\x \u00a0\x1b"); got != `/home/\u0430lice\\x \u00a0\x1b` {
		t.Errorf("Code = %q", got)
	}
	if got := JSON([]byte(`{"p":"/home/\u0430lice","d":"\u007f\u202e😀"}`), ""); got != "{\n  \"d\": \"\\u007f\\u202e\\ud83d\\ude00\",\n  \"p\": \"/home/\\u0430lice\"\n}" {
		t.Errorf("JSON = %q", got)
	}
}

// FuzzCode: Code and JSON write printable ASCII only (JSON: and the
// newlines of its indentation), Code is lossless, and Quote starts every
// line with the gutter.
func FuzzCode(f *testing.F) {
	for _, s := range []string{"", "а", "\u0301", `"\u0430"`, "a\nb", "\x1b[2J"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c := Code(s)
		for _, r := range c {
			if r < 0x20 || r >= 0x7f {
				t.Fatalf("Code(%q) = %q keeps %U", s, c, r)
			}
		}
		if back := unescape(t, c); back != s {
			t.Fatalf("Code(%q) = %q reads back as %q", s, c, back)
		}
		raw, _ := json.Marshal(map[string]string{s: s})
		for _, in := range [][]byte{raw, []byte(s)} {
			for _, r := range JSON(in, "  ") {
				if r != '\n' && (r < 0x20 || r >= 0x7f) {
					t.Fatalf("JSON(%q) keeps %U", in, r)
				}
			}
		}
		for _, l := range strings.Split(Quote("  ", s), "\n") {
			if !strings.HasPrefix(l, "  "+Gutter) {
				t.Fatalf("Quote(%q) has line %q without the gutter", s, l)
			}
		}
	})
}

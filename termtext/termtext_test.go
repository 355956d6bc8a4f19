package termtext_test

import (
	"testing"
	"unicode/utf8"

	"github.com/jazz-run/jazz/termtext"
)

func TestSafeShowsWhatATerminalWouldObey(t *testing.T) {
	for in, want := range map[string]string{
		"plain\n\tdiff":          "plain\n\tdiff",
		"\x1b[2J\x1b[Hok":        `\x1b[2J\x1b[Hok`,
		"a\rb":                   `a\x0db`,
		"\u009b31m":              `\u{009b}31m`,
		"rm -rf /\u202e/gnp.txt": `rm -rf /\u{202e}/gnp.txt`,
		"bad\xffbyte":            `bad\xffbyte`,
		"\x07bell\x7f":           `\x07bell\x7f`,
		"é — ok":                 "é — ok",
	} {
		if got := termtext.Safe(in); got != want {
			t.Errorf("Safe(%q) = %q, want %q", in, got, want)
		}
	}
	if got := termtext.Line("a\nb"); got != `a\nb` {
		t.Errorf("Line: %q", got)
	}
}

func FuzzSafeLeavesNoControl(f *testing.F) {
	f.Add("\x1b]0;title\x07")
	f.Add("\u2066x\u2069")
	f.Fuzz(func(t *testing.T, s string) {
		out := termtext.Safe(s)
		if !utf8.ValidString(out) {
			t.Fatalf("invalid UTF-8 out of %q", s)
		}
		for _, r := range out {
			if r < 0x20 && r != '\n' && r != '\t' || r == 0x7f || r >= 0x80 && r <= 0x9f || r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069 {
				t.Fatalf("control %U left in %q", r, out)
			}
		}
	})
}

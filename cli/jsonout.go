package cli

import (
	"fmt"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/jazz-run/jazz/visible"
)

// escapeHidden rewrites, in encoded JSON, every rune a terminal would act
// on or not draw (DEL, C1 controls such as U+009B, which some terminals
// take as CSI, bidi overrides, zero-width characters: visible.Hidden) as
// a \u escape. Outside strings JSON holds only ASCII, so each such rune
// is inside a string, and the escape decodes to the same value: a script
// reads what it read before, a person sees the characters instead of
// their effect. Go's encoder escapes only the C0 controls and U+2028/9.
func escapeHidden(b []byte) []byte {
	clean := true
	for _, r := range string(b) {
		if r == 0x7f || r >= utf8.RuneSelf && visible.Hidden(r) {
			clean = false
			break
		}
	}
	if clean {
		return b
	}
	out := make([]byte, 0, len(b)+16)
	for _, r := range string(b) {
		switch {
		case r == 0x7f || r >= utf8.RuneSelf && visible.Hidden(r):
			for _, u := range utf16.Encode([]rune{r}) {
				out = fmt.Appendf(out, `\u%04x`, u)
			}
		default:
			out = utf8.AppendRune(out, r)
		}
	}
	return out
}

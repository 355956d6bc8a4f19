package app

import (
	"strings"
	"testing"

	"github.com/jazz-run/jazz/visible"
)

// TestTextNoticesKeepToTheScreen: a notice printed on the terminal (a
// sub-agent's, while another's approval prompt is open) carries text the
// model chose; padded to the screen's edge it started a row of its own
// below the prompt, next to the cursor: a second "▶ you decide" line.
// On a terminal every row of a notice starts with the notice's mark or
// the continuation mark; to a pipe it stays one line.
func TestTextNoticesKeepToTheScreen(t *testing.T) {
	fake := strings.Repeat(" ", 200) + "  ▶ you decide: execute_command command=\"ls\""
	for _, c := range [][2]string{{"helper" + fake, "step failed" + fake}, {"", "run notice" + fake}} {
		out := noticeLine(c[0], c[1], 80)
		for _, row := range strings.Split(out, "\n") {
			if len([]rune(row)) > 80 || !(strings.HasPrefix(row, "⚠ ") || strings.HasPrefix(row, "  "+visible.Continued)) {
				t.Errorf("notice row %q:\n%s", row, out)
			}
		}
		if piped := noticeLine(c[0], c[1], 0); strings.Contains(piped, "\n") {
			t.Errorf("a piped notice spans lines: %q", piped)
		}
	}
}

package visible

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// TestWrapRows: for any text whose lines do not start with the mark (a
// prompt's lines start with its own prefixes), Wrap's rows are at most width columns,
// every row after a line's first starts with the prefix and Continued,
// joined back they are the text, and no row ends in a blank unless the
// next starts with one (a blank at a row's end is not seen).
func TestWrapRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 9))
	parts := []string{"a", "rm", " ", "  ", "\t", "~", "/tmp/x", "語", "🔐", "e\u0301", "\x1b[32m", "\x1b[0m", "\n", "│ "}
	for range 5000 {
		var in strings.Builder
		for range rng.IntN(120) {
			in.WriteString(parts[rng.IntN(len(parts))])
		}
		width := 20 + rng.IntN(70)
		prefix := []string{"", "  ", "    "}[rng.IntN(3)]
		s := in.String()
		out := Wrap(s, width, prefix)
		mark := prefix + Continued
		var lines []string
		rows := strings.Split(out, "\n")
		for i, row := range rows {
			if cols := stringColumns(stripSGR(row)); cols > width {
				t.Fatalf("width %d: row %q is %d columns\nin %q", width, row, cols, s)
			}
			if next, ok := strings.CutPrefix(row, mark); ok && i > 0 {
				prev := stripSGR(rows[i-1])
				if strings.HasSuffix(prev, " ") || strings.HasSuffix(prev, "\t") {
					if next = stripSGR(next); next != "" && next[0] != ' ' && next[0] != '\t' {
						t.Fatalf("row %q ends in a blank the next row %q does not start with\nin %q", prev, row, s)
					}
				}
				lines[len(lines)-1] += strings.TrimPrefix(row, mark)
				continue
			}
			lines = append(lines, row)
		}
		if got := strings.Join(lines, "\n"); got != s {
			t.Fatalf("width %d prefix %q: rows do not read back as the text:\n%q\n%q", width, prefix, s, got)
		}
	}
}

func stripSGR(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		if j := sgrEnd(s, i); j > i {
			i = j
			continue
		}
		b.WriteByte(s[i])
		i++
	}
	return b.String()
}

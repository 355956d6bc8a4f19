package humanio_test

import (
	"context"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/jazz-run/jazz/humanio"
)

// chunky returns its text in reads of random sizes, as a pipe may.
type chunky struct {
	rest string
	rnd  *rand.Rand
}

func (c *chunky) Read(p []byte) (int, error) {
	if c.rest == "" {
		return 0, io.EOF
	}
	n := min(len(p), len(c.rest), 1+c.rnd.IntN(40))
	copy(p, c.rest[:n])
	c.rest = c.rest[n:]
	return n, nil
}

// TestReadLinesKeepsOrCutsWholeLines is a property over random lines and
// random read sizes: every line of at most max bytes comes out exactly,
// every longer one comes out as one Cut line with no text, in order, so
// no tail of a long line is ever read as a line of its own.
func TestReadLinesKeepsOrCutsWholeLines(t *testing.T) {
	const max = 16
	rnd := rand.New(rand.NewPCG(1, 2))
	for round := range 500 {
		var in strings.Builder
		var want []humanio.Line
		for range rnd.IntN(8) {
			n := rnd.IntN(2 * max)
			text := strings.Repeat(string(rune('a'+rnd.IntN(3))), n)
			in.WriteString(text + "\n")
			if n > max {
				want = append(want, humanio.Line{Cut: true})
			} else {
				want = append(want, humanio.Line{Text: text})
			}
		}
		out := make(chan humanio.Line)
		go humanio.ReadLines(context.Background(), &chunky{rest: in.String(), rnd: rnd}, max, out)
		var got []humanio.Line
		for l := range out {
			l.At = humanio.Line{}.At // the time is not compared
			got = append(got, l)
		}
		if len(got) != len(want) {
			t.Fatalf("round %d: %q read as %+v, want %+v", round, in.String(), got, want)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("round %d: %q read as %+v, want %+v", round, in.String(), got, want)
			}
		}
	}
}

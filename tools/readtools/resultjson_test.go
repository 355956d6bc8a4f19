package readtools

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"
)

// readResult writes its own JSON (AppendJSON): it must be byte for byte
// what json.Marshal writes, for any text a file can hold (invalid UTF-8,
// controls, HTML characters, U+2028) and any numbers, with and without a
// range.
func TestReadResultJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 29))
	pieces := []string{"", "a", "line\n", "\t", "\"", "\\", "<", ">", "&", "\u2028", "\u2029", "é", "😀",
		"\xff", "\xe2\x80", "\x00", "\x1f", "\x7f", "/", "text of a file ", "\r\n"}
	text := func() string {
		var b []byte
		for range rng.IntN(40) {
			if rng.IntN(4) == 0 {
				b = append(b, byte(rng.IntN(256)))
			} else {
				b = append(b, pieces[rng.IntN(len(pieces))]...)
			}
		}
		return string(b)
	}
	ints := []int{0, 1, -1, 42, math.MaxInt, math.MinInt}
	num := func() int {
		if rng.IntN(2) == 0 {
			return ints[rng.IntN(len(ints))]
		}
		return rng.Int() - math.MaxInt/2
	}
	for i := range 20000 {
		r := readResult{Path: text(), Encoding: text(), Content: text(), Truncated: rng.IntN(2) == 0, TotalLines: num(), ReturnedLines: num()}
		if i%2 == 0 {
			r.Range = &lineRange{StartLine: num(), EndLine: num()}
		}
		want, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.AppendJSON(nil); string(got) != string(want) {
			t.Fatalf("AppendJSON(%#v)\n got %s\nwant %s", r, got, want)
		}
	}
}

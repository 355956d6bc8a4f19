// Package suggest finds the known word a mistyped one was meant to be:
// the "did you mean" of a config key, a tool name, a persona.
package suggest

import "strings"

// Nearest is the word of known closest to word, "" when none is close:
// a case-only difference, a shared start of two thirds of the shorter
// word (4 characters at least), or an edit distance of at most a third
// of the word (2 for short words).
func Nearest(word string, known []string) string {
	lw := strings.ToLower(word)
	best, bestD := "", -1
	for _, k := range known {
		lk := strings.ToLower(k)
		if lk == lw {
			return k
		}
		d := distance(lw, lk)
		if common(lw, lk) >= max(4, 2*min(len(lw), len(lk))/3) {
			d = min(d, 1) // the same word, differently ended
		}
		if bestD < 0 || d < bestD {
			best, bestD = k, d
		}
	}
	limit := max(2, len([]rune(word))/3)
	if bestD < 0 || bestD > limit {
		return ""
	}
	return best
}

// distance is the Levenshtein distance of a and b, by runes.
func distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

// Hint is ` Did you mean "x"?` for the nearest known word, "" for none.
func Hint(word string, known []string) string {
	if n := Nearest(word, known); n != "" && n != word {
		return ` Did you mean "` + n + `"?`
	}
	return ""
}

// common is the length of the longest shared prefix of a and b.
func common(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

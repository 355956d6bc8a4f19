// Package unidiff formats the difference between two texts as a unified
// diff that `git apply` and `patch` accept, and as the shorter display
// variant the file tools put in their results (tool-schemas.md §3 "Diffs").
//
// The line alignment comes from github.com/sergi/go-diff (Myers diff over
// one rune per distinct line); the package only adds what go-diff lacks:
// grouping the changes into hunks with context, the `@@ -a,b +c,d @@`
// headers and the `\ No newline at end of file` markers.
package unidiff

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/sergi/go-diff/diffmatchpatch"
)

// Context is the number of unchanged lines kept around each change.
const Context = 3

// MaxDisplayChanges is how many changed lines the display variant shows
// before it cuts the diff.
const MaxDisplayChanges = 20

// TruncatedMarker ends a display diff that was cut.
// (The original added "press Ctrl+O to expand", a key of its TUI that no
// bridge or terminal here has; fullDiff holds the rest.)
const TruncatedMarker = "... output truncated (showing first 20 changes)"

const noNewline = `\ No newline at end of file`

// op is one line of the edit script.
type op struct {
	kind byte   // ' ', '-' or '+'
	text string // the line with its terminator, if it has one
}

// Unified returns the unified diff turning oldText into newText, with
// `--- a/<name>` / `+++ b/<name>` headers and Context lines of context.
// It returns "" when the texts are equal. Lines end at "\n" only, so a
// CRLF file diffs with its "\r" kept on each line, as git does.
func Unified(name, oldText, newText string) string {
	if oldText == newText {
		return ""
	}
	script := lineScript(splitLines(oldText), splitLines(newText))
	var b strings.Builder
	b.WriteString("--- " + headerName("a/"+name) + "\n")
	b.WriteString("+++ " + headerName("b/"+name) + "\n")
	writeHunks(&b, script)
	return b.String()
}

// headerName is a header's file name: as is, or C-quoted as git writes
// it when it holds a quote, a backslash or a character that is not
// printable (a newline, a control or bidirectional-override character,
// invalid UTF-8), so that no name can end the header line and forge a
// hunk, or another file's headers, in what the approver reads.
func headerName(p string) string {
	if q := strconv.Quote(p); q[1:len(q)-1] != p {
		return q
	}
	return p
}

// splitLines cuts s after every "\n"; a last line without one is kept.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// lineScript aligns two line lists. Each distinct line becomes one rune, so
// go-diff's character diff is a line diff. Runes skip the surrogate block,
// which would not survive go-diff's string round trip.
func lineScript(a, b []string) []op {
	ids := map[string]rune{}
	var byID []string
	encode := func(lines []string) ([]rune, bool) {
		out := make([]rune, len(lines))
		for i, l := range lines {
			r, ok := ids[l]
			if !ok {
				r = rune(len(byID) + 1)
				if r >= 0xD800 {
					r += 0x800
				}
				if r > 0x10FFFF {
					return nil, false
				}
				ids[l] = r
				byID = append(byID, l)
			}
			out[i] = r
		}
		return out, true
	}
	ra, okA := encode(a)
	rb, okB := encode(b)
	if !okA || !okB {
		// More distinct lines than runes: replace everything. Still a
		// correct diff, only not a minimal one.
		return wholesale(a, b)
	}
	dmp := diffmatchpatch.New()
	var script []op
	for _, d := range dmp.DiffMainRunes(ra, rb, false) {
		kind := byte(' ')
		switch d.Type {
		case diffmatchpatch.DiffDelete:
			kind = '-'
		case diffmatchpatch.DiffInsert:
			kind = '+'
		}
		for _, r := range d.Text {
			id := r
			if id >= 0xD800+0x800 {
				id -= 0x800
			}
			script = append(script, op{kind, byID[id-1]})
		}
	}
	return script
}

func wholesale(a, b []string) []op {
	script := make([]op, 0, len(a)+len(b))
	for _, l := range a {
		script = append(script, op{'-', l})
	}
	for _, l := range b {
		script = append(script, op{'+', l})
	}
	return script
}

// writeHunks groups the script into hunks: changes closer than 2*Context
// unchanged lines share a hunk, as in diff -u.
func writeHunks(b *strings.Builder, script []op) {
	// oldNo/newNo[i] are the 1-based line numbers reached before script[i].
	n := len(script)
	oldAt := make([]int, n+1)
	newAt := make([]int, n+1)
	for i, o := range script {
		oldAt[i+1], newAt[i+1] = oldAt[i], newAt[i]
		if o.kind != '+' {
			oldAt[i+1]++
		}
		if o.kind != '-' {
			newAt[i+1]++
		}
	}
	i := 0
	for i < n {
		// Find the next change.
		for i < n && script[i].kind == ' ' {
			i++
		}
		if i >= n {
			return
		}
		start := max(0, i-Context)
		// Extend while the gap to the next change is small enough.
		end := i
		for {
			for end < n && script[end].kind != ' ' {
				end++
			}
			gap := end
			for gap < n && script[gap].kind == ' ' {
				gap++
			}
			if gap < n && gap-end <= 2*Context {
				end = gap
				continue
			}
			end = min(n, end+Context)
			break
		}
		writeHunk(b, script[start:end], oldAt[start], newAt[start])
		i = end
	}
}

func writeHunk(b *strings.Builder, hunk []op, oldBefore, newBefore int) {
	oldLen, newLen := 0, 0
	for _, o := range hunk {
		if o.kind != '+' {
			oldLen++
		}
		if o.kind != '-' {
			newLen++
		}
	}
	fmt.Fprintf(b, "@@ -%s +%s @@\n", rangeOf(oldBefore, oldLen), rangeOf(newBefore, newLen))
	for _, o := range hunk {
		b.WriteByte(o.kind)
		b.WriteString(o.text)
		if !strings.HasSuffix(o.text, "\n") {
			// Only a file's last line lacks its terminator.
			b.WriteString("\n" + noNewline + "\n")
		}
	}
}

// rangeOf prints a hunk range: the first line and the count, with the
// count omitted when it is 1 and the start being the line before when the
// range is empty, as GNU diff does.
func rangeOf(before, length int) string {
	switch length {
	case 0:
		return strconv.Itoa(before) + ",0"
	case 1:
		return strconv.Itoa(before + 1)
	}
	return strconv.Itoa(before+1) + "," + strconv.Itoa(length)
}

// Display is the diff as the file tools report it.
type Display struct {
	// Diff is the unified diff cut after MaxDisplayChanges changed lines,
	// or `+ Created file: <abs> (<n> lines)` for a new or empty original.
	Diff string
	// WasTruncated says whether Diff was cut.
	WasTruncated bool
	// FullDiff is the whole diff when Diff was cut, else "".
	FullDiff string
}

// ForDisplay builds the Display of a change to the file at abs. A missing
// or empty original is reported as a creation; its line count is the
// number of LF-separated parts of newText, as everywhere in the spec.
func ForDisplay(abs, oldText, newText string) Display {
	if oldText == "" {
		return Display{Diff: fmt.Sprintf("+ Created file: %s (%d lines)", abs, Lines(newText))}
	}
	full := Unified(baseName(abs), oldText, newText)
	cut, truncated := Truncate(full, MaxDisplayChanges)
	if !truncated {
		return Display{Diff: full}
	}
	return Display{Diff: cut, WasTruncated: true, FullDiff: full}
}

// Truncate cuts a unified diff after maxChanges changed ("+"/"-") lines
// and appends TruncatedMarker; it reports whether it cut anything.
func Truncate(diff string, maxChanges int) (string, bool) {
	changes := 0
	pos := 0
	inHunks := false // the ---/+++ headers come before the first @@
	for pos < len(diff) {
		next := strings.IndexByte(diff[pos:], '\n')
		end := len(diff)
		if next >= 0 {
			end = pos + next + 1
		}
		line := diff[pos:end]
		if strings.HasPrefix(line, "@@") {
			inHunks = true
		}
		if inHunks && (line[0] == '+' || line[0] == '-') {
			if changes == maxChanges {
				return diff[:pos] + TruncatedMarker, true
			}
			changes++
		}
		pos = end
	}
	return diff, false
}

// LineCount counts lines the way edit_file addresses them: the parts of
// s split on "\n", so "" is 1 line and "a\n" is 2.
func LineCount(s string) int { return strings.Count(s, "\n") + 1 }

// Lines counts lines as a person does, for what a person reads: "" is 0
// lines, "a" and "a\n" are 1, "a\nb\n" is 2. (The original used
// LineCount there, so overwriting a one-line file said "2 lines".)
func Lines(s string) int {
	n := strings.Count(s, "\n")
	if s != "" && !strings.HasSuffix(s, "\n") {
		n++
	}
	return n
}

func baseName(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[i+1:]
	}
	return p
}

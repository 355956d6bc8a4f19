//go:build unix

package writetools

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/jazz-run/jazz/tools/pattern"
)

// editOp is one edit_file operation; which fields count depends on Type.
type editOp struct {
	Type        string `json:"type"`
	StartLine   int    `json:"startLine"`
	EndLine     int    `json:"endLine"`
	Content     string `json:"content"`
	Line        int    `json:"line"`
	Pattern     string `json:"pattern"`
	Replacement string `json:"replacement"`
	Count       *int   `json:"count"`
}

// Error types of edit_file failures (tool-schemas.md §4).
const (
	OutOfBoundsError         = "OutOfBoundsError"
	InsertOutOfBoundsError   = "InsertOutOfBoundsError"
	PatternNotFoundError     = "PatternNotFoundError"
	PatternTooComplexError   = "PatternTooComplexError"
	InvalidPatternError      = "InvalidPatternError"
	RegexIterationLimitError = "RegexIterationLimitError"
	FileNotFoundError        = "FileNotFoundError"
	FileReadError            = "FileReadError"
	FileWriteError           = "FileWriteError"
	UnknownError             = "UnknownError"
)

// Limits of replace_pattern.
const (
	maxPatternLen       = 200
	maxRegexIterations  = 100000
	maxListedMatchLines = 20
)

// Limits of one edit_file call. Every edit goes over the whole text (a
// line edit splices the list of lines, a pattern edit joins, scans and
// splits the text), so the propose half's work, which runs before anyone
// is asked, is the number of edits times the text's size: 40,000 inserts
// took it 14 s, and a few hundred regex edits of a 16 MB file would take
// minutes. maxEdits bounds how many one call makes (and the list of them
// a person reads), maxEditWork what they may work through together.
const (
	maxEdits    = 1000
	maxEditWork = 16 * maxWriteBytes
)

// editLimits bound a simulation: size the text at every step, work the
// sum, over the edits, of the text's size and lines when each applies.
type editLimits struct{ size, work int }

// callLimits are the limits of an edit_file call.
func callLimits() editLimits { return editLimits{size: maxWriteBytes, work: maxEditWork} }

// editWork is what one edit costs on a text of size bytes in n lines.
func editWork(size, n int) int { return size + n }

// tooManyEdits refuses a call of more than maxEdits edits.
func tooManyEdits(n int) *editError {
	return &editError{UnknownError, fmt.Sprintf("edit_file makes at most %d edits in one call, and this call has %d; nothing was changed. Split them into several calls, or write the file with write_file.", maxEdits, n)}
}

// tooMuchWork refuses a call whose edits would work through more than
// the limit.
func tooMuchWork(edits, limit int) *editError {
	return &editError{UnknownError, fmt.Sprintf("These %d edits would work through more than %s of text (each edit goes over the whole file); nothing was changed. Make fewer edits in one call, or write the file with write_file.", edits, formatSize(int64(limit)))}
}

// editError is a failed simulation: an errorType and its message.
type editError struct{ kind, msg string }

func (e *editError) Error() string { return e.msg }

// simulation is what a sequence of edits does to a text.
type simulation struct {
	text    string   // the new content
	applied []string // editsApplied, one per edit
	items   []string // the propose message's "Edits to perform" lines
}

// validateOps is the schema's cross-field refinement: the checks JSON
// Schema cannot say. It returns the issues as `<path>: <message>`.
func validateOps(ops []editOp) []string {
	var issues []string
	for i, op := range ops {
		switch op.Type {
		case "replace_lines", "delete_lines":
			if op.StartLine > op.EndLine {
				issues = append(issues, fmt.Sprintf("edits.%d: startLine must be less than or equal to endLine", i))
			}
		case "replace_pattern":
			if op.Count != nil && *op.Count != -1 && *op.Count < 1 {
				issues = append(issues, fmt.Sprintf("edits.%d.count: count must be a positive integer or -1 (all). Got 0 or invalid negative value.", i))
			}
		}
	}
	return issues
}

// simulate applies ops in order to content. Lines split on "\n" only (a
// "\r" stays on its line; an empty file is one empty line) and are joined
// with "\n", so a CRLF file keeps its endings on untouched lines.
//
// The text is bounded at every step, not only at the end: a few bytes of
// arguments (replace "a" with "aa", all of them, forty times) would
// otherwise double it forty times in the propose half, which runs with no
// approval, and take the whole process down. The bound is limit
// (maxWriteBytes), and an edit that would pass it fails before its text
// is built. ctx is
// looked at between edits, so a call whose time is up stops working.
//
// The work is bounded too (editLimits.work): a call whose edits would
// pass it on the text as it is (their number times the text's cost) is
// refused before any is simulated, and one whose text grows on the way
// is refused at the edit that passes it.
func simulate(ctx context.Context, content string, ops []editOp, lim editLimits) (simulation, *editError) {
	limit := lim.size
	var sim simulation
	if len(ops) > maxEdits {
		return sim, tooManyEdits(len(ops))
	}
	// Counted without splitting, so a refused call builds nothing.
	if first := editWork(len(content), strings.Count(content, "\n")+1); first > 0 && len(ops) > lim.work/first {
		return sim, tooMuchWork(len(ops), lim.work)
	}
	lines := strings.Split(content, "\n")
	// size is len(strings.Join(lines, "\n")), kept as the lines change.
	size := len(content)
	work := 0
	for i, op := range ops {
		if err := ctx.Err(); err != nil {
			return sim, &editError{UnknownError, "The edits were stopped before they were all simulated: " + err.Error()}
		}
		n := len(lines)
		num := i + 1
		if work += editWork(size, n); work > lim.work {
			return sim, tooMuchWork(len(ops), lim.work)
		}
		switch op.Type {
		case "replace_lines", "delete_lines":
			if op.EndLine > n || op.StartLine > n {
				return sim, &editError{OutOfBoundsError, fmt.Sprintf("Line range %d-%d is out of bounds (file has %d lines)", op.StartLine, op.EndLine, n)}
			}
			var repl []string
			if op.Type == "replace_lines" {
				repl = strings.Split(op.Content, "\n")
			}
			next := spliceSize(size, lines, op.StartLine-1, op.EndLine, repl)
			if err := checkSize(num, next, limit); err != nil {
				return sim, err
			}
			if op.Type == "replace_lines" {
				sim.applied = append(sim.applied, fmt.Sprintf("Replaced lines %d-%d with %d line(s)", op.StartLine, op.EndLine, len(repl)))
				sim.items = append(sim.items, fmt.Sprintf("  %d. Replace lines %d-%d with new content (%d lines)", num, op.StartLine, op.EndLine, len(repl)))
			} else {
				sim.applied = append(sim.applied, fmt.Sprintf("Deleted lines %d-%d (%d line(s))", op.StartLine, op.EndLine, op.EndLine-op.StartLine+1))
				sim.items = append(sim.items, fmt.Sprintf("  %d. Delete lines %d-%d", num, op.StartLine, op.EndLine))
			}
			lines = splice(lines, op.StartLine-1, op.EndLine, repl)
			size = next
		case "insert":
			if op.Line > n {
				return sim, &editError{InsertOutOfBoundsError, fmt.Sprintf("Insert position %d is out of bounds (file has %d lines)", op.Line, n)}
			}
			ins := strings.Split(op.Content, "\n")
			next := spliceSize(size, lines, op.Line, op.Line, ins)
			if err := checkSize(num, next, limit); err != nil {
				return sim, err
			}
			sim.applied = append(sim.applied, fmt.Sprintf("Inserted %d line(s) after line %d", len(ins), op.Line))
			sim.items = append(sim.items, fmt.Sprintf("  %d. Insert content after line %d (%d lines)", num, op.Line, len(ins)))
			lines = splice(lines, op.Line, op.Line, ins)
			size = next
		case "replace_pattern":
			text := strings.Join(lines, "\n")
			out, found, err := replacePattern(text, op, num, limit)
			if err != nil {
				return sim, err
			}
			count := 1
			if op.Count != nil {
				count = *op.Count
			}
			sim.applied = append(sim.applied, fmt.Sprintf("Replaced pattern \"%s\" %d time(s) with \"%s\"", op.Pattern, found.count, op.Replacement))
			sim.items = append(sim.items, fmt.Sprintf("  %d. Replace %s with %s (%s)", num, shownArg(op.Pattern), shownArg(op.Replacement), occurrences(count, found)))
			lines = strings.Split(out, "\n")
			size = len(out)
		default:
			return sim, &editError{UnknownError, fmt.Sprintf("Unknown edit type %q", op.Type)}
		}
	}
	sim.text = strings.Join(lines, "\n")
	return sim, nil
}

// spliceSize is the joined length of lines (size now) once
// splice(lines, from, to, repl) has run, worked out without building it.
func spliceSize(size int, lines []string, from, to int, repl []string) int {
	n := len(lines) - (to - from) + len(repl)
	if n == 0 {
		return 0
	}
	next := size + len(repl) - (to - from)
	for _, l := range repl {
		next += len(l)
	}
	for _, l := range lines[from:to] {
		next -= len(l)
	}
	return next
}

// checkSize refuses edit num when it would leave a text of size bytes
// past limit.
func checkSize(num, size, limit int) *editError {
	if size <= limit {
		return nil
	}
	return &editError{UnknownError, fmt.Sprintf("Edit %d would make the file larger than %s, the most edit_file writes; nothing was changed. Make the edit smaller, or split the file.", num, formatSize(int64(limit)))}
}

func splice(lines []string, from, to int, repl []string) []string {
	out := make([]string, 0, len(lines)-(to-from)+len(repl))
	out = append(out, lines[:from]...)
	out = append(out, repl...)
	return append(out, lines[to:]...)
}

// matches is what a replace_pattern found: how many matches, and the
// first lines they are on, one entry per line and no more than the
// message lists (one past it says there are more). Only that much is
// kept: a one-byte pattern in a 16 MiB file matches millions of times.
type matches struct {
	count int
	lines []int
}

// add records a match on line.
func (m *matches) add(line int) {
	m.count++
	if len(m.lines) <= maxListedMatchLines && (len(m.lines) == 0 || m.lines[len(m.lines)-1] != line) {
		m.lines = append(m.lines, line)
	}
}

// occurrences words the match summary of a replace_pattern item:
// `1 occurrence on line 4`, `all occurrences on lines 2, 9`.
// maxShownArg bounds the bytes of a pattern or replacement an edit's
// summary line shows; the diff beside it shows the whole change.
const maxShownArg = 200

// shownArg is a pattern or replacement as one edit's summary line shows
// it: quoted, with quotes, backslashes, newlines and every character that
// is not plainly printable escaped, so text the model chose can neither
// end the quotes early nor start what reads as another edit of the list
// the person approves; past maxShownArg bytes it is cut, and says so.
func shownArg(s string) string {
	if len(s) <= maxShownArg {
		return strconv.Quote(s)
	}
	cut := maxShownArg
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s…(%d more bytes)", strconv.Quote(s[:cut]), len(s)-cut)
}

func occurrences(count int, found matches) string {
	s := strconv.Itoa(count) + " occurrence"
	if count == -1 {
		s = "all occurrence"
	}
	if count != 1 {
		s += "s"
	}
	uniq := make([]string, 0, len(found.lines))
	for _, l := range found.lines {
		uniq = append(uniq, strconv.Itoa(l))
	}
	if len(uniq) == 0 {
		return s
	}
	s += " on line"
	if len(uniq) > 1 {
		s += "s"
	}
	more := ""
	if len(uniq) > maxListedMatchLines {
		uniq, more = uniq[:maxListedMatchLines], "..."
	}
	return s + " " + strings.Join(uniq, ", ") + more
}

// replacePattern performs replace_pattern edit num on the joined text and
// returns the new text and what it found. The new text is built match by
// match and refused as soon as it would pass maxSize bytes.
func replacePattern(text string, op editOp, num, maxSize int) (string, matches, *editError) {
	var found matches
	p := op.Pattern
	tooComplex := func(reason string) *editError {
		return &editError{PatternTooComplexError, "Pattern too complex for replace_pattern: " + reason + ". Use replace_lines for structural edits instead."}
	}
	switch {
	case strings.Contains(p, "\n") || strings.Contains(p, `\n`):
		return "", found, tooComplex("Pattern contains newlines — this is a structural edit")
	case utf16Len(p) > maxPatternLen:
		return "", found, tooComplex(fmt.Sprintf("Pattern is %d characters long — too long for find-and-replace", utf16Len(p)))
	case strings.Contains(p, `[\s\S]`) || strings.Contains(p, `[\S\s]`) || strings.Contains(p, `(?s)`):
		return "", found, tooComplex("Pattern uses multi-line matching — this is a structural edit")
	}
	limit := -1
	if op.Count == nil {
		limit = 1
	} else if *op.Count != -1 {
		limit = *op.Count
	}
	// next gives the span of the next match at or after from, or ok false.
	var next func(from int) (start, end int, ok bool)
	regex := false
	needle := strings.TrimSpace(p)
	if body, isRegex := strings.CutPrefix(needle, pattern.Prefix); isRegex {
		re, err := pattern.CompileRegex(body)
		if err != nil {
			return "", found, &editError{InvalidPatternError, fmt.Sprintf("Invalid pattern \"%s\": %s", p, err.Error())}
		}
		// One match past the limit tells a runaway pattern from a busy one.
		n := maxRegexIterations + 1
		if limit != -1 && limit < n {
			n = limit
		}
		spans := re.FindAllStringIndex(text, n)
		if len(spans) > maxRegexIterations {
			return "", found, &editError{RegexIterationLimitError, fmt.Sprintf("Regex pattern \"%s\" exceeded %d iterations. Simplify the pattern or use a literal string instead.", p, maxRegexIterations)}
		}
		// The output is a prefix of the final text at every step, so the
		// final size bounds it; a regex's matches differ in length, so
		// that size is worked out from all of them first.
		final := len(text)
		for _, sp := range spans {
			final += len(op.Replacement) - (sp[1] - sp[0])
		}
		if err := checkSize(num, final, maxSize); err != nil {
			return "", found, err
		}
		regex = true
		next = func(int) (int, int, bool) {
			if len(spans) == 0 {
				return 0, 0, false
			}
			s := spans[0]
			spans = spans[1:]
			return s[0], s[1], true
		}
	} else {
		next = func(from int) (int, int, bool) {
			if needle == "" {
				return 0, 0, false
			}
			i := strings.Index(text[from:], needle)
			if i < 0 {
				return 0, 0, false
			}
			return from + i, from + i + len(needle), true
		}
	}
	var b strings.Builder
	size := len(text)
	prev, line := 0, 1
	for limit == -1 || found.count < limit {
		start, end, ok := next(prev)
		if !ok {
			break
		}
		// For a literal, every match changes the size by the same amount,
		// so the size projected so far passing maxSize means the final
		// text does too.
		if size += len(op.Replacement) - (end - start); !regex && size > maxSize {
			return "", found, checkSize(num, size, maxSize)
		}
		line += strings.Count(text[prev:start], "\n")
		found.add(line)
		b.WriteString(text[prev:start])
		b.WriteString(op.Replacement)
		line += strings.Count(text[start:end], "\n")
		prev = end
	}
	if found.count == 0 {
		msg := "Pattern \"" + p + "\" not found in file"
		if limit != -1 {
			noun := "matches"
			if limit == 1 {
				noun = "match"
			}
			msg += fmt.Sprintf(" (expected %d %s)", limit, noun)
		}
		return "", found, &editError{PatternNotFoundError, msg}
	}
	b.WriteString(text[prev:])
	return b.String(), found, nil
}

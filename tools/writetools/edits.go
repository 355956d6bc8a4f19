//go:build unix

package writetools

import (
	"fmt"
	"strconv"
	"strings"

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
func simulate(content string, ops []editOp) (simulation, *editError) {
	lines := strings.Split(content, "\n")
	var sim simulation
	for i, op := range ops {
		n := len(lines)
		num := i + 1
		switch op.Type {
		case "replace_lines", "delete_lines":
			if op.EndLine > n || op.StartLine > n {
				return sim, &editError{OutOfBoundsError, fmt.Sprintf("Line range %d-%d is out of bounds (file has %d lines)", op.StartLine, op.EndLine, n)}
			}
			var repl []string
			if op.Type == "replace_lines" {
				repl = strings.Split(op.Content, "\n")
				sim.applied = append(sim.applied, fmt.Sprintf("Replaced lines %d-%d with %d line(s)", op.StartLine, op.EndLine, len(repl)))
				sim.items = append(sim.items, fmt.Sprintf("  %d. Replace lines %d-%d with new content (%d lines)", num, op.StartLine, op.EndLine, len(repl)))
			} else {
				sim.applied = append(sim.applied, fmt.Sprintf("Deleted lines %d-%d (%d line(s))", op.StartLine, op.EndLine, op.EndLine-op.StartLine+1))
				sim.items = append(sim.items, fmt.Sprintf("  %d. Delete lines %d-%d", num, op.StartLine, op.EndLine))
			}
			lines = splice(lines, op.StartLine-1, op.EndLine, repl)
		case "insert":
			if op.Line > n {
				return sim, &editError{InsertOutOfBoundsError, fmt.Sprintf("Insert position %d is out of bounds (file has %d lines)", op.Line, n)}
			}
			ins := strings.Split(op.Content, "\n")
			sim.applied = append(sim.applied, fmt.Sprintf("Inserted %d line(s) after line %d", len(ins), op.Line))
			sim.items = append(sim.items, fmt.Sprintf("  %d. Insert content after line %d (%d lines)", num, op.Line, len(ins)))
			lines = splice(lines, op.Line, op.Line, ins)
		case "replace_pattern":
			text := strings.Join(lines, "\n")
			out, matchLines, err := replacePattern(text, op)
			if err != nil {
				return sim, err
			}
			count := 1
			if op.Count != nil {
				count = *op.Count
			}
			sim.applied = append(sim.applied, fmt.Sprintf("Replaced pattern \"%s\" %d time(s) with \"%s\"", op.Pattern, len(matchLines), op.Replacement))
			sim.items = append(sim.items, fmt.Sprintf("  %d. Replace \"%s\" with \"%s\" (%s)", num, op.Pattern, op.Replacement, occurrences(count, matchLines)))
			lines = strings.Split(out, "\n")
		default:
			return sim, &editError{UnknownError, fmt.Sprintf("Unknown edit type %q", op.Type)}
		}
	}
	sim.text = strings.Join(lines, "\n")
	return sim, nil
}

func splice(lines []string, from, to int, repl []string) []string {
	out := make([]string, 0, len(lines)-(to-from)+len(repl))
	out = append(out, lines[:from]...)
	out = append(out, repl...)
	return append(out, lines[to:]...)
}

// occurrences words the match summary of a replace_pattern item:
// `1 occurrence on line 4`, `all occurrences on lines 2, 9`.
func occurrences(count int, matchLines []int) string {
	s := strconv.Itoa(count) + " occurrence"
	if count == -1 {
		s = "all occurrence"
	}
	if count != 1 {
		s += "s"
	}
	var uniq []string
	for i, l := range matchLines {
		if i == 0 || l != matchLines[i-1] {
			uniq = append(uniq, strconv.Itoa(l))
		}
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

// replacePattern performs one replace_pattern on the joined text and
// returns the new text and the 1-based line of each replaced match.
func replacePattern(text string, op editOp) (string, []int, *editError) {
	p := op.Pattern
	tooComplex := func(reason string) *editError {
		return &editError{PatternTooComplexError, "Pattern too complex for replace_pattern: " + reason + ". Use replace_lines for structural edits instead."}
	}
	switch {
	case strings.Contains(p, "\n") || strings.Contains(p, `\n`):
		return "", nil, tooComplex("Pattern contains newlines — this is a structural edit")
	case utf16Len(p) > maxPatternLen:
		return "", nil, tooComplex(fmt.Sprintf("Pattern is %d characters long — too long for find-and-replace", utf16Len(p)))
	case strings.Contains(p, `[\s\S]`) || strings.Contains(p, `[\S\s]`) || strings.Contains(p, `(?s)`):
		return "", nil, tooComplex("Pattern uses multi-line matching — this is a structural edit")
	}
	limit := -1
	if op.Count == nil {
		limit = 1
	} else if *op.Count != -1 {
		limit = *op.Count
	}
	var spans [][]int
	needle := strings.TrimSpace(p)
	if body, ok := strings.CutPrefix(needle, pattern.Prefix); ok {
		re, err := pattern.CompileRegex(body)
		if err != nil {
			return "", nil, &editError{InvalidPatternError, fmt.Sprintf("Invalid pattern \"%s\": %s", p, err.Error())}
		}
		// One match past the limit tells a runaway pattern from a busy one.
		n := maxRegexIterations + 1
		if limit != -1 && limit < n {
			n = limit
		}
		spans = re.FindAllStringIndex(text, n)
		if len(spans) > maxRegexIterations {
			return "", nil, &editError{RegexIterationLimitError, fmt.Sprintf("Regex pattern \"%s\" exceeded %d iterations. Simplify the pattern or use a literal string instead.", p, maxRegexIterations)}
		}
	} else if needle != "" {
		for from := 0; limit == -1 || len(spans) < limit; {
			i := strings.Index(text[from:], needle)
			if i < 0 {
				break
			}
			spans = append(spans, []int{from + i, from + i + len(needle)})
			from += i + len(needle)
		}
	}
	if len(spans) == 0 {
		msg := "Pattern \"" + p + "\" not found in file"
		if limit != -1 {
			noun := "matches"
			if limit == 1 {
				noun = "match"
			}
			msg += fmt.Sprintf(" (expected %d %s)", limit, noun)
		}
		return "", nil, &editError{PatternNotFoundError, msg}
	}
	var b strings.Builder
	lineNos := make([]int, 0, len(spans))
	prev, line := 0, 1
	for _, s := range spans {
		line += strings.Count(text[prev:s[0]], "\n")
		lineNos = append(lineNos, line)
		b.WriteString(text[prev:s[0]])
		b.WriteString(op.Replacement)
		line += strings.Count(text[s[0]:s[1]], "\n")
		prev = s[1]
	}
	b.WriteString(text[prev:])
	return b.String(), lineNos, nil
}

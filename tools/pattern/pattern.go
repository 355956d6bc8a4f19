// Package pattern compiles the name patterns the file tools accept
// (tool-schemas.md §3 "Patterns"): trimmed text matched as a substring, or
// `re:<body>` for a JavaScript-style regular expression, with the spec's
// guard against nested quantifiers and its exact rejection messages.
package pattern

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
)

// Prefix marks a pattern whose remainder is a regular expression.
const Prefix = "re:"

// MaxRegexLen is the longest regex body accepted; longer ones are rejected
// like nested quantifiers.
const MaxRegexLen = 1000

// Match reports whether a name (usually a basename) matches a pattern.
type Match func(s string) bool

// RejectedError is returned for a regex body that is too long or nests a
// quantifier inside a quantified group. Its text is the spec's message.
type RejectedError struct{ Body string }

func (e *RejectedError) Error() string {
	return fmt.Sprintf("Regex %q rejected: contains nested quantifiers that risk catastrophic backtracking. Use a literal string or simplify the pattern.", e.Body)
}

// InvalidError is returned for a regex body that does not compile. Its
// text is the spec's `Invalid regex "<body>": <detail>`; Detail is the
// compiler's complaint, for callers that word their own message.
type InvalidError struct {
	Body   string
	Detail string
}

func (e *InvalidError) Error() string {
	return fmt.Sprintf("Invalid regex %q: %s", e.Body, e.Detail)
}

// Compile turns a tool's pattern argument into a Match. The text is
// trimmed; an empty pattern matches everything; `re:<body>` compiles body
// with CompileRegex (unanchored search, like JavaScript's RegExp.test);
// anything else matches as a case-sensitive substring.
func Compile(p string) (Match, error) {
	p = strings.TrimSpace(p)
	if p == "" {
		return func(string) bool { return true }, nil
	}
	if body, ok := strings.CutPrefix(p, Prefix); ok {
		re, err := CompileRegex(body)
		if err != nil {
			return nil, err
		}
		return re.MatchString, nil
	}
	return func(s string) bool { return strings.Contains(s, p) }, nil
}

// CompileRegex checks a regex body with Unsafe, translates the JavaScript
// spellings RE2 lacks (`\uXXXX`, `\u{X}`, `[^]`) and compiles it. Errors
// are *RejectedError or *InvalidError. Constructs RE2 cannot run at all
// (lookaround, backreferences) are invalid.
func CompileRegex(body string) (*regexp.Regexp, error) {
	if Unsafe(body) {
		return nil, &RejectedError{Body: body}
	}
	re, err := regexp.Compile(translate(body))
	if err != nil {
		detail := strings.TrimPrefix(err.Error(), "error parsing regexp: ")
		return nil, &InvalidError{Body: body, Detail: detail}
	}
	return re, nil
}

// Unsafe reports whether a regex body is over MaxRegexLen or holds a
// quantifier (`*`, `+`, `{n…}`) inside a group that is itself quantified,
// such as `(a+)+` or `((ab)*c){2}`. RE2 never backtracks, but the spec
// rejects these shapes so a model learns the same rule everywhere.
func Unsafe(body string) bool {
	if len(body) > MaxRegexLen {
		return true
	}
	var open []bool // per open group: does it hold a quantifier?
	for i := 0; i < len(body); i++ {
		switch c := body[i]; {
		case c == '\\':
			i++
		case c == '[':
			i = classEnd(body, i)
		case c == '(':
			open = append(open, false)
		case c == ')':
			if len(open) == 0 {
				continue // unbalanced: the compiler will say so
			}
			held := open[len(open)-1]
			open = open[:len(open)-1]
			if held && isQuantifier(body, i+1) {
				return true
			}
		case isQuantifier(body, i):
			for j := range open {
				open[j] = true
			}
		}
	}
	return false
}

// isQuantifier says whether body[i:] starts with *, + or a {n}, {n,},
// {n,m} repetition.
func isQuantifier(body string, i int) bool {
	if i >= len(body) {
		return false
	}
	switch body[i] {
	case '*', '+':
		return true
	case '{':
		return repeatRe().MatchString(body[i:])
	}
	return false
}

var repeatRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\{\d+(,\d*)?\}`) })

// classEnd returns the index of the `]` closing the class opened at i.
func classEnd(body string, i int) int {
	for j := i + 1; j < len(body); j++ {
		switch body[j] {
		case '\\':
			j++
		case ']':
			return j
		}
	}
	return len(body)
}

var (
	jsUnicode      = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\\u([0-9A-Fa-f]{4})`) })
	jsUnicodeBrace = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\\u\{([0-9A-Fa-f]{1,6})\}`) })
)

// translate rewrites JavaScript regex spellings into RE2 ones.
func translate(body string) string {
	if !strings.Contains(body, `\u`) && !strings.Contains(body, "[^]") {
		return body
	}
	body = jsUnicodeBrace().ReplaceAllString(body, `\x{$1}`)
	body = jsUnicode().ReplaceAllString(body, `\x{$1}`)
	return strings.ReplaceAll(body, "[^]", `(?s:.)`)
}

package shellguard

import (
	"strings"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// wordValue is what the interpreter will pass for w, when that can be
// known from the text alone: w has no parameter, command or arithmetic
// expansion, no glob or tilde expansion, and it expands (by mvdan's own
// rules: braces, quote removal, escapes, $'…') to exactly one field. Otherwise ok is false and the word is
// dynamic: its value depends on variables, files or the user database.
func wordValue(w *syntax.Word) (string, bool) {
	if w == nil || !inertWord(w) {
		return "", false
	}
	// Brace expansion needs neither variables nor files: a word it leaves
	// as one field (`@{u}..HEAD`) is known, one it splits (`{-o,f}`) is
	// not. The fields come lazily, so `{1..99999999}` costs nothing.
	var fields []string
	for f, err := range expand.FieldsSeq(&expand.Config{}, w) {
		if err != nil || len(fields) == 1 {
			return "", false
		}
		fields = append(fields, f)
	}
	if len(fields) != 1 {
		return "", false
	}
	return fields[0], true
}

// inertWord: only literal text and quotes, no unquoted glob characters, no
// leading tilde, no line continuation.
func inertWord(w *syntax.Word) bool {
	for i, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			if i == 0 && strings.HasPrefix(p.Value, "~") {
				return false
			}
			if hasUnescaped(p.Value, "*?[") || strings.Contains(p.Value, "\\\n") {
				return false
			}
		case *syntax.SglQuoted:
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				l, ok := q.(*syntax.Lit)
				if !ok || strings.Contains(l.Value, "\\\n") {
					return false
				}
			}
		default:
			return false
		}
	}
	return true
}

// hasUnescaped reports whether s holds one of chars not preceded by a
// backslash.
func hasUnescaped(s, chars string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' {
			i++
			continue
		}
		if strings.IndexByte(chars, s[i]) >= 0 {
			return true
		}
	}
	return false
}

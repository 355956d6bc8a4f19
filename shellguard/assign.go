package shellguard

import (
	"fmt"
	"regexp"
	"strings"
	"sync"

	"mvdan.cc/sh/v3/syntax"
)

// harmlessValue is, per name, the shape a value must have for an inline
// assignment (`LANG=C ls`) to leave an auto-approved command as harmless
// as it was. Every other name is refused: a variable can point a program
// at a configuration, a pager, a hook or a library (HOME, GIT_DIR,
// XDG_CONFIG_HOME, PAGER, LD_PRELOAD …), and a list of the dangerous
// ones is never complete.
var harmlessValue = sync.OnceValue(func() map[string]*regexp.Regexp {
	// Locale names never need a slash: one would make glibc load a
	// locale from a path.
	locale := regexp.MustCompile(`^[A-Za-z0-9_.@+,:=-]*$`)
	flag := regexp.MustCompile(`^[A-Za-z0-9_]{0,16}$`)
	number := regexp.MustCompile(`^[0-9]{0,6}$`)
	return map[string]*regexp.Regexp{
		"LANG": locale, "LANGUAGE": locale, "LC_ALL": locale,
		// A zone name, relative to the system's zoneinfo; no absolute
		// path and no `..` (checked in assignProblem).
		"TZ":       regexp.MustCompile(`^:?[A-Za-z0-9_+-]+(?:/[A-Za-z0-9_+-]+)*(?:[+-]?[0-9:]+)?$`),
		"NO_COLOR": flag, "FORCE_COLOR": flag, "CLICOLOR": flag, "CLICOLOR_FORCE": flag,
		"COLUMNS": number, "LINES": number,
	}
})

// lcName matches the locale categories LC_CTYPE, LC_MESSAGES and the like.
var lcName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^LC_[A-Z]+$`) })

// assignProblem says why an inline assignment in front of a command
// keeps it from auto-approval, or "" when the name is on the short list of
// harmless ones and its value is literal and well-formed.
func assignProblem(as *syntax.Assign) string {
	if as.Name == nil || as.Index != nil || as.Array != nil || as.Naked || as.Append {
		return "a complex variable assignment"
	}
	name := as.Name.Value
	re, ok := harmlessValue()[name]
	if !ok && lcName().MatchString(name) {
		re, ok = harmlessValue()["LC_ALL"], true
	}
	if !ok {
		return fmt.Sprintf("the assignment %s=…: only %s may be set in front of an auto-approved command", name, harmlessNames)
	}
	val := ""
	if as.Value != nil {
		v, lit := assignValue(as.Value)
		if !lit {
			return fmt.Sprintf("the assignment %s=… has a value that is not plain text", name)
		}
		val = v
	}
	if !re.MatchString(val) || strings.Contains(val, "..") {
		return fmt.Sprintf("the value of %s=%q is not a plain %s value", name, val, name)
	}
	return ""
}

// harmlessNames is the list quoted in refusals.
const harmlessNames = "LANG, LANGUAGE, LC_*, TZ, NO_COLOR, FORCE_COLOR, CLICOLOR, CLICOLOR_FORCE, COLUMNS and LINES"

// assignValue is the value of an assignment word, if it is plain text. A
// tilde anywhere is refused: bash expands it after `=` and `:` here.
func assignValue(w *syntax.Word) (string, bool) {
	for _, p := range w.Parts {
		if l, ok := p.(*syntax.Lit); ok && strings.Contains(l.Value, "~") {
			return "", false
		}
	}
	return wordValue(w)
}

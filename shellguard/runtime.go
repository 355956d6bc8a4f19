package shellguard

import (
	"path"
	"strings"
)

// shells are interpreters whose inline or stdin scripts would run outside
// the checked interpreter.
var shells = map[string]bool{
	"sh": true, "bash": true, "zsh": true, "dash": true, "ksh": true, "mksh": true,
	"fish": true, "csh": true, "tcsh": true, "ash": true, "busybox": true,
}

// appendsInput are wrappers that append items read from stdin to the
// command they run, so the checked text gets a placeholder operand.
var appendsInput = map[string]bool{"xargs": true, "parallel": true}

// CheckArgv is the run-time check of one simple command after expansion,
// as the interpreter is about to run it (builtins, functions and external
// programs alike). It rebuilds the command text from argv and applies the
// denylist to it and to its normalised forms (clustered and reordered
// flags, base names, long options, kill's signal spellings), where an rm target counts as temp only if it lies inside
// tempDir (the child's $TMPDIR); it also refuses re-entry into a shell
// the interpreter cannot see: `eval`, `sh -c`/`bash -lc`, and a shell
// reading its script from stdin.
func CheckArgv(argv []string, tempDir string) (blocked bool, reason string) {
	return builtin().CheckArgv(argv, tempDir)
}

// CheckArgv is Denylist's form of the package-level CheckArgv.
func (d *Denylist) CheckArgv(argv []string, tempDir string) (blocked bool, reason string) {
	if len(argv) == 0 {
		return false, ""
	}
	if r := reentry(argv); r != "" {
		return true, r
	}
	text := strings.Join(argv, " ")
	if appendsInput[path.Base(argv[0])] {
		text += " {}"
	}
	tempOnly := runtimeTempOnly(tempDir)
	if r, ok := d.match(text, tempOnly); ok {
		return true, r.Reason
	}
	exempt := func(string) bool { return tempOnly(text) }
	for _, form := range argvForms(argv) {
		if r, ok := d.match(form, exempt); ok {
			return true, r.Reason
		}
	}
	return false, ""
}

func reentry(argv []string) string {
	if argv[0] == "eval" {
		return "`eval` (dynamic code execution) is on the blocked list"
	}
	for i, w := range argv {
		if !shells[path.Base(w)] {
			continue
		}
		operand := false
		for _, opt := range argv[i+1:] {
			if opt == "--" || !strings.HasPrefix(opt, "-") || opt == "-" {
				operand = opt != "--" && opt != "-"
				break
			}
			if opt == "--command" || !strings.HasPrefix(opt, "--") &&
				(strings.ContainsRune(opt[1:], 'c') || strings.ContainsRune(opt[1:], 's')) {
				return "an inline shell script (`" + path.Base(w) + " " + opt + "`: shell re-entry) is on the blocked list; write the code to a temp file and run that file instead"
			}
		}
		if i == 0 && !operand {
			return "a shell reading its script from stdin (`" + path.Base(w) + "` without a script file: shell re-entry) is on the blocked list; write the code to a temp file and run that file instead"
		}
	}
	return ""
}

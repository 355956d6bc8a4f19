package shellguard

import (
	"fmt"
	"path"
	"strings"
	"unicode"
)

// runsOther are programs and builtins that run another command, or code,
// given in their arguments or input. Their key would name the wrapper, not
// what runs, so no allowlist entry approves them (not even one naming the
// wrapper: that would approve every program).
var runsOther = map[string]bool{
	"eval": true, "exec": true, "source": true, ".": true, "command": true, "builtin": true,
	"xargs": true, "parallel": true, "timeout": true, "watch": true, "stdbuf": true,
	"setsid": true, "chroot": true, "flock": true, "ionice": true, "taskset": true, "chrt": true,
	"unbuffer": true, "nsenter": true, "unshare": true, "strace": true, "ltrace": true,
	"script": true, "su": true, "doas": true, "runuser": true, "sudo": true, "env": true,
	"nice": true, "nohup": true, "time": true, "setpriv": true, "prlimit": true, "pkexec": true,
	"run0": true, "systemd-run": true, "fakeroot": true, "firejail": true, "setarch": true,
	"linux32": true, "linux64": true, "sg": true, "newgrp": true, "catchsegv": true,
	"valgrind": true, "gdb": true, "busybox": true, "toybox": true, "coproc": true,
}

// shellState are builtins that change how the interpreter runs the rest of
// the command: aliases, options, traps, which program a name means, and
// variables (read PATH <<< ./bin makes the next `ls` a repository's).
var shellState = map[string]bool{
	"alias": true, "unalias": true, "trap": true, "enable": true, "hash": true,
	"shopt": true, "set": true, "unset": true, "read": true, "mapfile": true,
	"readarray": true, "getopts": true, "let": true, "declare": true, "typeset": true,
	"export": true, "local": true, "readonly": true,
}

// gitSafeGlobals are git's global options that change neither which
// repository, configuration or program git uses nor what it runs. Every
// other option before the subcommand (-C, -c, --config-env, --git-dir,
// --work-tree, --exec-path, --namespace, -p …) leaves the call without a
// key: it can point git at another repository's configuration or make it
// run another program.
var gitSafeGlobals = map[string]bool{
	"--no-pager": true, "-P": true, "--no-optional-locks": true, "--literal-pathspecs": true,
	"--glob-pathspecs": true, "--noglob-pathspecs": true, "--icase-pathspecs": true,
	"--no-replace-objects": true, "--no-advice": true, "--no-lazy-fetch": true,
}

// CommandKey is the allowlist key of one simple command given as its words
// (quotes already removed): the program that actually runs, as written,
// and, when the next word is not an option, that word as its subcommand.
// Leading `X=Y` words are skipped. Options before the subcommand are never
// skipped (an option may take the next word as its value), except git's
// harmless global options; so `grep -rn pat` keys as `grep` and
// `git -C dir status` has no subcommand key. Wrappers are not skipped:
// `npx jest` keys as `npx jest`, which an entry `jest` does not cover. If
// nothing is left after skipping, the key is the words joined and
// trimmed.
//
//	git diff --stat             → git diff
//	ls -la                      → ls
//	npm --prefix x test         → npm
//	NODE_ENV=test npm test      → npm test
//	npx jest --watch            → npx jest
func CommandKey(words []string) string {
	i := 0
	for i < len(words) && isAssignWord(words[i]) {
		i++
	}
	if i == len(words) {
		return strings.TrimSpace(strings.Join(words, " "))
	}
	inert := make([]bool, len(words)-i)
	for j := range inert {
		inert[j] = true
	}
	key, _ := keyOf(words[i:], inert)
	return key
}

// isAssignWord is an `X=Y` token: it has `=` and does not start with `-`.
func isAssignWord(w string) bool {
	return !strings.HasPrefix(w, "-") && strings.Contains(w, "=")
}

// keyOf computes the key of a call's words (assignments excluded); inert
// says which words are known exactly. It returns the key and, when the
// call has no key an entry may cover, why; key is then the best display
// form.
func keyOf(words []string, inert []bool) (key, why string) {
	if len(words) == 0 {
		return "", "no command"
	}
	if !inert[0] {
		return "", "a command name the shell computes (an expansion, glob or tilde)"
	}
	bin := words[0]
	if strings.TrimSpace(bin) == "" {
		return "", "an empty command name"
	}
	if strings.ContainsFunc(bin, unicode.IsSpace) {
		// A key joins words with spaces: `"ls /x"` (the program x in a
		// directory named "ls ") would key as an `ls` call.
		return "", "a command name with a space in it"
	}
	base := path.Base(bin)
	switch {
	case shells[base]:
		return bin, fmt.Sprintf("`%s` runs a shell script the check cannot see", bin)
	case runsOther[base]:
		return bin, fmt.Sprintf("`%s` runs another program; the allowlist names the program that runs, so write the command without the wrapper", bin)
	case shellState[base]:
		return bin, fmt.Sprintf("`%s` changes how the shell runs the rest of the command", bin)
	}
	rest, restInert := words[1:], inert[1:]
	if base == "git" {
		for len(rest) > 0 && restInert[0] && gitSafeGlobals[rest[0]] {
			rest, restInert = rest[1:], restInert[1:]
		}
		if len(rest) > 0 && (!restInert[0] || strings.HasPrefix(rest[0], "-")) {
			if !restInert[0] {
				return bin, "git's subcommand is computed by the shell"
			}
			return bin, fmt.Sprintf("the git option %q before the subcommand can change which repository, configuration or program git uses", rest[0])
		}
	}
	if len(rest) == 0 || !restInert[0] || strings.HasPrefix(rest[0], "-") || strings.ContainsFunc(rest[0], unicode.IsSpace) {
		// A word with a space in it is no subcommand an entry could
		// name: the key is the program alone.
		return bin, ""
	}
	return bin + " " + rest[0], ""
}

// MatchKey reports whether an allowlist entry covers key: equal, or key
// continues entry at a word boundary. It is never a raw prefix match:
// `git status` covers `git status --short` but not `git statusfoo`.
func MatchKey(key, entry string) bool {
	entry = strings.TrimSpace(entry)
	if entry == "" {
		return false
	}
	return key == entry || strings.HasPrefix(key, entry+" ")
}

// SplitWords splits a command on spaces the way the spec's key rule does:
// single or double quotes group words and are stripped. It is a display
// helper for a single simple command; approval decisions use the real
// parse in AllowlistApproves.
func SplitWords(command string) []string {
	var words []string
	var cur strings.Builder
	in := false
	var quote rune
	for _, r := range command {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '"' || r == '\'':
			quote, in = r, true
		case r == ' ' || r == '\t' || r == '\n':
			if in {
				words = append(words, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	if in {
		words = append(words, cur.String())
	}
	return words
}

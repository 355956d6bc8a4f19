package shellguard

import (
	"path"
	"regexp"
	"strings"
	"sync"

	"github.com/jazz-run/jazz/messages"
)

// argCheck says whether a read-only program's arguments (binary excluded,
// all literal) keep it inspect-only.
type argCheck func(args []string) bool

func anyArg(args []string, bad ...string) bool {
	for _, a := range args {
		for _, b := range bad {
			if a == b || strings.HasPrefix(b, "--") && strings.HasPrefix(a, b+"=") {
				return true
			}
			// short option clusters: -no with -o in bad
			if len(b) == 2 && b[0] == '-' && len(a) > 2 && a[0] == '-' && a[1] != '-' && strings.ContainsRune(a[1:], rune(b[1])) {
				return true
			}
		}
	}
	return false
}

func always([]string) bool { return true }

func without(bad ...string) argCheck {
	return func(args []string) bool { return !anyArg(args, bad...) }
}

func operands(args []string) []string {
	var out []string
	for _, a := range args {
		if !strings.HasPrefix(a, "-") {
			out = append(out, a)
		}
	}
	return out
}

// sedScript accepts the print/substitute subset of sed: `Np`, `N,Mp`,
// `$p`, `/re/p`, `Nq` and `s/a/b/` with the g, p, I and count flags. No
// `w`, `r`, `e` commands or flags can hide in it.
var sedScript = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(?:(?:\d+|\$)(?:,(?:\d+|\$))?[pq]|/[^/]*/p|s/[^/]*/[^/]*/[gpI0-9]*)$`)
})

func sedReadOnly(args []string) bool {
	script := true // the first operand is the script unless -e gave one
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-n" || a == "-E" || a == "-r" || a == "--quiet" || a == "--silent":
		case a == "-e" || a == "--expression":
			if i+1 >= len(args) || !sedScript().MatchString(args[i+1]) {
				return false
			}
			i++
			script = false
		case strings.HasPrefix(a, "-"):
			return false
		case script:
			if !sedScript().MatchString(a) {
				return false
			}
			script = false
		}
	}
	return true
}

// awkUnsafe are awk features that run programs or write files.
var awkUnsafe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`system|getline|close|fflush|[|>]`) })

func awkReadOnly(args []string) bool {
	for _, a := range args {
		if a == "-f" || strings.HasPrefix(a, "--file") || strings.HasPrefix(a, "-f") {
			return false
		}
		if awkUnsafe().MatchString(a) {
			return false
		}
	}
	return true
}

// gitReadOnly allows inspect-only subcommands; branch, tag and remote only
// in their listing forms. Global options before the subcommand, output
// files and external diff drivers are refused.
func gitReadOnly(args []string) bool {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return false
	}
	rest := args[1:]
	if anyArg(rest, "--output", "--ext-diff", "--textconv", "--exec", "--upload-pack", "--open-files-in-pager") {
		return false
	}
	switch args[0] {
	case "status", "log", "diff", "show", "rev-parse", "ls-files", "blame", "describe", "shortlog", "reflog", "cat-file", "ls-tree", "grep":
		if args[0] == "reflog" && len(operands(rest)) > 0 && operands(rest)[0] != "show" {
			return false
		}
		if args[0] == "grep" && anyArg(rest, "-O", "--open-files-in-pager") {
			return false
		}
		return true
	case "branch":
		for _, a := range rest {
			switch a {
			case "-a", "--all", "-r", "--remotes", "-v", "-vv", "--verbose", "--list", "-l", "--show-current", "--no-color", "--color":
			default:
				return false
			}
		}
		return true
	case "tag":
		return len(rest) == 0 || len(rest) == 1 && (rest[0] == "-l" || rest[0] == "--list")
	case "remote":
		return len(rest) == 0 || len(rest) == 1 && rest[0] == "-v"
	}
	return false
}

// readOnlyPrograms is the known inspect-only set. A program is here only
// if, with the listed options refused, it cannot write files, change
// system state or run another program.
var readOnlyPrograms = map[string]argCheck{
	"ls": always, "cat": always, "head": always, "tail": always, "wc": always,
	"grep": always, "egrep": always, "fgrep": always,
	"rg":   without("--pre", "--pre-glob", "--search-zip", "-z"),
	"find": without("-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls"),
	"pwd":  always, "echo": always, "printf": always, "which": always, "stat": always,
	"du": always, "df": always, "tr": always, "cut": always, "nl": always,
	"basename": always, "dirname": always, "realpath": always, "readlink": always,
	"whoami": always, "id": always, "uname": always, "true": always, "false": always,
	"seq": always, "diff": always, "cmp": always, "comm": always, "tree": always,
	"file":     without("-C", "--compile"),
	"date":     without("-s", "--set"),
	"sort":     without("-o", "--output", "--compress-program"),
	"uniq":     func(args []string) bool { return len(operands(args)) <= 1 },
	"hostname": func(args []string) bool { return len(args) == 0 },
	"sed":      sedReadOnly,
	"awk":      awkReadOnly, "gawk": awkReadOnly, "mawk": awkReadOnly,
	"git": gitReadOnly,
}

// StaticClassify rates a command without a model: "read-only" (decided)
// only when every simple command in it is a known inspect-only program
// with safe arguments, and there are no writes, file redirections,
// substitutions or dynamic words. Anything else is undecided: the harness
// model rates it, and the caller fails closed.
func StaticClassify(command string) (level string, decided bool) {
	if strings.TrimSpace(command) == "" {
		return "", false
	}
	if blocked, _ := CheckDenylist(command); blocked {
		return "", false
	}
	f, err := parse(command)
	if err != nil {
		return "", false
	}
	a := analyze(f)
	if a.reject != "" || len(a.calls) == 0 {
		return "", false
	}
	for _, sc := range a.calls {
		if len(sc.call.Assigns) > 0 {
			return "", false
		}
		for _, d := range sc.dyn {
			if d {
				return "", false
			}
		}
		if _, _, why := sc.key(); why != "" {
			return "", false
		}
		check, ok := readOnlyPrograms[sc.words[0]]
		if !ok || path.Base(sc.words[0]) != sc.words[0] || !check(sc.words[1:]) {
			return "", false
		}
	}
	return messages.LevelReadOnly, true
}

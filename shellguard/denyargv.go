package shellguard

import (
	"path"
	"regexp"
	"slices"
	"strings"
	"sync"

	"mvdan.cc/sh/v3/syntax"
)

// The denylist's second look: the same rules over normalised forms of
// each simple command, so that trivial rewrites of a blocked command are
// blocked too. A form keeps the program's base name (`/bin/kill` is
// `kill`), splits clustered short flags, tries each flag in front (`rm -v
// -r` reads as `rm -r -v`), puts operands in front (`chmod -R 777` reads
// as `chmod 777 -R`), spells GNU long options and kill's signal forms the
// short way, and names each redirection target. It never blocks what the
// same rule would not block in some order of the same words.

// argvForms are the normalised texts of one simple command.
func argvForms(words []string) []string {
	if len(words) == 0 {
		return nil
	}
	prog := path.Base(words[0])
	var flags, longs, operands []string
	for i := 1; i < len(words); i++ {
		w := words[i]
		switch {
		case w == "--":
			operands = append(operands, words[i+1:]...)
			i = len(words)
		case strings.HasPrefix(w, "--"):
			if short := longAsShort(prog, w); short != "" {
				flags = append(flags, short)
			} else {
				longs = append(longs, w)
			}
		case len(w) > 1 && w[0] == '-' && !isDigits(w[1:]) && prog != "kill":
			for _, c := range w[1:] {
				flags = append(flags, "-"+string(c))
			}
		default:
			operands = append(operands, w)
		}
	}
	if prog == "kill" {
		return killForms(words[1:])
	}
	var forms []string
	add := func(parts ...[]string) {
		var all []string
		for _, p := range parts {
			all = append(all, p...)
		}
		forms = append(forms, prog+" "+strings.Join(all, " "))
	}
	if len(flags) == 0 {
		add(longs, operands)
	}
	seen := map[string]bool{}
	for i, f := range flags {
		// Only flags some rule wants first (rm -r/-f, -c/-e of shells and
		// interpreters, crontab -e/-r, history -c/-w/-d/-a), once each:
		// the forms stay few whatever the command.
		if seen[f] || !strings.Contains(leadingFlags, f[1:]) {
			continue
		}
		seen[f] = true
		rest := slices.Concat(flags[:i], flags[i+1:])
		// Interpreters' -c/-e are matched as a flag of their own.
		if prog == "perl" && f == "-E" {
			f = "-e"
		}
		add([]string{f}, rest, longs, operands)
	}
	add(operands, flags, longs)
	return forms
}

// leadingFlags are the flags the rules look for right after the program.
const leadingFlags = "rRfFceEwda"

// longAsShort spells a GNU long option (or an abbreviation getopt would
// accept) as the short flag the rules know.
func longAsShort(prog, w string) string {
	name, _, _ := strings.Cut(w[2:], "=")
	if name == "" {
		return ""
	}
	var table map[string]string
	switch {
	case prog == "rm":
		table = map[string]string{"recursive": "-r", "force": "-f"}
	case prog == "node" || prog == "deno" || prog == "bun":
		table = map[string]string{"eval": "-e", "print": "-e"}
	case shells[prog] || prog == "python" || strings.HasPrefix(prog, "python"):
		table = map[string]string{"command": "-c"}
	case prog == "chmod" || prog == "chown":
		table = map[string]string{"recursive": "-R"}
	}
	var hit string
	for long, short := range table {
		if strings.HasPrefix(long, name) && len(name) >= 2 {
			if hit != "" && hit != short {
				return "" // ambiguous
			}
			hit = short
		}
	}
	return hit
}

// killForms turns every spelling of SIGKILL into `kill -9`.
func killForms(args []string) []string {
	isKill := func(s string) bool {
		s = strings.ToUpper(strings.TrimPrefix(strings.ToUpper(s), "SIG"))
		return s == "KILL" || s == "9"
	}
	var pids []string
	kill := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-s" || a == "-n" || a == "--signal":
			if i+1 < len(args) && isKill(args[i+1]) {
				kill = true
			}
			i++
		case strings.HasPrefix(a, "--signal="):
			kill = kill || isKill(strings.TrimPrefix(a, "--signal="))
		case strings.HasPrefix(a, "-s") && len(a) > 2:
			kill = kill || isKill(a[2:])
		case strings.HasPrefix(a, "-") && len(a) > 1:
			kill = kill || isKill(a[1:])
		default:
			pids = append(pids, a)
		}
	}
	forms := []string{"kill " + strings.Join(args, " ")}
	if kill {
		forms = append(forms, "kill -9 "+strings.Join(pids, " "))
	}
	return forms
}

// Redirection targets the rules name as files to protect.
var (
	authorizedKeys = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(^|/)\.ssh/authorized_keys$`) })
	secretTarget   = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(secretFiles + `$`) })
	etcTarget      = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^/etc/(?:passwd|shadow|sudoers)$`) })
)

// redirectRule says which rule a redirection of target (as written, or
// expanded) falls under: writing ~/.ssh/authorized_keys (43) from any
// program, or feeding a credential file to one (39, 40).
func (d *Denylist) redirectRule(target string, write bool) (Rule, bool) {
	target = path.Clean(target)
	var num int
	switch {
	case write && authorizedKeys().MatchString(target):
		num = 43
	case secretTarget().MatchString(target):
		num = 40
	case etcTarget().MatchString(target):
		num = 39
	default:
		return Rule{}, false
	}
	return d.rules[num-1], true
}

// CheckRedirect is the run-time check of a file the interpreter is about
// to open for a redirection (its open handler): target is the expanded
// path, write whether it opens for writing.
func CheckRedirect(target string, write bool) (blocked bool, reason string) {
	r, ok := builtin().redirectRule(target, write)
	return ok, r.Reason
}

// matchParsed applies the normalised forms of every simple command and
// every redirection of command, as written, to the rules. Words the
// shell would expand are kept as written.
func (d *Denylist) matchParsed(command string, tempOnly func(string) bool) (Rule, bool) {
	f, err := parse(command)
	if err != nil {
		return Rule{}, false
	}
	source := func(w *syntax.Word) string {
		if v, ok := wordValue(w); ok {
			return v
		}
		start, end := int(w.Pos().Offset()), int(w.End().Offset())
		if start < 0 || end > len(command) || start > end {
			return ""
		}
		return command[start:end]
	}
	exempt := func(string) bool { return tempOnly(command) }
	var hit Rule
	found := false
	syntax.Walk(f, func(n syntax.Node) bool {
		if found {
			return false
		}
		switch n := n.(type) {
		case *syntax.CallExpr:
			var words []string
			for _, w := range n.Args {
				words = append(words, source(w))
			}
			for _, form := range argvForms(words) {
				if r, ok := d.match(form, exempt); ok {
					hit, found = r, true
					return false
				}
			}
		case *syntax.Redirect:
			if n.Word == nil {
				return true
			}
			write := n.Op != syntax.RdrIn && n.Op != syntax.DplIn
			target := strings.Replace(source(n.Word), "$HOME/", "~/", 1)
			if r, ok := d.redirectRule(target, write); ok {
				hit, found = r, true
				return false
			}
		}
		return true
	})
	return hit, found
}

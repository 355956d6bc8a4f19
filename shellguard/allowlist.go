package shellguard

import (
	"errors"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"
	"sync"

	"mvdan.cc/sh/v3/syntax"
)

// runsOther are programs and builtins that run another command, or code,
// given in their arguments or input: an allowlist entry for them would
// approve whatever they run, so the compound rule never approves them.
var runsOther = map[string]bool{
	"eval": true, "exec": true, "source": true, ".": true, "command": true, "builtin": true,
	"xargs": true, "parallel": true, "timeout": true, "watch": true, "stdbuf": true,
	"setsid": true, "chroot": true, "flock": true, "ionice": true, "taskset": true,
	"unbuffer": true, "nsenter": true, "unshare": true, "strace": true, "ltrace": true,
	"script": true, "su": true, "doas": true, "runuser": true, "sudo": true, "env": true,
	"alias": true, "trap": true, "enable": true, "hash": true, "shopt": true, "set": true,
}

// findActions are find primaries that run programs or write files.
var findActions = map[string]bool{
	"-exec": true, "-execdir": true, "-ok": true, "-okdir": true, "-delete": true,
	"-fprint": true, "-fprint0": true, "-fprintf": true, "-fls": true,
}

// riskyAssign matches inline environment assignments (`X=y cmd`) that can
// make an allowlisted program run something else (pagers, editors, hooks,
// preloads, shell start-up files).
var riskyAssign = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)PAGER|EDITOR|VISUAL|BROWSER|SHELL|^ENV$|BASH_ENV|^BASH_FUNC|^IFS$|^PS4$|PROMPT_COMMAND|^PATH$|^LD_|^DYLD_|^GIT_|SSH|_OPTIONS$|OPTS$|COMMAND|_CMD$|EXEC|HOOK|^PYTHON|^PERL|^RUBY|^NODE_OPTIONS$|^npm_config_`)
})

// ErrParse wraps a command that does not parse as a shell program.
var ErrParse = errors.New("command does not parse")

// parser options: bash, since that is what the interpreter runs.
func parse(command string) (*syntax.File, error) {
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(command), "")
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrParse, err)
	}
	return f, nil
}

// simpleCommand is one call found in the parse.
type simpleCommand struct {
	words []string // literal values, "" where dynamic
	dyn   []bool   // word i contains an expansion
	call  *syntax.CallExpr
}

// analysis is the result of one walk: every simple command, and the first
// construct that rules out allowlist approval.
type analysis struct {
	calls  []simpleCommand
	reject string
}

func (a *analysis) refuse(format string, args ...any) {
	if a.reject == "" {
		a.reject = fmt.Sprintf(format, args...)
	}
}

// analyze walks the whole parse with one visitor. Node types it does not
// know rule out approval (fail closed), so a new syntax feature cannot slip
// through.
func analyze(f *syntax.File) *analysis {
	a := &analysis{}
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n := n.(type) {
		case nil:
		case *syntax.File, *syntax.Comment, *syntax.Word, *syntax.Lit, *syntax.SglQuoted,
			*syntax.DblQuoted, *syntax.Subshell, *syntax.Block, *syntax.IfClause,
			*syntax.WhileClause, *syntax.WordIter, *syntax.CaseClause, *syntax.CaseItem,
			*syntax.TimeClause, *syntax.Assign, *syntax.Redirect:
		case *syntax.Stmt:
			if n.Background || n.Disown {
				a.refuse("a background job (&)")
			}
			if n.Coprocess {
				a.refuse("a coprocess")
			}
			for _, r := range n.Redirs {
				if why := redirectProblem(r); why != "" {
					a.refuse("%s", why)
				}
			}
		case *syntax.BinaryCmd:
			switch n.Op {
			case syntax.AndStmt, syntax.OrStmt, syntax.Pipe, syntax.PipeAll:
			default:
				a.refuse("operator %s", n.Op)
			}
		case *syntax.ForClause:
			if _, ok := n.Loop.(*syntax.WordIter); !ok {
				a.refuse("an arithmetic for loop")
			}
		case *syntax.ParamExp:
			if why := paramProblem(n); why != "" {
				a.refuse("%s", why)
			}
		case *syntax.CallExpr:
			a.call(n)
		case *syntax.CmdSubst:
			a.refuse("a command substitution")
		case *syntax.ProcSubst:
			a.refuse("a process substitution")
		case *syntax.FuncDecl:
			a.refuse("a function definition")
		case *syntax.CoprocClause:
			a.refuse("a coprocess")
		default:
			a.refuse("the construct %T", n)
		}
		return true
	})
	return a
}

func (a *analysis) call(c *syntax.CallExpr) {
	if len(c.Args) == 0 {
		a.refuse("a bare variable assignment")
		return
	}
	for _, as := range c.Assigns {
		if as.Name == nil || as.Index != nil || as.Array != nil || as.Naked {
			a.refuse("a complex assignment")
			continue
		}
		if riskyAssign().MatchString(as.Name.Value) {
			a.refuse("an inline assignment to %s", as.Name.Value)
		}
	}
	sc := simpleCommand{call: c}
	for _, w := range c.Args {
		v, ok := literal(w)
		sc.words = append(sc.words, v)
		sc.dyn = append(sc.dyn, !ok)
	}
	a.calls = append(a.calls, sc)
}

// literal returns the value of a word without expansions, quotes removed.
func literal(w *syntax.Word) (string, bool) {
	var b strings.Builder
	for _, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			b.WriteString(unescapeLit(p.Value))
		case *syntax.SglQuoted:
			if p.Dollar {
				return "", false
			}
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			if p.Dollar {
				return "", false
			}
			for _, q := range p.Parts {
				l, ok := q.(*syntax.Lit)
				if !ok {
					return "", false
				}
				b.WriteString(l.Value)
			}
		default:
			return "", false
		}
	}
	return b.String(), true
}

func unescapeLit(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// key computes the allowlist key of sc, or says why it has none that can
// be trusted: an expansion where the binary is read, or a command name the
// shell would still expand (globs, braces, tildes, escapes). When the word
// after the binary is dynamic, key is the binary alone and anyArg is set:
// only an entry naming the binary alone covers every value it may take.
func (sc simpleCommand) key() (key string, anyArg bool, why string) {
	i := 0
	for ; i < len(sc.words); i++ {
		if sc.dyn[i] {
			return "", false, "a dynamic command name"
		}
		if !isAssignWord(sc.words[i]) && !keyWrappers[sc.words[i]] {
			break
		}
	}
	if i == len(sc.words) {
		return CommandKey(sc.words), false, ""
	}
	for _, p := range sc.call.Args[i].Parts {
		if lit, ok := p.(*syntax.Lit); ok && strings.ContainsAny(lit.Value, "*?[]{}~\\") {
			return "", false, "a command name the shell would expand"
		}
	}
	if sc.words[i] == "" {
		return "", false, "an empty command name"
	}
	for j := i + 1; j < len(sc.words); j++ {
		if sc.dyn[j] {
			return sc.words[i], true, ""
		}
		if !strings.HasPrefix(sc.words[j], "-") {
			break
		}
	}
	return CommandKey(sc.words), false, ""
}

// wrapperProblem says why sc runs something its key does not describe.
func (sc simpleCommand) wrapperProblem() string {
	for i, w := range sc.words {
		if sc.dyn[i] {
			continue
		}
		base := path.Base(w)
		if i == 0 || isAssignWord(sc.words[i-1]) || keyWrappers[sc.words[i-1]] {
			switch {
			case strings.HasPrefix(w, "-"):
				return "wrapper options (" + w + ")"
			case shells[base]:
				return "a shell invocation (" + w + ")"
			case runsOther[base]:
				return "a command that runs other commands (" + w + ")"
			}
		}
		if !isAssignWord(w) && !keyWrappers[w] {
			if base == "find" {
				for _, arg := range sc.words[i+1:] {
					if findActions[arg] {
						return "find " + arg
					}
				}
			}
			return ""
		}
	}
	return ""
}

// redirectProblem allows only fd duplications (`2>&1`, `>&2`, `<&0`, `>&-`),
// /dev/null, and here-documents; anything else names a file.
func redirectProblem(r *syntax.Redirect) string {
	switch r.Op {
	case syntax.Hdoc, syntax.DashHdoc, syntax.WordHdoc:
		return ""
	}
	target, ok := "", false
	if r.Word != nil {
		target, ok = literal(r.Word)
	}
	switch r.Op {
	case syntax.DplIn, syntax.DplOut:
		if ok && (target == "-" || isDigits(target)) {
			return ""
		}
	case syntax.RdrOut, syntax.AppOut, syntax.RdrIn, syntax.RdrInOut, syntax.RdrClob,
		syntax.RdrAll, syntax.AppAll:
		if ok && target == "/dev/null" {
			return ""
		}
	}
	return "a redirection to a file (" + r.Op.String() + ")"
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// paramProblem allows $x, ${x}, ${#x}, ${x:-word}-style defaults and
// ${x/a/b}; it refuses the forms that evaluate arithmetic or expand a
// value as code (indirection, subscripts, slices, ${x@P}).
func paramProblem(p *syntax.ParamExp) string {
	switch {
	case p.Param == nil, p.NestedParam != nil, p.Flags != nil, len(p.Modifiers) > 0:
		return "an unusual parameter expansion"
	case p.Excl, p.Names != 0:
		return "an indirect parameter expansion"
	case p.Index != nil, p.Slice != nil:
		return "an indexed parameter expansion"
	case p.Width, p.IsSet:
		return "an unusual parameter expansion"
	case p.Exp != nil && p.Exp.Op == syntax.OtherParamOps:
		return "a ${x@…} transformation"
	}
	return ""
}

// AllowlistApproves reports whether the command allowlist entries approve
// command under the compound rule of tools-and-approval.md §6: the command
// must parse, every simple command in it must have an allowlisted key, and
// it must hold no command or process substitution, no redirection to a
// file, no dynamic command name, no command-running wrapper (eval, sh -c,
// xargs, find -exec …), no background job, coprocess or function
// definition. A command the denylist blocks is never approved either.
func AllowlistApproves(command string, entries []string) bool {
	ok, _ := Explain(command, entries)
	return ok
}

// Explain is AllowlistApproves with the reason it said no, for logs and
// tests. The reason is empty when approved.
func Explain(command string, entries []string) (approved bool, why string) {
	if strings.TrimSpace(command) == "" {
		return false, "empty command"
	}
	if blocked, reason := CheckDenylist(command); blocked {
		return false, "denylist: " + reason
	}
	f, err := parse(command)
	if err != nil {
		return false, err.Error()
	}
	a := analyze(f)
	if a.reject != "" {
		return false, a.reject
	}
	if len(a.calls) == 0 {
		return false, "no command"
	}
	for _, sc := range a.calls {
		key, anyArg, why := sc.key()
		if why != "" {
			return false, why
		}
		if why := sc.wrapperProblem(); why != "" {
			return false, why
		}
		if anyArg && !slices.Contains(trimmed(entries), key) {
			return false, fmt.Sprintf("an expansion after %q, and no entry covers all of %q", key, key)
		}
		if !anyMatch(key, entries) {
			return false, "key " + fmt.Sprintf("%q", key) + " is not allowlisted"
		}
	}
	return true, ""
}

func trimmed(entries []string) []string {
	out := make([]string, len(entries))
	for i, e := range entries {
		out[i] = strings.TrimSpace(e)
	}
	return out
}

func anyMatch(key string, entries []string) bool {
	for _, e := range entries {
		if MatchKey(key, e) {
			return true
		}
	}
	return false
}

// Keys lists the allowlist keys of the simple commands in command, in
// source order without repeats, for "always approve this command". Calls
// whose key cannot be known statically are left out.
func Keys(command string) ([]string, error) {
	f, err := parse(command)
	if err != nil {
		return nil, err
	}
	a := analyze(f)
	var keys []string
	seen := map[string]bool{}
	for _, sc := range a.calls {
		k, _, why := sc.key()
		if why != "" || k == "" || seen[k] {
			continue
		}
		seen[k] = true
		keys = append(keys, k)
	}
	return keys, nil
}

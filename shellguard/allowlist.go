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

// findActions are find primaries that run programs or write files.
var findActions = map[string]bool{
	"-exec": true, "-execdir": true, "-ok": true, "-okdir": true, "-delete": true,
	"-fprint": true, "-fprint0": true, "-fprintf": true, "-fls": true,
}

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
	words []string // values where known exactly, "" where dynamic
	inert []bool   // word i is known exactly: expansion leaves it as is
	call  *syntax.CallExpr
}

// dynamic reports whether any word's value depends on expansion.
func (sc simpleCommand) dynamic() bool { return slices.Contains(sc.inert, false) }

// key is the call's allowlist key, or why it has none an entry may cover.
func (sc simpleCommand) key() (key, why string) { return keyOf(sc.words, sc.inert) }

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
			wi, ok := n.Loop.(*syntax.WordIter)
			switch {
			case !ok:
				a.refuse("an arithmetic for loop")
			case n.Select:
				a.refuse("a select loop")
			case !localName().MatchString(wi.Name.Value):
				a.refuse("the loop variable %s: a loop may only set a short lowercase name, which no program or the shell itself reads (PATH, HOME, IFS, http_proxy …)", wi.Name.Value)
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
	sc := simpleCommand{call: c}
	for _, w := range c.Args {
		v, ok := wordValue(w)
		sc.words = append(sc.words, v)
		sc.inert = append(sc.inert, ok)
	}
	a.calls = append(a.calls, sc)
}

// literal returns the value of a word without expansions, quotes removed.
func literal(w *syntax.Word) (string, bool) { return wordValue(w) }

// actionProblem says why a call whose key is fine still runs or writes
// something the key does not say: find's -exec and -delete family.
func (sc simpleCommand) actionProblem() string {
	if len(sc.words) == 0 || path.Base(sc.words[0]) != "find" {
		return ""
	}
	for i, w := range sc.words[1:] {
		if !sc.inert[i+1] {
			return "find with a computed argument (it could be -exec or -delete)"
		}
		if findActions[w] {
			return "find " + w + " runs a program or writes files"
		}
	}
	return ""
}

// redirectProblem allows only fd duplications (`2>&1`, `>&2`, `<&0`, `>&-`),
// /dev/null, and here-documents; anything else names a file.
func redirectProblem(r *syntax.Redirect) string {
	if r.N != nil && !isDigits(r.N.Value) {
		// bash's {name}>&1 opens a new descriptor and assigns its number
		// to name ({PATH}>&1 sets PATH=10); mvdan refuses it today, which
		// a newer version need not.
		return fmt.Sprintf("a redirection that assigns a variable (%s)", r.N.Value)
	}
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
	case p.Exp != nil && (p.Exp.Op == syntax.AssignUnset || p.Exp.Op == syntax.AssignUnsetOrNull):
		return "a ${x:=…} expansion, which assigns a variable"
	}
	return ""
}

// localName is a variable name no environment convention uses: lowercase
// letters and digits, no underscore (proxy variables have one).
var localName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z][a-z0-9]{0,15}$`) })

// AllowlistApproves reports whether the command allowlist entries approve
// command under the compound rule of tools-and-approval.md §6: the command
// must parse, every simple command in it must have a key an entry covers
// (the program that really runs and its real subcommand, see CommandKey),
// only harmless inline assignments, and it must hold no command or
// process substitution, no redirection to a file, no dynamic command name,
// no command-running wrapper (eval, sh -c, env, npx-less wrappers, xargs,
// find -exec …), no background job, coprocess or function definition. A
// command the denylist blocks is never approved either.
func AllowlistApproves(command string, entries []string) bool {
	ok, _ := Explain(command, entries)
	return ok
}

// Explain is AllowlistApproves with the reason it said no, worded to
// follow "not auto-approved: ". The reason is empty when approved.
func Explain(command string, entries []string) (approved bool, why string) {
	a, why := analyzeCommand(command)
	if why != "" {
		return false, why
	}
	for _, sc := range a.calls {
		if why := sc.allowlistProblem(entries); why != "" {
			return false, why
		}
	}
	return true, ""
}

// analyzeCommand parses and walks command, or says why no automatic step
// may approve it.
func analyzeCommand(command string) (*analysis, string) {
	if strings.TrimSpace(command) == "" {
		return nil, "empty command"
	}
	if strings.IndexByte(command, 0) >= 0 {
		return nil, "a NUL byte in the command"
	}
	if blocked, reason := CheckDenylist(command); blocked {
		return nil, "denylist: " + reason
	}
	f, err := parse(command)
	if err != nil {
		return nil, err.Error()
	}
	a := analyze(f)
	if a.reject != "" {
		return nil, a.reject
	}
	if len(a.calls) == 0 {
		return nil, "no command"
	}
	return a, ""
}

// allowlistProblem applies the per-call allowlist rules.
func (sc simpleCommand) allowlistProblem(entries []string) string {
	if sc.call != nil {
		for _, as := range sc.call.Assigns {
			if why := assignProblem(as); why != "" {
				return why
			}
		}
	}
	key, why := sc.key()
	if why != "" {
		return why
	}
	if why := sc.actionProblem(); why != "" {
		return why
	}
	entry, ok := firstMatch(key, entries)
	if !ok {
		return fmt.Sprintf("no allowlist entry covers %q (the key of `%s`)", key, strings.Join(sc.shown(), " "))
	}
	if why := sc.inspectProblem(); why != "" {
		return fmt.Sprintf("the allowlist entry %q admits only the inspect-only forms of %s, and `%s` is not one: %s",
			entry, key, strings.Join(sc.shown(), " "), why)
	}
	return ""
}

// inspectCheck is the read-only set's grammar for a call (words with the
// program first), when the set knows its program and, for git, its
// subcommand; ok is false for every other call.
func inspectCheck(words []string) (check progCheck, ok bool) {
	if len(words) == 0 {
		return nil, false
	}
	prog := path.Base(words[0])
	check, ok = readOnlyPrograms()[prog]
	if !ok || prog != "git" {
		return check, ok
	}
	rest := words[1:]
	for len(rest) > 0 && gitSafeGlobals[rest[0]] {
		rest = rest[1:]
	}
	if len(rest) == 0 {
		return nil, false
	}
	_, known := gitSubcommands()[rest[0]]
	return check, known
}

// inspectProblem applies the read-only set's grammar to a call an
// allowlist entry covers, when the set knows its program (and, for git,
// its subcommand): such an entry names an inspecting command, so only
// the forms that keep it inspect-only pass (`git diff` covers `git diff
// --stat`, not `git diff --output=f` or `--ext-diff`; `sort` covers
// `sort -r f`, not `sort -o f`). A call with a word the shell expands is
// judged by the run-time check, on the words expansion produced
// (CheckExec applies this same rule to every expanded argv). A program
// the set does not know (npm, make, a repository's script) is admitted
// with every argument: the user chose it, and allowlisting a program
// that can write lets it write.
func (sc simpleCommand) inspectProblem() string {
	check, ok := inspectCheck(sc.words)
	if !ok || sc.dynamic() {
		return ""
	}
	return check(sc.words[1:])
}

// uncheckedKeys are the keys of command's calls that an allowlist entry
// admits with every argument: their program is not one the read-only
// set knows (see inspectProblem).
func uncheckedKeys(command string) []string {
	f, err := parse(command)
	if err != nil {
		return nil
	}
	var keys []string
	for _, sc := range analyze(f).calls {
		if _, ok := inspectCheck(sc.words); ok {
			continue
		}
		if k, why := sc.key(); why == "" && k != "" && !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	return keys
}

// AllowlistNote is what the approval of command by the allowlist says
// beyond "approved": the keys it admitted whole, because the read-only
// set does not know their program, so any arguments passed. "" when
// every call was held to an inspect-only grammar.
func AllowlistNote(command string) string {
	keys := uncheckedKeys(command)
	if len(keys) == 0 {
		return ""
	}
	return fmt.Sprintf("approved by the command allowlist; %s: not a program the read-only check knows, so its entry admits every argument (allowlisting a program that can write lets it write)",
		"`"+strings.Join(keys, "`, `")+"`")
}

// shown is the call's words for messages, with … for dynamic ones.
func (sc simpleCommand) shown() []string {
	out := make([]string, len(sc.words))
	for i, w := range sc.words {
		if !sc.inert[i] {
			w = "…"
		}
		out[i] = w
	}
	return out
}

// firstMatch is the first entry that covers key.
func firstMatch(key string, entries []string) (string, bool) {
	for _, e := range entries {
		if MatchKey(key, e) {
			return strings.TrimSpace(e), true
		}
	}
	return "", false
}

// Keys lists the allowlist keys of the simple commands in command, in
// source order without repeats, for "always approve this command". Calls
// that no entry could ever cover (wrappers, computed names, git global
// options) are left out.
func Keys(command string) ([]string, error) {
	f, err := parse(command)
	if err != nil {
		return nil, err
	}
	a := analyze(f)
	var keys []string
	seen := map[string]bool{}
	for _, sc := range a.calls {
		k, why := sc.key()
		if why != "" || k == "" || seen[k] {
			continue
		}
		seen[k] = true
		keys = append(keys, k)
	}
	return keys, nil
}

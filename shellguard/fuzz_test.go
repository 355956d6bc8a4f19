package shellguard

import (
	"strings"
	"testing"

	"mvdan.cc/sh/v3/syntax"
)

// independentCalls walks the parse on its own (not through analyze) and
// returns, per call, its literal words and whether word i had anything but
// plain or quoted text. It also reports constructs that must never be
// approved.
func independentCalls(f *syntax.File) (calls [][]string, dyn [][]bool, forbidden bool) {
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.CmdSubst, *syntax.ProcSubst, *syntax.FuncDecl, *syntax.CoprocClause:
			forbidden = true
		case *syntax.Stmt:
			if n.Background || n.Coprocess || n.Disown {
				forbidden = true
			}
		case *syntax.CallExpr:
			var ws []string
			var ds []bool
			for _, w := range n.Args {
				var b strings.Builder
				d := false
				for _, p := range w.Parts {
					switch p := p.(type) {
					case *syntax.Lit:
						b.WriteString(testUnescape(p.Value))
					case *syntax.SglQuoted:
						d = d || p.Dollar
						b.WriteString(p.Value)
					case *syntax.DblQuoted:
						d = d || p.Dollar
						for _, q := range p.Parts {
							if l, ok := q.(*syntax.Lit); ok {
								b.WriteString(l.Value)
							} else {
								d = true
							}
						}
					default:
						d = true
					}
				}
				ws = append(ws, b.String())
				ds = append(ds, d)
			}
			calls = append(calls, ws)
			dyn = append(dyn, ds)
		}
		return true
	})
	return calls, dyn, forbidden
}

func testUnescape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// FuzzAllowlistApproves asserts that an approved command holds no simple
// command whose key is not allowlisted, no substitution, function or
// background job, and that the denylist does not block it.
func FuzzAllowlistApproves(f *testing.F) {
	for _, s := range []string{
		"git status && git diff", "git status && rm -rf /", "ls | grep x", "x=rm; $x -rf /",
		"echo $(rm x)", "ls &", "f() { rm x; }; ls", "find . -exec rm {} +", "'git' status",
		"if ls; then echo; fi", "ls >/dev/null 2>&1", "ls > f", "git statusfoo",
	} {
		f.Add(s, "git status")
	}
	f.Fuzz(func(t *testing.T, command, entry string) {
		entries := []string{"git status", "ls", "echo", "grep", entry}
		if !AllowlistApproves(command, entries) {
			return
		}
		if b, reason := CheckDenylist(command); b {
			t.Fatalf("approved a blocked command (%s)", reason)
		}
		file, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(command), "")
		if err != nil {
			t.Fatalf("approved an unparsable command: %v", err)
		}
		calls, dyn, forbidden := independentCalls(file)
		if forbidden {
			t.Fatal("approved a command with a substitution, function, coprocess or background job")
		}
		if len(calls) == 0 {
			t.Fatal("approved a command without any simple command")
		}
		for i, words := range calls {
			if len(words) == 0 {
				t.Fatal("approved a bare assignment")
			}
			// The program is the first word; wrappers are never skipped.
			if dyn[i][0] {
				t.Fatalf("approved a dynamic command name in %q", words)
			}
			bin := words[0]
			sub := 1
			for bin == "git" && sub < len(words) && !dyn[i][sub] && (words[sub] == "--no-pager" || words[sub] == "-P" ||
				words[sub] == "--no-optional-locks" || strings.HasSuffix(words[sub], "-pathspecs") ||
				words[sub] == "--no-replace-objects" || words[sub] == "--no-advice" || words[sub] == "--no-lazy-fetch") {
				sub++ // git's harmless global options
			}
			covered := false
			for _, e := range entries {
				e = strings.TrimSpace(e)
				if e == bin {
					covered = true // the binary alone covers any arguments
				}
				if sub < len(words) && !dyn[i][sub] && !strings.HasPrefix(words[sub], "-") && e == bin+" "+words[sub] {
					covered = true
				}
			}
			if !covered {
				t.Fatalf("approved %q whose key is not allowlisted (entries %q)", words, entries)
			}
		}
	})
}

// FuzzCommandKey checks that keys never panic and that a trimmed key
// matches itself as an entry.
func FuzzCommandKey(f *testing.F) {
	for _, s := range []string{"git diff --stat", "NODE_ENV=test sudo npm test", "npx jest --watch", "", "  ", `a "b c" 'd'`, "X=1", "-x y"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, words := range [][]string{strings.Fields(s), SplitWords(s)} {
			key := CommandKey(words)
			// A quoted blank binary (`" " x`) yields an untrimmed key that
			// no trimmed entry can match; that fails closed, which is fine.
			if key != "" && key == strings.TrimSpace(key) && !MatchKey(key, key) {
				t.Fatalf("key %q does not match itself", key)
			}
			if MatchKey(key+"x", key) && key != "" && !strings.HasSuffix(key, " ") {
				t.Fatalf("raw prefix match for %q", key)
			}
		}
		// Nothing a model sends may crash or hang the checks.
		_, _ = Keys(s)
		_, _ = StaticClassify(s)
		_ = RefusalReason(s, []string{"git status", "ls"})
		_ = MutatingReason(s)
		_, _ = CheckArgv(strings.Fields(s), "/tmp/x")
		for _, by := range []Approver{ByAllowlist, ByStatic, ByClassifier} {
			_ = Judge(s, by, []string{"ls", "git"}, "read-only").CheckExec(strings.Fields(s))
		}
	})
}

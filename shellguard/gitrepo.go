package shellguard

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"

	"github.com/jazz-run/jazz/gitinert"
)

// maxGitDirs bounds how many directories one command's git calls are
// checked in.
const maxGitDirs = 16

// gitPlan is where a command's git calls may run: the programs named
// git, their subcommands as written, and every directory that may be
// current when one runs. why says why the directories cannot be known.
type gitPlan struct {
	progs, subs, dirs []string
	why               string
}

// planGit finds the git calls of command and the directories they may
// run in, starting from dir (the pinned working directory). A literal
// `cd`/`pushd` may move any later call, and subshells, branches and
// pipes make the order unclear, so each target is resolved from every
// directory reached so far: the set holds every directory the
// interpreter can be in. A cd the text does not fix (a computed target,
// `cd -`, a relative cd a loop repeats) leaves the directories unknown.
// repeatedIn says whether a node of f lies inside a loop or a function
// body, which may run it any number of times: a relative cd there moves
// by an unknown amount.
func repeatedIn(f *syntax.File) func(syntax.Node) bool {
	var repeats [][2]syntax.Pos
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n.(type) {
		case *syntax.ForClause, *syntax.WhileClause, *syntax.FuncDecl:
			repeats = append(repeats, [2]syntax.Pos{n.Pos(), n.End()})
		}
		return true
	})
	return func(n syntax.Node) bool {
		return slices.ContainsFunc(repeats, func(r [2]syntax.Pos) bool {
			return r[0].Offset() <= n.Pos().Offset() && n.End().Offset() <= r[1].Offset()
		})
	}
}

func planGit(command, dir, home string) gitPlan {
	f, err := parse(command)
	if err != nil {
		return gitPlan{} // it never runs
	}
	repeated := repeatedIn(f)
	p := gitPlan{dirs: []string{filepath.Clean(dir)}}
	git := false
	reach := func(target string) {
		for _, d := range slices.Clone(p.dirs) {
			next := target
			if !filepath.IsAbs(next) {
				next = filepath.Join(d, next)
			}
			if next = filepath.Clean(next); !slices.Contains(p.dirs, next) {
				if len(p.dirs) == maxGitDirs {
					p.why = fmt.Sprintf("it can reach more than %d directories", maxGitDirs)
					return
				}
				p.dirs = append(p.dirs, next)
			}
		}
	}
	for _, sc := range analyze(f).calls {
		if len(sc.words) == 0 || !sc.inert[0] {
			continue
		}
		switch path.Base(sc.words[0]) {
		case "git":
			git = true
			if !slices.Contains(p.progs, sc.words[0]) {
				p.progs = append(p.progs, sc.words[0])
			}
			rest := sc.words[1:]
			for len(rest) > 0 && gitSafeGlobals[rest[0]] {
				rest = rest[1:]
			}
			if len(rest) > 0 && sc.inert[len(sc.words)-len(rest)] && !slices.Contains(p.subs, rest[0]) {
				p.subs = append(p.subs, rest[0])
			}
		case "cd", "pushd":
			args, inert := sc.words[1:], sc.inert[1:]
			if sc.words[0] == "pushd" && len(args) == 1 && inert[0] && (strings.HasPrefix(args[0], "+") || strings.HasPrefix(args[0], "-")) {
				continue // rotates the stack of directories already reached
			}
			target := home
			switch {
			case len(args) > 1:
				continue // a usage error: the directory stays
			case len(args) == 1 && !inert[0]:
				p.why = fmt.Sprintf("`%s` to a directory the shell computes", sc.words[0])
			case len(args) == 1 && args[0] == "-":
				p.why = fmt.Sprintf("`%s -`", sc.words[0])
			case len(args) == 1:
				target = args[0]
			case home == "":
				continue
			}
			if p.why == "" && !filepath.IsAbs(target) && repeated(sc.call) {
				p.why = fmt.Sprintf("`%s %s` in a loop", sc.words[0], target)
			}
			if p.why == "" {
				reach(target)
			}
		}
	}
	if !git {
		return gitPlan{}
	}
	return p
}

// RepoProblem says why no automatic step may approve command to run from
// dir with env (the child's environment an automatic approval gives it,
// AutoEnv): a git call in it would run in a repository whose own
// configuration makes git run programs (a file-system monitor, pager,
// diff driver, filter, hook path, credential helper, an alias it
// calls …), as git itself would find that repository from the
// directories the call may run in. "" when the command runs no git or
// every such repository is inert. It runs git to list the configuration
// (bounded in time); it writes nothing.
func RepoProblem(ctx context.Context, command, dir string, env []string) string {
	home, _ := LookupEnv(env, "HOME")
	p := planGit(command, dir, home)
	if len(p.progs) == 0 {
		return ""
	}
	if p.why != "" {
		return "a git command may run in a directory the check cannot know: " + p.why
	}
	for _, prog := range p.progs {
		bin := lookProgram(prog, dir, env)
		if bin == "" {
			continue // nothing by that name runs
		}
		for _, d := range p.dirs {
			if st, err := os.Stat(d); err != nil || !st.IsDir() {
				continue // a cd there fails; the call runs where it was
			}
			if why := repoRisk(ctx, bin, d, env, p.subs); why != "" {
				return why
			}
		}
	}
	return ""
}

// CheckRepo is the run-time side of RepoProblem, for one program about to
// be executed: when j is an automatic approval and argv runs git (the
// program at bin, in dir, with env), the repository git finds there must
// run nothing of its own. Approvals by a person, the high-risk policy or
// the tool allowlist accept the repository's programs.
func (j Judgement) CheckRepo(ctx context.Context, bin, dir string, env, argv []string) error {
	if !j.Automatic() || len(argv) == 0 {
		return nil
	}
	// git is known by what its executable is: a link or copy of it
	// under another name reads the same repository configuration.
	if pathVar, _ := LookupEnv(env, "PATH"); path.Base(bin) != "git" && !isGitExecutable(bin, dir, pathVar) {
		return nil
	}
	var subs []string
	rest := argv[1:]
	for len(rest) > 0 && gitSafeGlobals[rest[0]] {
		rest = rest[1:]
	}
	if len(rest) > 0 {
		subs = rest[:1]
	}
	if why := repoRisk(ctx, bin, dir, env, subs); why != "" {
		return fmt.Errorf("%w: `%s` in %s: %s", ErrNotJudged, strings.Join(argv, " "), dir, why)
	}
	return nil
}

// Automatic reports whether j is an approval no person gave for this
// command: the allowlist, the static read-only pass, a classifier (and,
// failing closed, anything unknown).
func (j Judgement) Automatic() bool {
	switch j.By {
	case ByHuman, ByPolicy, ByTool:
		return false
	}
	return true
}

// repoRisk lists the configuration git (bin) applies in dir and says
// which of the repository's own settings would make it run programs.
func repoRisk(ctx context.Context, bin, dir string, env, subs []string) string {
	entries, err := gitinert.List(ctx, bin, dir, env)
	if err != nil {
		return err.Error()
	}
	risks := append(gitinert.Risks(entries), gitinert.AliasRisks(entries, subs)...)
	if len(risks) == 0 {
		// A status or diff may look into a submodule, where git works
		// with the submodule's own configuration.
		sub, err := gitinert.SubmoduleRisks(ctx, bin, dir, env)
		if err != nil {
			return err.Error()
		}
		risks = sub
	}
	if len(risks) == 0 {
		return ""
	}
	const show = 6
	more := ""
	if len(risks) > show {
		more = fmt.Sprintf(" and %d more", len(risks)-show)
		risks = risks[:show]
	}
	return "the repository's config runs programs: " + strings.Join(risks, ", ") + more
}

// lookProgram is the file prog names from dir with env's PATH, as the
// interpreter finds it, or "".
func lookProgram(prog, dir string, env []string) string {
	executable := func(p string) bool {
		st, err := os.Stat(p)
		return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
	}
	if strings.Contains(prog, "/") {
		if !filepath.IsAbs(prog) {
			prog = filepath.Join(dir, prog)
		}
		if executable(prog) {
			return prog
		}
		return ""
	}
	pathVar, _ := LookupEnv(env, "PATH")
	for _, d := range filepath.SplitList(pathVar) {
		if d == "" || !filepath.IsAbs(d) {
			continue // HardenEnv drops them from the child's PATH
		}
		if p := filepath.Join(d, prog); executable(p) {
			return p
		}
	}
	return ""
}

// ChildEnv is the environment a command approved through j runs with:
// HardenEnv, and for an automatic approval AutoEnv.
func (j Judgement) ChildEnv(env []string) []string {
	if j.Automatic() {
		return AutoEnv(env)
	}
	return HardenEnv(env)
}

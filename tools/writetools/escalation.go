//go:build unix

package writetools

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/jazz-run/jazz/tools"
)

// A change that decides what later calls or runs may do is one only a
// person approves (messages.ApprovalRequest.HumanOnly): no tool
// allowlist, remembered "always" or policy, high-risk included, since an
// automatic approval of one write would otherwise approve everything
// that write then grants. The class is what configures jazz, its agents
// or the programs around them rather than being a project's content:
//
//   - jazz's project configuration and the agents' own (.jazz, .agents,
//     every AGENTS.md, which joins every later agent's system prompt);
//     JAZZ_HOME itself no file tool touches at all (guard.go);
//   - a git repository's own directory (a component named .git, or any
//     directory git would take for one: HEAD, objects and refs in it),
//     whose config and hooks run programs on the next git command;
//   - the user's own configuration in the home directory (every entry
//     of it whose name starts with a dot: shell startup files, ~/.ssh,
//     ~/.gitconfig, ~/.config), which shells and programs run later read.
//
// Names are compared case-insensitively (a case-insensitive file system
// takes .GIT for .git). Every path an operation changes is judged, as
// written and as resolved through links, and so is every entry of a tree
// it moves or copies into place (a tree holding .git or AGENTS.md plants
// them where it lands). Removing counts: removing a narrowing project
// config or an AGENTS.md rule widens what comes next.
//
// A project's other files (Makefiles, package.json scripts, .envrc,
// editor tasks) are its content, and writing them is what file tools are
// for: they are approved like any write.

// escalatingName says why a single path component names what configures
// later calls or runs, or "" when it does not.
func escalatingName(name string) string {
	switch {
	case strings.EqualFold(name, ".git"):
		return "a git repository's own directory (.git), whose config and hooks run programs on the next git command"
	case strings.EqualFold(name, ".jazz"):
		return "jazz's project configuration (.jazz)"
	case strings.EqualFold(name, ".agents"):
		return "the agents' configuration (.agents: MCP servers, AGENTS.md)"
	case strings.EqualFold(name, "AGENTS.md"):
		return "an AGENTS.md, whose instructions join every later agent's system prompt"
	}
	return ""
}

// humanOnly says why only a person may approve changing paths (absolute,
// clean), or "" when any approval may.
func humanOnly(env *tools.Env, paths ...string) string {
	homes := homeDirs(env)
	for _, p := range paths {
		if p == "" {
			continue
		}
		for _, c := range splitPath(p) {
			if why := escalatingName(c); why != "" {
				return "it changes " + disp(p) + ", in " + why
			}
		}
		for _, h := range homes {
			rest, ok := strings.CutPrefix(p, strings.TrimSuffix(h, "/")+"/")
			if ok && strings.HasPrefix(rest, ".") {
				first, _, _ := strings.Cut(rest, "/")
				return "it changes " + disp(p) + ", in your home directory's own configuration (" + disp(first) + "), which shells and programs run later read"
			}
		}
		if d := gitDirAbove(p); d != "" {
			return "it changes " + disp(p) + ", inside " + disp(d) + ", which git takes for a repository's own directory (its config and hooks run programs)"
		}
	}
	return ""
}

// homeDirs is $HOME as written and with its links resolved.
func homeDirs(env *tools.Env) []string {
	if env.Home == "" {
		return nil
	}
	h := filepath.Clean(env.Home)
	out := []string{h}
	if real, err := filepath.EvalSymlinks(h); err == nil && real != h {
		out = append(out, real)
	}
	return out
}

// gitDirAbove is the nearest directory of p or above it that git would
// take for a repository's own directory (a bare repository, a
// --separate-git-dir, a renamed .git): HEAD, objects and refs in it.
func gitDirAbove(p string) string {
	for d := p; ; d = filepath.Dir(d) {
		if isGitDir(d) {
			return d
		}
		if d == "/" || d == "." {
			return ""
		}
	}
}

func isGitDir(d string) bool {
	head, err := os.Lstat(filepath.Join(d, "HEAD"))
	if err != nil || !head.Mode().IsRegular() && head.Mode()&os.ModeSymlink == 0 {
		return false
	}
	for _, sub := range []string{"objects", "refs"} {
		if fi, err := os.Stat(filepath.Join(d, sub)); err != nil || !fi.IsDir() {
			return false
		}
	}
	return true
}

// targetPaths are the paths of t a change touches: as written and as
// resolved, and for a tree the first entry whose name escalates.
func targetPaths(t *target) []string {
	out := []string{t.lexical, t.real}
	if t.tree.escalates != "" {
		out = append(out, filepath.Join(t.real, t.tree.escalates))
	}
	return out
}

// humanOnlyNote is what the approval message adds for such a change.
func humanOnlyNote(why string) string {
	if why == "" {
		return ""
	}
	return "\n\nOnly a person may approve this (no allowlist, remembered answer or policy does): " + why + "."
}

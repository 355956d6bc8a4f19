// Package escalation owns which paths configure later calls or runs
// rather than being a project's content: changing one is approved by a
// person only (messages.ApprovalRequest.HumanOnly), since an automatic
// approval of that change would approve everything it then grants. The
// file tools (writetools), execute_command (shellguard, shellrun) and the
// git tools that write the work tree (gittools: checkout, merge, pull,
// rm) judge paths by this one notion.
//
// The class:
//
//   - jazz's project configuration and the agents' own (.jazz, .agents,
//     every AGENTS.md, which joins every later agent's system prompt);
//   - a git repository's own directory (a component named .git, or any
//     directory git may take for one: one holding a HEAD, or whose HEAD
//     is the path being changed), whose config and hooks run programs on
//     the next git command;
//   - the user's own configuration in the home directory (every entry
//     of it whose name starts with a dot: shell startup files, ~/.ssh,
//     ~/.gitconfig, ~/.config), which shells and programs run later read,
//     known by the directory's path or identity; and a directory holding
//     the home directory, when it is removed or moved (HoldsHome; for
//     execute_command, the home directory itself too: TakesHome).
//
// Names are compared case-insensitively (a case-insensitive file system
// takes .GIT for .git) and without format characters (HFS+ takes
// ".g\u200cit" for .git). A project's other files (Makefiles, package.json
// scripts, .envrc, editor tasks) are its content.
//
// Besides paths, it says what the user made read-only (WriteProtected):
// the file tools and git tools replace or remove such a file only with a
// person's approval, since neither a rename over it nor an unlink needs
// its write permission.
package escalation

import (
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Name says why a single path component names what configures later
// calls or runs, or "" when it does not.
func Name(name string) string {
	name = bare(name)
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

// bare is name without its format characters (Unicode Cf: zero-width
// joiners, direction marks and overrides, the byte order mark). HFS+
// ignores them when it compares names, so there ".g\u200cit" opens .git;
// a name spelled with them is judged as the name it is without them.
func bare(name string) string {
	if !strings.ContainsFunc(name, isFormat) {
		return name
	}
	return strings.Map(func(r rune) rune {
		if isFormat(r) {
			return -1
		}
		return r
	}, name)
}

func isFormat(r rune) bool { return r >= 0x80 && unicode.Is(unicode.Cf, r) }

// Why says why only a person may approve changing p (absolute, clean),
// phrased "it changes p, in …", or "" when any approval may. homes are
// the home directory as written and resolved (Homes).
func Why(p string, homes []string) string {
	if p == "" {
		return ""
	}
	for _, c := range strings.Split(p, "/") {
		if why := Name(c); why != "" {
			return "it changes " + Show(p) + ", in " + why
		}
	}
	if first := homeDotEntry(p, homes); first != "" {
		return "it changes " + Show(p) + ", in your home directory's own configuration (" + Show(first) + "), which shells and programs run later read"
	}
	if d := gitDirAbove(p); d != "" {
		return "it changes " + Show(p) + ", inside " + Show(d) + ", which git takes for a repository's own directory (its config and hooks run programs)"
	}
	return ""
}

// homeDotEntry is the dot entry of the home directory that p is or lies
// in ("" if none): p under one of homes as written, or under a directory
// that is the home directory by identity (device and inode). A bind mount
// of the home directory, or of a directory above it, shares no path with
// it and no link leads there; on a case-insensitive file system
// /USERS/bob is /Users/bob. Only the identity tells them.
func homeDotEntry(p string, homes []string) string {
	dotEntry := func(rest string) string {
		if !strings.HasPrefix(bare(rest), ".") {
			return ""
		}
		first, _, _ := strings.Cut(rest, "/")
		return first
	}
	var ids []os.FileInfo
	for _, h := range homes {
		if rest, ok := strings.CutPrefix(p, strings.TrimSuffix(h, "/")+"/"); ok && dotEntry(rest) != "" {
			return dotEntry(rest)
		}
		if fi, err := os.Stat(h); err == nil {
			ids = append(ids, fi)
		}
	}
	if len(ids) == 0 || !filepath.IsAbs(p) {
		return ""
	}
	for d := filepath.Dir(p); ; d = filepath.Dir(d) {
		if fi, err := os.Stat(d); err == nil {
			for _, id := range ids {
				if os.SameFile(fi, id) {
					rest, _ := filepath.Rel(d, p)
					return dotEntry(rest)
				}
			}
		}
		if d == "/" {
			return ""
		}
	}
}

// HoldsHome says why only a person may approve removing, moving away or
// replacing the directory p (absolute, clean) because it holds the home
// directory, or "" when it does not: the home's dot entries go with it,
// as if each were removed, and each of those is a person's (Why), whether
// or not any name inside the tree gives it away. p holds a home when it
// is one of the home's ancestors, by path or by identity (a bind mount of
// one). p itself is not followed if it is a symbolic link: removing or
// moving a link leaves what it points to alone.
func HoldsHome(p string, homes []string) string {
	fi, err := os.Lstat(p)
	if err != nil || !fi.IsDir() {
		return ""
	}
	for _, h := range homes {
		for a := filepath.Dir(h); ; a = filepath.Dir(a) {
			if a == p {
				return holdsHome(p, h)
			}
			if ai, err := os.Stat(a); err == nil && os.SameFile(ai, fi) {
				return holdsHome(p, h)
			}
			if a == "/" || a == "." {
				break
			}
		}
	}
	return ""
}

// TakesHome is HoldsHome for a program that may remove, move or replace
// whatever directory it names (execute_command's: find -delete, rsync
// --delete, mv, tar -C), where nothing refuses the home directory itself
// as the file tools do: it also says why when p is the home directory,
// by path or identity (a bind mount of it, a link to it written with a
// trailing slash, which the kernel follows). As in HoldsHome, a link
// that p names itself is not followed.
func TakesHome(p string, homes []string) string {
	fi, err := os.Lstat(p)
	if err != nil || !fi.IsDir() {
		return ""
	}
	for _, h := range homes {
		if filepath.Clean(p) == h {
			return isHome(p)
		}
		if hi, err := os.Stat(h); err == nil && os.SameFile(hi, fi) {
			return isHome(p)
		}
	}
	return HoldsHome(p, homes)
}

func isHome(p string) string {
	return "it changes " + Show(p) + ", your home directory itself, and with it the home's own configuration, which shells and programs run later read"
}

func holdsHome(p, h string) string {
	return "it changes " + Show(p) + ", which holds your home directory (" + Show(h) + ") and with it the home's own configuration, which shells and programs run later read"
}

// Note is what an approval message adds for a change only a person may
// approve (why from Why), or "" for none.
func Note(why string) string {
	if why == "" {
		return ""
	}
	return "\n\nOnly a person may approve this (no allowlist, remembered answer or policy does): " + why + "."
}

// Homes is home (the process's $HOME) as written and with its links
// resolved, then the account's own home directory from the password
// database, likewise: a login gives the shells and programs the user
// runs later that one as HOME, whatever this process's HOME says (unset
// under a service, another directory under `sudo -E` or a wrapper), so
// its dot entries are the user's configuration too. The first entry is
// $HOME when it is set, for reading ~.
func Homes(home string) []string {
	var out []string
	add := func(h string) {
		if h = filepath.Clean(h); !slices.Contains(out, h) {
			out = append(out, h)
		}
		if real, err := filepath.EvalSymlinks(h); err == nil && !slices.Contains(out, real) {
			out = append(out, real)
		}
	}
	if home != "" {
		add(home)
	}
	if u, err := user.Current(); err == nil && filepath.IsAbs(u.HomeDir) {
		add(u.HomeDir)
	}
	return out
}

// Show is a path as a message shows it: as is, unless it holds a
// character that is not printable (a newline, a control or
// bidirectional-override character, invalid UTF-8); then quoted with
// escapes, so no name can break a message's lines or forge one of them.
func Show(p string) string {
	if !utf8.ValidString(p) || strings.ContainsFunc(p, func(r rune) bool { return r != ' ' && !unicode.IsPrint(r) }) {
		return strconv.Quote(p)
	}
	return p
}

// gitDirAbove is the nearest directory of p or above it that git may
// take for a repository's own directory (a bare repository, a
// --separate-git-dir, a renamed .git, a linked worktree's): one that holds
// a HEAD, or whose HEAD p is (isGitDir).
func gitDirAbove(p string) string {
	for d := p; ; d = filepath.Dir(d) {
		if isGitDir(d, p) {
			return d
		}
		if d == "/" || d == "." {
			return ""
		}
	}
}

// isGitDir reports whether d holds a HEAD (of any kind), or p, which is
// being changed, is d's HEAD (in any case: a case-insensitive file
// system gives git a "head" for its HEAD).
//
// git (setup.c, is_git_directory) wants more of a repository's
// directory: objects and refs, or a commondir naming where they are. But
// HEAD is the one piece it always wants, and the rest is not judged,
// because judging it cannot hold: the pieces can be made by calls that
// each saw the others missing (a batch whose calls are all proposed
// before any of them runs), or around an objects/ that is a dangling link
// until its target is made, a step that names no piece at all. So making
// or changing a HEAD is a person's to approve, and so is every change in
// a directory that has one, complete repository or not. A directory
// holding a HEAD that is not git's is rare; being wrong there only means
// a person is asked.
func isGitDir(d, p string) bool {
	if filepath.Dir(p) == d && strings.EqualFold(bare(filepath.Base(p)), "HEAD") {
		return true
	}
	_, err := os.Lstat(filepath.Join(d, "HEAD"))
	return err == nil
}

// Physical is p (absolute, as written: not cleaned) the way the kernel
// walks it: each symbolic link followed where it stands, so a `..` after
// a link climbs out of the link's target, not out of the link's parent.
// A missing component counts as the plain directory `mkdir -p` would
// create there.
// A loop of links (more than 40) yields "".
func Physical(p string) string {
	real, ok := physical("/", p, 0)
	if !ok {
		return ""
	}
	return real
}

func physical(base, p string, depth int) (string, bool) {
	if filepath.IsAbs(p) {
		base = "/"
	}
	cur := base
	comps := strings.Split(p, "/")
	for _, c := range comps {
		switch c {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, c)
		fi, err := os.Lstat(next)
		if err != nil {
			// Missing: taken for the plain directory `mkdir -p` would
			// make, so a `..` past it comes back here and what follows
			// still resolves through links.
			cur = next
			continue
		}
		if fi.Mode()&os.ModeSymlink == 0 {
			cur = next
			continue
		}
		if depth >= 40 {
			return "", false
		}
		target, err := os.Readlink(next)
		if err != nil {
			return "", false
		}
		resolved, ok := physical(cur, target, depth+1)
		if !ok {
			return "", false
		}
		cur = resolved
	}
	return cur, true
}

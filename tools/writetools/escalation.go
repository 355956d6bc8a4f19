//go:build unix

package writetools

import (
	"fmt"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/jazz-run/jazz/escalation"
	"github.com/jazz-run/jazz/tools"
)

// A change that decides what later calls or runs may do is one only a
// person approves (messages.ApprovalRequest.HumanOnly): no tool
// allowlist, remembered "always" or policy, high-risk included, since an
// automatic approval of one write would otherwise approve everything
// that write then grants. Package escalation says which paths those are
// (jazz's and the agents' configuration, every AGENTS.md, a git
// repository's own directory, the home directory's dotfiles);
// execute_command judges by the same notion. JAZZ_HOME itself no file
// tool touches at all (guard.go).
//
// Every path an operation changes is judged, as written and as resolved
// through links, and so is every entry of a tree it moves or copies into
// place (a tree holding .git or AGENTS.md plants them where it lands).
// Removing counts: removing a narrowing project config or an AGENTS.md
// rule widens what comes next.
//
// A project's other files (Makefiles, package.json scripts, .envrc,
// editor tasks) are its content, and writing them is what file tools are
// for: they are approved like any write.

// escalatingName says why a single path component names what configures
// later calls or runs, or "" when it does not.
func escalatingName(name string) string { return escalation.Name(name) }

// humanOnly says why only a person may approve changing paths (absolute,
// clean), or "" when any approval may.
func humanOnly(env *tools.Env, paths ...string) string {
	homes := escalation.Homes(env.Home)
	for _, p := range paths {
		if why := escalation.Why(p, homes); why != "" {
			return why
		}
		// A directory removed, moved away or replaced takes the home
		// directory it holds with it. (Other tools' paths never name an
		// existing directory above the home: a write or a new directory
		// there fails.)
		if why := escalation.HoldsHome(p, homes); why != "" {
			return why
		}
	}
	return ""
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

// personOnly is who may approve a change to t, the entry the change
// creates, replaces or removes: a person alone when humanOnly says so of
// its paths, or when the user protected it (readOnly).
func personOnly(env *tools.Env, t *target) string {
	if why := humanOnly(env, targetPaths(t)...); why != "" {
		return why
	}
	return readOnly(t, true)
}

// readOnly says why changing t needs a person because the user made it
// read-only, or "". A rename over a file and an unlink need no write
// permission on the file itself, only on its directory, so without this
// an automatic approval replaced or removed a file its owner had made
// read-only (chmod a-w) as readily as any other. Judged: the directory
// the change is made in, and, when leaf, the entry replaced or removed
// and every entry of a tree that goes with it (rm -r, or a replaced
// destination). Moving a read-only file keeps it whole, so the source of
// a move is judged by its directory only.
func readOnly(t *target, leaf bool) string {
	var pst unix.Stat_t
	if t.parent >= 0 && unix.Fstat(t.parent, &pst) == nil && writeProtected(&pst) {
		return fmt.Sprintf("it changes the entries of %s, a read-only directory (mode %04o)", escalation.Show(t.parentPath), uint32(pst.Mode)&0o7777)
	}
	if !leaf || t.st == nil {
		return ""
	}
	if (t.kind == "file" || t.kind == "dir") && writeProtected(t.st) {
		return fmt.Sprintf("it changes %s, which is read-only (mode %04o)", escalation.Show(t.real), uint32(t.st.Mode)&0o7777)
	}
	if t.tree.protected != "" {
		return "it changes " + escalation.Show(filepath.Join(t.real, t.tree.protected)) + ", which is read-only"
	}
	return ""
}

// writeProtected is escalation.WriteProtected of st.
func writeProtected(st *unix.Stat_t) bool {
	return escalation.WriteProtected(uint32(st.Mode)&0o7777, st.Uid, st.Gid)
}

// humanOnlyNote is what the approval message adds for such a change.
func humanOnlyNote(why string) string { return escalation.Note(why) }

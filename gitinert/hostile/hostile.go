// Package hostile builds, for tests, git repositories whose own
// configuration makes git run a canary program: one repository per way a
// repository can do that (a configuration knob, an included or worktree
// configuration, a .git file pointing elsewhere, a nested repository, a
// hook, an alias, a submodule's own configuration, a promisor remote
// git fetches from). The canary leaves a file when it runs, so a test can
// prove it never did.
package hostile

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Repo is one hostile repository.
type Repo struct {
	// Name names the way it runs the canary ("fsmonitor", "include" …).
	Name string
	// Dir is the working directory to give the command (a subdirectory
	// for discovery upward, the outer repository for a nested one).
	Dir string
	// Command is a command that makes git reach the setting there.
	Command string
	// Knob is the setting a refusal names ("core.fsmonitor"); empty when
	// the repository's configuration holds none (a hook in .git/hooks,
	// kept off by jazz's overrides rather than refused).
	Knob string
	// Fires says whether Command runs the canary when git honours the
	// repository, without a terminal (a pager, an ssh command or a
	// credential helper wait for a terminal or the network).
	Fires bool
	fired string
}

// Fired reports whether the canary ran.
func (r Repo) Fired() bool {
	_, err := os.Stat(r.fired)
	return err == nil
}

// Repos builds every hostile repository under root, each with a tracked
// file changed in the work tree (so diffs, filters and index refreshes
// have something to do).
func Repos(t testing.TB, root string) []Repo {
	t.Helper()
	var out []Repo
	add := func(r Repo, build func(dir, canary string)) {
		t.Helper()
		top := filepath.Join(root, r.Name)
		r.fired = filepath.Join(root, "fired-"+r.Name)
		canary := filepath.Join(root, "canary-"+r.Name)
		write(t, canary, "#!/bin/sh\n: > '"+r.fired+"'\nexec cat \"$@\" 2>/dev/null\n", 0o755)
		if r.Dir == "" {
			r.Dir = top
		} else {
			r.Dir = filepath.Join(top, r.Dir)
		}
		initRepo(t, top)
		build(top, canary)
		out = append(out, r)
	}
	cfg := func(dir string, kv ...string) {
		t.Helper()
		for i := 0; i+1 < len(kv); i += 2 {
			git(t, dir, "config", kv[i], kv[i+1])
		}
	}
	add(Repo{Name: "fsmonitor", Command: "git status", Knob: "core.fsmonitor", Fires: true},
		func(d, c string) { cfg(d, "core.fsmonitor", c) })
	add(Repo{Name: "pager", Command: "git log -1", Knob: "core.pager"},
		func(d, c string) { cfg(d, "core.pager", c) })
	add(Repo{Name: "external", Command: "git diff", Knob: "diff.external", Fires: true},
		func(d, c string) { cfg(d, "diff.external", c) })
	add(Repo{Name: "textconv", Command: "git diff", Knob: "diff.cv.textconv", Fires: true},
		func(d, c string) { cfg(d, "diff.cv.textconv", c); attributes(t, d, "*.txt diff=cv") })
	add(Repo{Name: "driver", Command: "git diff", Knob: "diff.dc.command", Fires: true},
		func(d, c string) { cfg(d, "diff.dc.command", c); attributes(t, d, "*.txt diff=dc") })
	add(Repo{Name: "filter", Command: "git diff", Knob: "filter.fl.clean", Fires: true},
		func(d, c string) { cfg(d, "filter.fl.clean", c); attributes(t, d, "*.txt filter=fl") })
	add(Repo{Name: "sshcommand", Command: "git status", Knob: "core.sshcommand"},
		func(d, c string) { cfg(d, "core.sshCommand", c) })
	add(Repo{Name: "credential", Command: "git status", Knob: "credential.helper"},
		func(d, c string) { cfg(d, "credential.helper", c) })
	add(Repo{Name: "hookspath", Command: "git status", Knob: "core.hookspath", Fires: true},
		func(d, c string) {
			hooks := filepath.Join(d, ".githooks")
			write(t, filepath.Join(hooks, "post-index-change"), "#!/bin/sh\nexec '"+c+"'\n", 0o755)
			cfg(d, "core.hooksPath", hooks)
		})
	add(Repo{Name: "hook", Command: "git status", Fires: true},
		func(d, c string) {
			write(t, filepath.Join(d, ".git", "hooks", "post-index-change"), "#!/bin/sh\nexec '"+c+"'\n", 0o755)
		})
	add(Repo{Name: "include", Command: "git status", Knob: "include.path", Fires: true},
		func(d, c string) {
			inc := filepath.Join(filepath.Dir(d), "include-extra.cfg")
			write(t, inc, "[core]\n\tfsmonitor = "+c+"\n", 0o644)
			cfg(d, "include.path", inc)
		})
	add(Repo{Name: "worktree", Command: "git status", Knob: "core.fsmonitor", Fires: true},
		func(d, c string) {
			cfg(d, "extensions.worktreeConfig", "true")
			git(t, d, "config", "--worktree", "core.fsmonitor", c)
		})
	add(Repo{Name: "gitfile", Command: "git status", Knob: "core.fsmonitor", Fires: true},
		func(d, c string) {
			// The repository lives elsewhere; the work tree's .git is a
			// file naming it.
			sep := filepath.Join(filepath.Dir(d), "gitfile-separate.git")
			if err := os.Rename(filepath.Join(d, ".git"), sep); err != nil {
				t.Fatal(err)
			}
			write(t, filepath.Join(d, ".git"), "gitdir: "+sep+"\n", 0o644)
			git(t, sep, "config", "core.fsmonitor", c)
		})
	add(Repo{Name: "upward", Dir: "a/b", Command: "git status", Knob: "core.fsmonitor", Fires: true},
		func(d, c string) {
			write(t, filepath.Join(d, "a", "b", ".keep"), "", 0o644)
			cfg(d, "core.fsmonitor", c)
		})
	add(Repo{Name: "nested", Command: "cd inner && git status", Knob: "core.fsmonitor", Fires: true},
		func(d, c string) {
			inner := filepath.Join(d, "inner")
			initRepo(t, inner)
			git(t, inner, "config", "core.fsmonitor", c)
		})
	add(Repo{Name: "alias", Command: "git st", Knob: "alias.st", Fires: true},
		func(d, c string) { cfg(d, "alias.st", "!"+c) })
	add(Repo{Name: "promisor", Command: "git diff", Knob: "extensions.partialclone"},
		func(d, c string) {
			// A partial clone missing the committed a.txt: the diff fetches
			// it, lazily, from the promisor remote's URL (a network request
			// of the repository's choosing; port 9 refuses it quickly).
			blob := gitOut(t, d, "rev-parse", "HEAD:a.txt")
			if err := os.Remove(filepath.Join(d, ".git", "objects", blob[:2], blob[2:])); err != nil {
				t.Fatal(err)
			}
			cfg(d, "remote.origin.url", "http://127.0.0.1:9/x.git", "extensions.partialClone", "origin")
		})
	add(Repo{Name: "submodule", Command: "git status", Knob: "submodule sub: filter.fl.clean", Fires: true},
		func(d, c string) {
			// A submodule whose own configuration (.git/modules/sub/config)
			// defines a clean filter its attributes select, a file changed
			// in its work tree at its committed size (so git must filter it
			// to compare), and .gitmodules asking git to look into it
			// (ignore = none outranks jazz's diff.ignoreSubmodules).
			src := filepath.Join(filepath.Dir(d), "submodule-src")
			write(t, filepath.Join(src, "s.txt"), "two\n", 0o644)
			git(t, src, "init", "-q")
			git(t, src, "add", "s.txt")
			git(t, src, "-c", "user.name=t", "-c", "user.email=t@x", "commit", "-qm", "one")
			git(t, d, "-c", "protocol.file.allow=always", "submodule", "add", "-q", src, "sub")
			git(t, d, "config", "-f", ".gitmodules", "submodule.sub.ignore", "none")
			git(t, d, "add", ".gitmodules")
			git(t, d, "-c", "user.name=t", "-c", "user.email=t@x", "commit", "-qm", "sub")
			sub := filepath.Join(d, "sub")
			git(t, sub, "config", "filter.fl.clean", c)
			write(t, filepath.Join(sub, ".gitattributes"), "* filter=fl\n", 0o644)
			write(t, filepath.Join(sub, "s.txt"), "owt\n", 0o644)
			old := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)
			if err := os.Chtimes(filepath.Join(sub, "s.txt"), old, old); err != nil {
				t.Fatal(err)
			}
		})
	return out
}

// initRepo makes dir a repository with one commit of a.txt, then changes
// a.txt in the work tree.
func initRepo(t testing.TB, dir string) {
	t.Helper()
	write(t, filepath.Join(dir, "a.txt"), "one\n", 0o644)
	write(t, filepath.Join(dir, "b.txt"), "same\n", 0o644)
	git(t, dir, "init", "-q")
	git(t, dir, "add", "a.txt", "b.txt")
	git(t, dir, "-c", "user.name=t", "-c", "user.email=t@x", "commit", "-qm", "one")
	write(t, filepath.Join(dir, "a.txt"), "one\ntwo\n", 0o644)
	// b.txt keeps its content but not the times the index recorded, so the
	// next git status must refresh and write the index (running the
	// post-index-change hook) whatever the clock did meanwhile: without it,
	// whether git rewrites the index depends on racy-timestamp timing.
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(filepath.Join(dir, "b.txt"), old, old); err != nil {
		t.Fatal(err)
	}
}

func attributes(t testing.TB, dir, line string) {
	t.Helper()
	write(t, filepath.Join(dir, ".gitattributes"), line+"\n", 0o644)
}

func write(t testing.TB, path, body string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), mode); err != nil {
		t.Fatal(err)
	}
}

func git(t testing.TB, dir string, args ...string) {
	t.Helper()
	gitOut(t, dir, args...)
}

// gitOut runs git for the set-up and returns its output, trimmed.
func gitOut(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v %s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

